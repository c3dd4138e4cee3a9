import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { tenantContract } from '../../../contracts/tenant.ts';
import type { AuditService } from '../../domains/audit/audit-service.ts';
import type { BrandingService } from '../../domains/branding/branding-service.ts';
import type { DeskService } from '../../domains/investigations/desk-service.ts';
import type { InvestigationService } from '../../domains/investigations/investigation-service.ts';
import type { ReportService } from '../../domains/reports/report-service.ts';
import { implement } from '../contract.ts';
import { DEFAULT_LIMIT, decodeCursor, nextCursor } from '../cursor.ts';
import { type StreamDeps, streamTenantEvents } from '../event-stream.ts';
import { ProblemError } from '../problem.ts';

/** One customer's data: no shared cache may keep it. */
const privateResponse: MiddlewareHandler = async (c, next) => {
  c.header('Cache-Control', 'no-store');
  await next();
};

// The mount already requires a tenant-family identity; each route also declares its role
// (contracts/tenant.ts, spec §4.3: customer_viewer), checked by implement().
const guards = [privateResponse];

/**
 * The one source of the tenant for every query in this family: the authenticated identity.
 * No parameter names a tenant, and the closed query schemas refuse one that tries.
 */
function callerTenant(c: Context): string {
  const tenantId = c.get('identity').tenant_id;
  if (tenantId === null) throw new ProblemError(403, 'wrong_family', 'This API is for customers');
  return tenantId;
}

/** `/api/tenant/*` (spec §4.3): customer_viewer, tenant from the identity, read-only. */
export interface TenantRoutesDeps {
  investigations: InvestigationService;
  /** The incident detail and its alerts (docs/investigations.md "What the customer sees"). */
  desk: DeskService;
  audit: AuditService;
  branding: BrandingService;
  reports: ReportService;
  streams: StreamDeps;
}

export function tenantRoutes({
  investigations,
  desk,
  audit,
  branding,
  reports,
  streams,
}: TenantRoutesDeps): Hono {
  const app = new Hono();

  implement(
    app,
    tenantContract.overview,
    guards,
  )(async (c) => {
    const body = await investigations.overview(callerTenant(c));
    return { status: 200, body };
  });

  implement(
    app,
    tenantContract.incidents,
    guards,
  )(async (c, { query }) => {
    const after = decodeCursor('incidents', query.cursor);
    const page = { after, limit: query.limit ?? DEFAULT_LIMIT };
    const result = await investigations.incidents(callerTenant(c), query, page);
    return {
      status: 200,
      body: { items: result.rows, next_cursor: nextCursor('incidents', result.next) },
    };
  });

  implement(
    app,
    tenantContract.incident,
    guards,
  )(async (c, { params }) => ({
    status: 200,
    body: await desk.customerDetail(callerTenant(c), params.id),
  }));

  implement(
    app,
    tenantContract.incidentAlerts,
    guards,
  )(async (c, { params, query }) => {
    const after = decodeCursor('incident-alerts', query.cursor);
    const page = { after, limit: query.limit ?? DEFAULT_LIMIT };
    const result = await desk.alerts(callerTenant(c), params.id, page);
    return {
      status: 200,
      body: { items: result.rows, next_cursor: nextCursor('incident-alerts', result.next) },
    };
  });

  implement(
    app,
    tenantContract.reports,
    guards,
  )(async (c, { query }) => {
    const tenantId = callerTenant(c);
    const report = await investigations.report(tenantId, query.days);
    // The same figures as the mssp_admin's cross-tenant report, over the report's own days.
    const period = query.period ?? 'day';
    const figures = await reports.tenantFigures(tenantId, {
      period,
      from: report.from,
      to: report.to,
    });
    return { status: 200, body: { ...report, period, figures } };
  });

  implement(
    app,
    tenantContract.audit,
    guards,
  )(async (c, { query }) => {
    const after = decodeCursor('audit', query.cursor);
    const page = { after, limit: query.limit ?? DEFAULT_LIMIT };
    const result = await audit.listForTenant(callerTenant(c), query, page);
    return {
      status: 200,
      body: { items: result.rows, next_cursor: nextCursor('audit', result.next) },
    };
  });

  implement(
    app,
    tenantContract.branding,
    guards,
  )(async (c) => ({ status: 200, body: await branding.read(callerTenant(c)) }));

  // The hub reads each tenant's events under withTenant for that tenant (docs/events.md).
  implement(
    app,
    tenantContract.events,
    guards,
  )(async (c) => ({
    raw: await streamTenantEvents(c, streams, callerTenant(c)),
  }));

  return app;
}
