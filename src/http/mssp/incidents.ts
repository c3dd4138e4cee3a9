import { type Context, Hono } from 'hono';
import { msspIncidentContract as contract } from '../../../contracts/mssp.ts';
import type { DeskService } from '../../domains/investigations/desk-service.ts';
import type { WorkAction } from '../../domains/investigations/desk-types.ts';
import { implement } from '../contract.ts';
import { DEFAULT_LIMIT, decodeCursor, nextCursor } from '../cursor.ts';
import { tenantOfRequest } from '../guards.ts';

/**
 * The analyst's desk on one incident (docs/investigations.md): the detail, its alerts and the
 * work routes. Each route declares `own_tenant`: an impersonation token reaches its own
 * tenant's incidents only, and every read and write runs under that tenant's context (RLS).
 */
export function incidentRoutes(desk: DeskService): Hono {
  const app = new Hono();

  implement(
    app,
    contract.incident,
  )(async (c, { params }) => ({
    status: 200,
    body: await desk.detail(tenantOfRequest(c, params.tenant_id), params.id),
  }));

  implement(
    app,
    contract.incidentAlerts,
  )(async (c, { params, query }) => {
    const page = {
      after: decodeCursor('incident-alerts', query.cursor),
      limit: query.limit ?? DEFAULT_LIMIT,
    };
    const result = await desk.alerts(tenantOfRequest(c, params.tenant_id), params.id, page);
    return {
      status: 200,
      body: { items: result.rows, next_cursor: nextCursor('incident-alerts', result.next) },
    };
  });

  implement(
    app,
    contract.incidentAlert,
  )(async (c, { params }) => ({
    status: 200,
    body: await desk.alert(tenantOfRequest(c, params.tenant_id), params.id, params.alert_id),
  }));

  const work = async (
    c: Context,
    params: { tenant_id: string; id: string },
    version: number,
    action: WorkAction,
  ) => {
    const identity = c.get('identity');
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const worker = { userId: identity.user_id, actingAs: identity.current_tenant };
    return {
      status: 200 as const,
      body: await desk.work(tenantId, params.id, worker, version, action),
    };
  };

  implement(
    app,
    contract.assignIncident,
  )((c, { params, body }) =>
    work(c, params, body.version, { kind: 'assign', assigneeId: body.assignee_id }),
  );
  implement(
    app,
    contract.addIncidentNote,
  )((c, { params, body }) =>
    work(c, params, body.version, { kind: 'note', body: body.body, visibility: body.visibility }),
  );
  implement(
    app,
    contract.closeIncident,
  )((c, { params, body }) =>
    work(c, params, body.version, { kind: 'close', verdict: body.verdict, reason: body.reason }),
  );
  implement(
    app,
    contract.reopenIncident,
  )((c, { params, body }) =>
    work(c, params, body.version, { kind: 'reopen', reason: body.reason }),
  );
  implement(
    app,
    contract.changeIncidentSeverity,
  )((c, { params, body }) =>
    work(c, params, body.version, {
      kind: 'severity',
      severity: body.severity,
      reason: body.reason,
    }),
  );
  return app;
}
