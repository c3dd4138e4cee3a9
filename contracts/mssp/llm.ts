import Type from 'typebox';
import { MSSP_OPERATORS, MSSP_ROLES } from '../roles.ts';
import { Problem } from '../route.ts';
import { Timestamp } from '../timestamp.ts';
import { TriagePolicy } from '../triage-policy.ts';
import { msspRoute, TenantParams } from './route.ts';

/** A tenant's triage policy: in force (every key, defaults filled in) and as stored. */
export const TriagePolicyView = Type.Object(
  {
    policy: TriagePolicy,
    /** As the MSSP put it; null while the tenant runs on the defaults. */
    stored: Type.Union([TriagePolicy, Type.Null()]),
    updated_at: Type.Union([Timestamp, Type.Null()]),
  },
  { additionalProperties: false },
);

/** One UTC day of a tenant's LLM use (docs/llm.md). */
export const LlmUsageDay = Type.Object(
  {
    day: Type.String({ format: 'date' }),
    input_tokens: Type.Integer({ minimum: 0 }),
    output_tokens: Type.Integer({ minimum: 0 }),
    cost_usd: Type.Number({ minimum: 0 }),
    /** Held by calls in flight. */
    reserved_tokens: Type.Integer({ minimum: 0 }),
    calls: Type.Integer({ minimum: 0 }),
    cache_hits: Type.Integer({ minimum: 0 }),
    cache_misses: Type.Integer({ minimum: 0 }),
    refused_over_budget: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

export const msspLlmContract = {
  getTriagePolicy: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/triage-policy',
    summary: "A tenant's triage policy: the rules before any model, redaction and LLM budget",
    roles: MSSP_ROLES,
    params: TenantParams,
    responses: { 200: TriagePolicyView, 404: Problem },
  }),
  putTriagePolicy: msspRoute('own_tenant', {
    method: 'PUT',
    path: '/api/mssp/tenants/{tenant_id}/triage-policy',
    summary:
      "Replace a tenant's triage policy (absent keys take the defaults; audited as settings.update)",
    roles: MSSP_OPERATORS,
    params: TenantParams,
    body: TriagePolicy,
    responses: { 200: TriagePolicyView, 403: Problem, 404: Problem, 422: Problem },
  }),
  llmUsage: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/llm-usage',
    summary: "A tenant's LLM tokens, cost, calls and cache use per UTC day, newest first",
    roles: MSSP_ROLES,
    params: TenantParams,
    query: Type.Object(
      { days: Type.Optional(Type.Integer({ minimum: 1, maximum: 90 })) },
      { additionalProperties: false },
    ),
    responses: {
      200: Type.Object(
        {
          days: Type.Array(LlmUsageDay),
          daily_budget: Type.Object(
            {
              tokens: Type.Union([Type.Integer(), Type.Null()]),
              cost_usd: Type.Union([Type.Number(), Type.Null()]),
            },
            { additionalProperties: false },
          ),
        },
        { additionalProperties: false },
      ),
      404: Problem,
    },
  }),
} as const;
