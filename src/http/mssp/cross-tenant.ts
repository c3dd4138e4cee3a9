import { Hono } from 'hono';
import { msspCrossTenantContract as contract } from '../../../contracts/mssp.ts';
import { MSSP_ROLES } from '../../auth/identity.ts';
import type { CrossTenantTriageService } from '../../domains/triage/cross-tenant-service.ts';
import type { FleetIncident } from '../../domains/triage/triage-types.ts';
import { implement } from '../contract.ts';
import { DEFAULT_LIMIT, decodeCursor, nextCursor } from '../cursor.ts';
import { requireRole } from '../guards.ts';
import { reviewJson } from './triage.ts';

const incidentJson = (r: FleetIncident) => ({
  ...r,
  opened_at: r.opened_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
  last_alert_at: r.last_alert_at?.toISOString() ?? null,
});

/**
 * `GET /api/mssp/incidents` and `GET /api/mssp/reviews`: the analyst's work across tenants.
 * The contract denies impersonation tokens (a token for one tenant never reads past it).
 */
export function crossTenantRoutes(triage: CrossTenantTriageService): Hono {
  const app = new Hono();
  const anyMssp = requireRole(...MSSP_ROLES);

  implement(app, contract.allIncidents, [anyMssp])(async (_c, { query }) => {
    const page = {
      after: decodeCursor('fleet-incidents', query.cursor),
      limit: query.limit ?? DEFAULT_LIMIT,
    };
    const filters = { status: query.status, severity: query.severity, tenantId: query.tenant_id };
    const result = await triage.listIncidents(filters, page);
    return {
      status: 200,
      body: {
        items: result.rows.map(incidentJson),
        next_cursor: nextCursor('fleet-incidents', result.next),
      },
    };
  });

  implement(app, contract.allReviews, [anyMssp])(async () => {
    const reviews = await triage.listOpenReviews();
    return {
      status: 200,
      body: {
        items: reviews.map((r) => ({
          ...reviewJson(r),
          tenant_id: r.tenant_id,
          tenant_slug: r.tenant_slug,
        })),
      },
    };
  });
  return app;
}
