import { Hono } from 'hono';
import { msspBrandingContract as contract } from '../../../contracts/mssp.ts';
import type { BrandingService } from '../../domains/branding/branding-service.ts';
import { implement } from '../contract.ts';
import { tenantOfRequest } from '../guards.ts';

/** A tenant's branding, read by MSSP staff and replaced by its admins (docs/web.md "Branding"). */
export function brandingRoutes(branding: BrandingService): Hono {
  const app = new Hono();

  implement(
    app,
    contract.getBranding,
  )(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    return { status: 200, body: await branding.readForMssp(tenantId) };
  });

  implement(
    app,
    contract.putBranding,
  )(async (c, { params, body }) => {
    const identity = c.get('identity');
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const actor = { userId: identity.user_id, actingAs: identity.current_tenant };
    return { status: 200, body: await branding.update(tenantId, body, actor) };
  });

  return app;
}
