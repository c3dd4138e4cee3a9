import { Hono } from 'hono';
import { msspTenantContract } from '../../../contracts/mssp.ts';
import { MSSP_ROLES } from '../../auth/identity.ts';
import type { TenantService } from '../../domains/tenants/tenant-service.ts';
import { implement } from '../contract.ts';
import { requireRole } from '../guards.ts';

/** `GET /api/mssp/fleet/summary`: the MSSP dashboard's cross-tenant rollup. */
export function fleetRoutes(tenants: TenantService): Hono {
  const app = new Hono();
  implement(app, msspTenantContract.fleetSummary, [requireRole(...MSSP_ROLES)])(async () => {
    const { byState, tenants: rows } = await tenants.fleetSummary();
    return {
      status: 200,
      body: {
        tenants_by_state: Object.fromEntries(byState.map((r) => [r.state, r.n])),
        tenants: rows.map((r) => ({ ...r, last_event_at: r.last_event_at?.toISOString() ?? null })),
      },
    };
  });
  return app;
}
