import { Hono } from 'hono';
import { msspCrossTenantContract as contract } from '../../../contracts/mssp.ts';
import type { CrossTenantTriageService } from '../../domains/triage/cross-tenant-service.ts';
import { implement } from '../contract.ts';
import { DEFAULT_LIMIT, decodeCursor, nextCursor } from '../cursor.ts';

/**
 * `GET /api/mssp/incidents` and `GET /api/mssp/reviews`: the analyst's work across tenants.
 * The contract denies impersonation tokens (a token for one tenant never reads past it).
 */
export function crossTenantRoutes(triage: CrossTenantTriageService): Hono {
  const app = new Hono();

  implement(
    app,
    contract.allIncidents,
  )(async (c, { query }) => {
    const page = {
      after: decodeCursor('fleet-incidents', query.cursor),
      limit: query.limit ?? DEFAULT_LIMIT,
    };
    const filters = {
      status: query.status,
      severity: query.severity,
      tenantId: query.tenant_id,
      assigneeId: query.assignee === 'me' ? c.get('identity').user_id : undefined,
      unassigned: query.assignee === 'none',
      openedAfter: query.opened_after,
      openedBefore: query.opened_before,
    };
    const result = await triage.listIncidents(filters, page);
    return {
      status: 200,
      body: {
        items: result.rows,
        next_cursor: nextCursor('fleet-incidents', result.next),
      },
    };
  });

  implement(
    app,
    contract.allReviews,
  )(async (_c, { query }) => {
    const page = {
      after: decodeCursor('fleet-reviews', query.cursor),
      limit: query.limit ?? DEFAULT_LIMIT,
    };
    const result = await triage.listOpenReviews(page);
    return {
      status: 200,
      body: { items: result.rows, next_cursor: nextCursor('fleet-reviews', result.next) },
    };
  });
  return app;
}
