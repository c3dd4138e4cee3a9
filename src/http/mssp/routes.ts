import { Hono } from 'hono';
import { msspTenantContract } from '../../../contracts/mssp.ts';
import type { AuditService } from '../../domains/audit/audit-service.ts';
import type { IngestService } from '../../domains/ingest/ingest-service.ts';
import type { TenantService } from '../../domains/tenants/tenant-service.ts';
import { implement } from '../contract.ts';
import type { StreamDeps } from '../event-stream.ts';
import { tenantOfRequest } from '../guards.ts';
import { ProblemError } from '../problem.ts';
import { auditExport, queryAudit } from './audit.ts';
import { fleetRoutes } from './fleet.ts';
import { impersonationRoutes } from './impersonation.ts';
import { msspTenantRoutes } from './tenants.ts';

export interface MsspRoutesDeps {
  tenants: TenantService;
  /** The tenant detail shows what its adapter has delivered. */
  ingest: IngestService;
  audit: AuditService;
  streams: StreamDeps;
  /** The first edge port of the install: tenants answer with their ports, not the pair index. */
  edgePortBase: number;
}

/** `/api/mssp/*` tenant operations, cross-tenant views and impersonation (spec §4.2). */
export function msspRoutes({
  tenants,
  ingest,
  audit,
  streams,
  edgePortBase,
}: MsspRoutesDeps): Hono {
  const app = new Hono();
  app.route('/', msspTenantRoutes(tenants, ingest, streams, edgePortBase));
  app.route('/', impersonationRoutes(tenants));
  app.route('/', fleetRoutes(tenants));

  implement(
    app,
    msspTenantContract.audit,
  )(async (c, { query }) => {
    const identity = c.get('identity');
    // An impersonation token sees only its tenant, and only through RLS.
    const tenantId =
      identity.current_tenant === null
        ? query.tenant_id
        : tenantOfRequest(c, query.tenant_id ?? identity.current_tenant);
    const filters = { ...query, tenant_id: tenantId };
    if (query.format === 'jsonl' || query.format === 'csv') {
      if (identity.role !== 'platform_admin') {
        throw new ProblemError(403, 'forbidden', 'Only platform_admin may export the audit log');
      }
      return { raw: await auditExport(audit, identity, filters, query.format) };
    }
    const result = await queryAudit(audit, identity, filters);
    return { status: 200, body: result };
  });

  return app;
}
