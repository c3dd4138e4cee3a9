import Type from 'typebox';
import { AdapterStatus } from '../adapter-status.ts';
import { MSSP_OPERATORS, MSSP_ROLES } from '../roles.ts';
import { Problem, Uuid } from '../route.ts';
import { TenantConfig } from '../tenant-config.ts';
import { Timestamp } from '../timestamp.ts';
import { Cursor, Limit, msspRoute, TenantParams } from './route.ts';

export const TenantState = Type.Union([
  Type.Literal('pending'),
  Type.Literal('provisioning'),
  Type.Literal('active'),
  Type.Literal('suspended'),
  Type.Literal('decommissioning'),
  Type.Literal('soft-deleted'),
]);

export const Tenant = Type.Object(
  {
    id: Uuid,
    slug: Type.String(),
    display_name: Type.String(),
    state: TenantState,
    error_details: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
    config_revision: Type.Integer(),
    /** The installed tenant package version; null until the first install. */
    chart_version: Type.Union([Type.String(), Type.Null()]),
    /** A requested upgrade the orchestrator has not finished yet. */
    upgrade_target: Type.Union([Type.String(), Type.Null()]),
    /** Edge-proxy mode only: the tenant's port pair on the shared edge IP (spec §2.9). */
    edge_ports: Type.Union([
      Type.Object(
        { events: Type.Integer(), enrollment: Type.Integer() },
        { additionalProperties: false },
      ),
      Type.Null(),
    ]),
    /**
     * The reconciler's last finding (docs/orchestrator.md "Reconciliation"): null while the
     * cluster matches svc's record.
     */
    drift: Type.Union([
      Type.Object(
        {
          detected_at: Type.String(),
          findings: Type.Array(
            Type.Object(
              {
                object: Type.Union([
                  Type.Literal('namespace'),
                  Type.Literal('release'),
                  Type.Literal('install_secret'),
                ]),
                name: Type.String(),
                problem: Type.Union([
                  Type.Literal('missing'),
                  Type.Literal('foreign'),
                  Type.Literal('terminating'),
                  Type.Literal('not_deployed'),
                ]),
                repair: Type.Union([
                  Type.Literal('recreated'),
                  Type.Literal('reinstalled'),
                  Type.Literal('none'),
                  Type.Literal('failed'),
                ]),
                detail: Type.Optional(Type.String()),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
      Type.Null(),
    ]),
    created_at: Timestamp,
    updated_at: Timestamp,
    deleted_at: Type.Union([Timestamp, Type.Null()]),
  },
  { additionalProperties: false },
);

/** `:suspend` and `:resume`: `{}` or a reason kept in the lifecycle event and the audit row. */
export const SuspensionBody = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })) },
  { additionalProperties: false },
);

/**
 * A tenant's adapter as its last heartbeat left it, and what it has delivered (docs/adapter.md);
 * null until the adapter is first heard from.
 */
export const AdapterActivity = Type.Object(
  {
    version: Type.String(),
    first_seen_at: Timestamp,
    last_seen_at: Timestamp,
    status: AdapterStatus,
    alerts_total: Type.Integer({ minimum: 0 }),
    checkpoint_at: Type.Union([Timestamp, Type.Null()]),
  },
  { additionalProperties: false },
);

/** The tenant lifecycle (spec §9) and the tenant's event stream. */
export const msspTenantLifecycleContract = {
  createTenant: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/tenants',
    summary:
      'Create a tenant from its configuration; it starts pending and the orchestrator provisions it (spec §9.4)',
    roles: MSSP_OPERATORS,
    body: TenantConfig,
    responses: {
      201: Type.Object({ tenant: Tenant }, { additionalProperties: false }),
      400: Problem,
      403: Problem,
      409: Problem,
      503: Problem,
    },
  }),
  listTenants: msspRoute('deny', {
    method: 'GET',
    path: '/api/mssp/tenants',
    summary: 'List tenants, newest first, optionally by state',
    roles: MSSP_ROLES,
    query: Type.Object(
      {
        state: Type.Optional(TenantState),
        limit: Type.Optional(Limit),
        cursor: Type.Optional(Cursor),
      },
      { additionalProperties: false },
    ),
    responses: {
      200: Type.Object(
        { items: Type.Array(Tenant), next_cursor: Type.Union([Type.String(), Type.Null()]) },
        { additionalProperties: false },
      ),
      400: Problem,
    },
  }),
  getTenant: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}',
    summary: 'One tenant with its lifecycle history',
    roles: MSSP_ROLES,
    params: TenantParams,
    responses: {
      200: Type.Object(
        {
          tenant: Tenant,
          lifecycle: Type.Array(
            Type.Object(
              {
                id: Type.String(),
                kind: Type.String(),
                from_state: Type.Union([Type.String(), Type.Null()]),
                to_state: Type.Union([Type.String(), Type.Null()]),
                step: Type.Union([Type.String(), Type.Null()]),
                details: Type.Record(Type.String(), Type.Unknown()),
                actor: Type.String(),
                occurred_at: Timestamp,
              },
              { additionalProperties: false },
            ),
          ),
          adapter: Type.Union([AdapterActivity, Type.Null()]),
        },
        { additionalProperties: false },
      ),
      404: Problem,
    },
  }),
  decommission: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}:decommission',
    summary: 'Start decommissioning an active tenant (grace period begins)',
    roles: MSSP_OPERATORS,
    params: TenantParams,
    responses: {
      200: Type.Object({ tenant: Tenant }, { additionalProperties: false }),
      404: Problem,
      409: Problem,
    },
  }),
  suspend: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}:suspend',
    summary:
      "Suspend an active tenant: its workloads scale to zero (data kept), its adapter and customers are refused, its customers' sessions end",
    roles: MSSP_OPERATORS,
    params: TenantParams,
    body: SuspensionBody,
    responses: {
      200: Type.Object({ tenant: Tenant }, { additionalProperties: false }),
      404: Problem,
      409: Problem,
    },
  }),
  resume: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}:resume',
    summary: 'Resume a suspended tenant: its workloads get their replicas back, parked jobs run',
    roles: MSSP_OPERATORS,
    params: TenantParams,
    body: SuspensionBody,
    responses: {
      200: Type.Object({ tenant: Tenant }, { additionalProperties: false }),
      404: Problem,
      409: Problem,
    },
  }),
  retry: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}:retry',
    summary:
      'Retry the provisioning of a pending tenant whose last attempt failed; resumes after the last completed step',
    roles: MSSP_OPERATORS,
    params: TenantParams,
    responses: {
      202: Type.Object({ tenant: Tenant }, { additionalProperties: false }),
      404: Problem,
      409: Problem,
    },
  }),
  upgrade: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}:upgrade',
    summary:
      "Upgrade an active tenant's package: the compatibility matrix decides (blocked and out-of-range refused, deprecated warns); 409 already_at_version for the version it runs, upgrade_in_progress while one runs",
    roles: MSSP_OPERATORS,
    params: TenantParams,
    body: Type.Object(
      {
        tenant_chart_version: Type.String({
          pattern: '^[0-9]+\\.[0-9]+\\.[0-9]+(-[0-9A-Za-z.-]+)?$',
          maxLength: 64,
        }),
      },
      { additionalProperties: false },
    ),
    responses: {
      202: Type.Object(
        {
          tenant: Tenant,
          compatibility: Type.Union([Type.Literal('supported'), Type.Literal('deprecated')]),
          warnings: Type.Array(Type.String()),
        },
        { additionalProperties: false },
      ),
      404: Problem,
      409: Problem,
      422: Problem,
    },
  }),
  tenantEvents: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/events',
    summary:
      "Server-sent events of one tenant's event store (bound to that tenant at subscription)",
    roles: MSSP_ROLES,
    params: TenantParams,
    stream: 'text/event-stream',
    responses: { 200: Type.String(), 404: Problem },
  }),
} as const;
