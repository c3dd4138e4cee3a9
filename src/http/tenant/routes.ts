import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { tenantContract } from '../../../contracts/tenant.ts';
import { streamTenantEvents } from '../../domains/events/index.ts';
import type { ApiDeps } from '../app.ts';
import { requireRole } from '../authenticate.ts';
import { implement } from '../contract.ts';
import { decodeCursor } from '../cursor.ts';
import { ProblemError } from '../problem.ts';
import { listAudit } from './audit.ts';
import { readBranding } from './branding.ts';
import { listIncidents } from './incidents.ts';
import { readOverview } from './overview.ts';
import { DEFAULT_DAYS, readReport } from './reports.ts';

/** One customer's data: no shared cache may keep it. */
const privateResponse: MiddlewareHandler = async (c, next) => {
  c.header('Cache-Control', 'no-store');
  await next();
};

// The mount already requires a tenant-family identity; the role is restated next to the
// routes so the rule is visible where it applies (spec §4.3: customer_viewer).
const guards = [requireRole('customer_viewer'), privateResponse];

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
export function tenantRoutes(api: ApiDeps): Hono {
  const app = new Hono();

  implement(
    app,
    tenantContract.overview,
    guards,
  )(async (c) => {
    const now = api.now();
    const body = await api.db.withTenant(callerTenant(c), (tx) => readOverview(tx, now));
    return { status: 200, body };
  });

  implement(
    app,
    tenantContract.incidents,
    guards,
  )(async (c, { query }) => {
    const after = decodeCursor('incidents', query.cursor);
    const body = await api.db.withTenant(callerTenant(c), (tx) => listIncidents(tx, query, after));
    return { status: 200, body };
  });

  implement(
    app,
    tenantContract.reports,
    guards,
  )(async (c, { query }) => {
    const now = api.now();
    const days = query.days ?? DEFAULT_DAYS;
    const body = await api.db.withTenant(callerTenant(c), (tx) => readReport(tx, now, days));
    return { status: 200, body };
  });

  implement(
    app,
    tenantContract.audit,
    guards,
  )(async (c, { query }) => {
    const after = decodeCursor('audit', query.cursor);
    const body = await api.db.withTenant(callerTenant(c), (tx) => listAudit(tx, query, after));
    return { status: 200, body };
  });

  implement(
    app,
    tenantContract.branding,
    guards,
  )(async (c) => {
    const body = await api.db.withTenant(callerTenant(c), readBranding);
    return { status: 200, body };
  });

  // The hub reads each tenant's events under withTenant for that tenant (docs/events.md).
  implement(
    app,
    tenantContract.events,
    guards,
  )(async (c) => ({
    raw: await streamTenantEvents(c, api, callerTenant(c)),
  }));

  return app;
}
