import { Hono } from 'hono';
import { msspTenantContract } from '../../../contracts/mssp.ts';
import type { TenantService } from '../../domains/tenants/tenant-service.ts';
import { implement } from '../contract.ts';

/** `POST /api/mssp/impersonate/{tenant_id}`: a short token acting for one tenant (spec §5.2). */
export function impersonationRoutes(tenants: TenantService): Hono {
  const app = new Hono();
  implement(
    app,
    msspTenantContract.impersonate,
  )(async (c, { params, body }) => {
    const tenantId = params.tenant_id;
    const minted = await tenants.impersonate(c.get('identity'), tenantId, {
      reason: body.reason,
      ttlSeconds: body.ttl_seconds,
    });
    c.header('Cache-Control', 'no-store');
    return {
      status: 200,
      body: {
        token: minted.token,
        tenant_id: tenantId,
        expires_at: minted.expiresAt,
      },
    };
  });
  return app;
}
