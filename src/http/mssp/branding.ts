import { Hono } from 'hono';
import { msspBrandingContract as contract } from '../../../contracts/mssp.ts';
import { MSSP_ROLES } from '../../auth/identity.ts';
import type { BrandingService } from '../../domains/branding/branding-service.ts';
import { InvalidBrandingError, UnknownTenantError } from '../../domains/branding/branding-types.ts';
import { implement } from '../contract.ts';
import { requireRole, tenantOfRequest } from '../guards.ts';
import { ProblemError } from '../problem.ts';

/** The branding domain's refusals as the problems of contracts/mssp.ts. */
async function problems<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof UnknownTenantError)
      throw new ProblemError(404, 'tenant_not_found', 'No such tenant');
    if (error instanceof InvalidBrandingError)
      throw new ProblemError(422, 'invalid_branding', error.message, { errors: error.problems });
    throw error;
  }
}

/** A tenant's branding, read by MSSP staff and replaced by its admins (issue 15 "Branding"). */
export function brandingRoutes(branding: BrandingService): Hono {
  const app = new Hono();

  implement(app, contract.getBranding, [requireRole(...MSSP_ROLES)])(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    return { status: 200, body: await problems(branding.readForMssp(tenantId)) };
  });

  implement(app, contract.putBranding, [requireRole('platform_admin', 'mssp_admin')])(
    async (c, { params, body }) => {
      const identity = c.get('identity');
      const tenantId = tenantOfRequest(c, params.tenant_id);
      const actor = { userId: identity.user_id, actingAs: identity.current_tenant };
      return { status: 200, body: await problems(branding.update(tenantId, body, actor)) };
    },
  );

  return app;
}
