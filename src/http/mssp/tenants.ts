import { Hono } from 'hono';
import { msspTenantContract } from '../../../contracts/mssp.ts';
import type { IngestService } from '../../domains/ingest/ingest-service.ts';
import type { AdapterActivity } from '../../domains/ingest/ingest-types.ts';
import type { TenantService } from '../../domains/tenants/tenant-service.ts';
import type { Tenant } from '../../domains/tenants/tenant-types.ts';
import { edgePorts } from '../../orchestrator/edge-ports.ts';
import { implement } from '../contract.ts';
import { DEFAULT_LIMIT, decodeCursor, nextCursor } from '../cursor.ts';
import { type StreamDeps, streamTenantEvents } from '../event-stream.ts';
import { tenantOfRequest } from '../guards.ts';

/** The Tenant of contracts/mssp.ts: the row's public columns, edge ports instead of a pair. */
export function tenantJson(t: Tenant, edgePortBase: number) {
  return {
    id: t.id,
    slug: t.slug,
    display_name: t.display_name,
    state: t.state,
    error_details: t.error_details,
    config_revision: t.config_revision,
    chart_version: t.chart_version,
    upgrade_target: t.upgrade_target,
    edge_ports: t.edge_port_pair === null ? null : edgePorts(edgePortBase, t.edge_port_pair),
    drift: t.drift,
    created_at: t.created_at,
    updated_at: t.updated_at,
    deleted_at: t.deleted_at,
  };
}

function activityJson(a: AdapterActivity) {
  return {
    version: a.version,
    first_seen_at: a.firstSeenAt,
    last_seen_at: a.lastSeenAt,
    status: a.status,
    alerts_total: a.alertsTotal,
    checkpoint_at: a.checkpointAt,
  };
}

/** `/api/mssp/tenants/*`: create, read and move tenants (spec §4.2). */
export function msspTenantRoutes(
  tenants: TenantService,
  ingest: IngestService,
  streams: StreamDeps,
  edgePortBase: number,
): Hono {
  const app = new Hono();
  const toJson = (t: Tenant) => tenantJson(t, edgePortBase);

  implement(
    app,
    msspTenantContract.createTenant,
  )(async (c, { body }) => {
    const tenant = await tenants.create(body, c.get('identity'));
    return { status: 201, body: { tenant: toJson(tenant) } };
  });

  implement(
    app,
    msspTenantContract.listTenants,
  )(async (_c, { query }) => {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = decodeCursor('tenants', query.cursor);
    const page = await tenants.list(query.state, { after, limit });
    return {
      status: 200,
      body: { items: page.rows.map(toJson), next_cursor: nextCursor('tenants', page.next) },
    };
  });

  implement(
    app,
    msspTenantContract.getTenant,
  )(async (c, { params }) => {
    const id = tenantOfRequest(c, params.tenant_id);
    const { tenant, lifecycle } = await tenants.getWithLifecycle(id);
    const adapter = await ingest.activity(id);
    return {
      status: 200,
      body: {
        tenant: toJson(tenant),
        lifecycle,
        adapter: adapter ? activityJson(adapter) : null,
      },
    };
  });

  implement(
    app,
    msspTenantContract.decommission,
  )(async (c, { params }) => {
    const id = tenantOfRequest(c, params.tenant_id);
    const tenant = await tenants.decommission(c.get('identity'), id);
    return { status: 200, body: { tenant: toJson(tenant) } };
  });

  implement(
    app,
    msspTenantContract.suspend,
  )(async (c, { params, body }) => {
    const id = tenantOfRequest(c, params.tenant_id);
    const tenant = await tenants.suspend(c.get('identity'), id, body);
    return { status: 200, body: { tenant: toJson(tenant) } };
  });

  implement(
    app,
    msspTenantContract.resume,
  )(async (c, { params, body }) => {
    const id = tenantOfRequest(c, params.tenant_id);
    const tenant = await tenants.resume(c.get('identity'), id, body);
    return { status: 200, body: { tenant: toJson(tenant) } };
  });

  implement(
    app,
    msspTenantContract.retry,
  )(async (c, { params }) => {
    const tenant = await tenants.retry(c.get('identity'), params.tenant_id);
    return { status: 202, body: { tenant: toJson(tenant) } };
  });

  implement(
    app,
    msspTenantContract.upgrade,
  )(async (c, { params, body }) => {
    const result = await tenants.upgrade(
      c.get('identity'),
      params.tenant_id,
      body.tenant_chart_version,
    );
    return {
      status: 202,
      body: {
        tenant: toJson(result.tenant),
        compatibility: result.verdict,
        warnings: result.warnings,
      },
    };
  });

  implement(
    app,
    msspTenantContract.tenantEvents,
  )(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    await tenants.get(tenantId);
    return { raw: await streamTenantEvents(c, streams, tenantId) };
  });

  return app;
}
