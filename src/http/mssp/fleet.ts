import { Hono } from 'hono';
import { msspTenantContract } from '../../../contracts/mssp.ts';
import type { TenantService } from '../../domains/tenants/tenant-service.ts';
import { implement } from '../contract.ts';

/** `GET /api/mssp/fleet/summary`: the MSSP dashboard's cross-tenant rollup. */
export function fleetRoutes(tenants: TenantService): Hono {
  const app = new Hono();
  implement(
    app,
    msspTenantContract.fleetSummary,
  )(async () => {
    const { byState, tenants: rows } = await tenants.fleetSummary();
    return {
      status: 200,
      body: {
        tenants_by_state: Object.fromEntries(byState.map((r) => [r.state, r.n])),
        tenants: rows,
      },
    };
  });
  return app;
}
