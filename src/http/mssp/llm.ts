import { Hono } from 'hono';
import { msspLlmContract as contract } from '../../../contracts/mssp.ts';
import type { LlmService } from '../../domains/llm/llm-service.ts';
import { implement } from '../contract.ts';
import { tenantOfRequest } from '../guards.ts';

const DEFAULT_USAGE_DAYS = 7;

/** A tenant's triage policy and LLM usage, set and read by MSSP staff (docs/pipeline.md "Triage
 * policy", docs/llm.md). */
export function llmRoutes(llm: LlmService): Hono {
  const app = new Hono();

  implement(
    app,
    contract.getTriagePolicy,
  )(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    return { status: 200, body: await llm.getPolicy(tenantId) };
  });

  implement(
    app,
    contract.putTriagePolicy,
  )(async (c, { params, body }) => {
    const identity = c.get('identity');
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const actor = { userId: identity.user_id, actingAs: identity.current_tenant };
    return { status: 200, body: await llm.putPolicy(tenantId, body, actor) };
  });

  implement(
    app,
    contract.llmUsage,
  )(async (c, { params, query }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const usage = await llm.usage(tenantId, query.days ?? DEFAULT_USAGE_DAYS);
    return { status: 200, body: usage };
  });

  return app;
}
