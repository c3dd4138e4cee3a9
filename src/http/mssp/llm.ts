import { Hono } from 'hono';
import { msspLlmContract as contract } from '../../../contracts/mssp.ts';
import { MSSP_ROLES } from '../../auth/identity.ts';
import type { LlmService } from '../../domains/llm/llm-service.ts';
import { InvalidPolicyError, type PolicyView } from '../../domains/llm/llm-types.ts';
import { TenantNotFoundError } from '../../domains/tenants/tenant-types.ts';
import { implement } from '../contract.ts';
import { requireRole, tenantOfRequest } from '../guards.ts';
import { ProblemError } from '../problem.ts';

const DEFAULT_USAGE_DAYS = 7;

const viewJson = (v: PolicyView) => ({ ...v, updated_at: v.updated_at?.toISOString() ?? null });

/** The LLM domain's refusals as the problems of contracts/mssp.ts. */
async function problems<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof TenantNotFoundError)
      throw new ProblemError(404, 'tenant_not_found', 'No such tenant');
    if (error instanceof InvalidPolicyError)
      throw new ProblemError(422, 'invalid_policy', error.message, { errors: error.problems });
    throw error;
  }
}

const anyMssp = requireRole(...MSSP_ROLES);
const policyAdmins = requireRole('platform_admin', 'mssp_admin');

/** A tenant's triage policy and LLM usage, set and read by MSSP staff (issue 13). */
export function llmRoutes(llm: LlmService): Hono {
  const app = new Hono();

  implement(app, contract.getTriagePolicy, [anyMssp])(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    return { status: 200, body: viewJson(await problems(llm.getPolicy(tenantId))) };
  });

  implement(app, contract.putTriagePolicy, [policyAdmins])(async (c, { params, body }) => {
    const identity = c.get('identity');
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const actor = { userId: identity.user_id, actingAs: identity.current_tenant };
    return { status: 200, body: viewJson(await problems(llm.putPolicy(tenantId, body, actor))) };
  });

  implement(app, contract.llmUsage, [anyMssp])(async (c, { params, query }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const usage = await problems(llm.usage(tenantId, query.days ?? DEFAULT_USAGE_DAYS));
    return { status: 200, body: usage };
  });

  return app;
}
