import type { TSchema } from 'typebox';
import Type from 'typebox';
import { AdapterStatus } from './adapter-status.ts';
import { Email } from './email.ts';
import { InstallSettingsUpdate, InstallSettingsView } from './install-settings.ts';
import { InvestigationStatus, Severity } from './investigation-values.ts';
import { type Impersonation, type Method, Problem, type Route, route, Uuid } from './route.ts';
import { Branding, TenantConfig } from './tenant-config.ts';
import { ConfigRevision, TenantConfigUpdate, TenantConfigView } from './tenant-config-revisions.ts';
import { Timestamp } from './timestamp.ts';
import { TriagePolicy } from './triage-policy.ts';

/**
 * `route()` for the MSSP family: every MSSP route declares how it treats an impersonation
 * token (spec §5.2); the server refuses to register an `/api/mssp/*` route without one.
 */
function msspRoute<
  const M extends Method,
  const P extends string,
  Params extends TSchema | undefined = undefined,
  Query extends TSchema | undefined = undefined,
  Body extends TSchema | undefined = undefined,
  const Responses extends Record<number, TSchema | null> = Record<number, TSchema | null>,
  const I extends Impersonation = Impersonation,
>(
  impersonation: I,
  definition: Route<M, P, Params, Query, Body, Responses>,
): Route<M, P, Params, Query, Body, Responses> & { impersonation: I } {
  return { ...route(definition), impersonation };
}

const msspUserContract = {
  resetPassword: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/users/{id}/password/reset',
    summary:
      "Generate a new password for another user, revoke all of that user's sessions, require a change",
    access: 'platform_admin (any user), mssp_admin (customer users); internal mode',
    params: Type.Object({ id: Uuid }, { additionalProperties: false }),
    responses: {
      200: Type.Object(
        {
          user_id: Uuid,
          password: Type.String(),
          must_change: Type.Literal(true),
          revoked_sessions: Type.Integer({ minimum: 0 }),
        },
        { additionalProperties: false },
      ),
      403: Problem,
      404: Problem,
      409: Problem,
    },
  }),
} as const;

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
    created_at: Type.String(),
    updated_at: Type.String(),
    deleted_at: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

const Limit = Type.Integer({ minimum: 1, maximum: 200 });
const Cursor = Type.String({ pattern: '^[A-Za-z0-9_-]{1,200}$' });
const TenantParams = Type.Object({ tenant_id: Uuid }, { additionalProperties: false });

/** `:suspend` and `:resume`: `{}` or a reason kept in the lifecycle event and the audit row. */
export const SuspensionBody = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })) },
  { additionalProperties: false },
);

export const AuditRow = Type.Object(
  {
    id: Uuid,
    timestamp: Type.String(),
    tenant_id: Type.Union([Uuid, Type.Null()]),
    actor_principal: Type.String(),
    actor_id: Type.String(),
    action: Type.String(),
    resource_type: Type.String(),
    resource_id: Type.Union([Type.String(), Type.Null()]),
    before: Type.Unknown(),
    after: Type.Unknown(),
    acting_as: Type.Union([Uuid, Type.Null()]),
    request_id: Type.Union([Type.String(), Type.Null()]),
    details: Type.Record(Type.String(), Type.Unknown()),
  },
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

export const msspTenantContract = {
  createTenant: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/tenants',
    summary:
      'Create a tenant from its configuration; it starts pending and the orchestrator provisions it (spec §9.4)',
    access: 'platform_admin, mssp_admin (not with an impersonation token)',
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
    access: 'platform_admin, mssp_admin, analyst (not with an impersonation token)',
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
    access: 'platform_admin, mssp_admin, analyst',
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
                occurred_at: Type.String(),
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
    access: 'platform_admin, mssp_admin',
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
    access: 'platform_admin, mssp_admin',
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
    access: 'platform_admin, mssp_admin',
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
    access: 'platform_admin, mssp_admin',
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
      "Upgrade an active tenant's package: the compatibility matrix decides (blocked and out-of-range refused, deprecated warns)",
    access: 'platform_admin, mssp_admin',
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
  impersonate: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/impersonate/{tenant_id}',
    summary: 'Mint a token acting as one tenant (at most 30 minutes); audited at mint',
    access: 'platform_admin, mssp_admin, analyst',
    params: TenantParams,
    body: Type.Object(
      {
        ttl_seconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 1800 })),
        reason: Type.String({ minLength: 3, maxLength: 500 }),
      },
      { additionalProperties: false },
    ),
    responses: {
      200: Type.Object(
        { token: Type.String(), tenant_id: Uuid, expires_at: Type.String() },
        { additionalProperties: false },
      ),
      404: Problem,
      409: Problem,
    },
  }),
  audit: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/audit',
    summary: 'Cross-tenant audit view (System principal), newest first; JSON Lines or CSV export',
    access: 'platform_admin, mssp_admin, analyst (export: platform_admin)',
    alternativeMedia: {
      'application/x-ndjson': Type.String({
        description: '`format=jsonl`: one audit row (as in `items`) per line, newest first',
      }),
      'text/csv': Type.String({
        description:
          '`format=csv` (UTF-8): a header row, then one row per audit entry, newest first; JSON columns as JSON text',
      }),
    },
    query: Type.Object(
      {
        tenant_id: Type.Optional(Uuid),
        action: Type.Optional(Type.String({ pattern: '^[a-z][a-z_.]{0,99}$' })),
        actor_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
        since: Type.Optional(Timestamp),
        until: Type.Optional(Timestamp),
        format: Type.Optional(
          Type.Union([Type.Literal('json'), Type.Literal('jsonl'), Type.Literal('csv')]),
        ),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
        cursor: Type.Optional(Cursor),
      },
      { additionalProperties: false },
    ),
    responses: {
      200: Type.Object(
        { items: Type.Array(AuditRow), next_cursor: Type.Union([Type.String(), Type.Null()]) },
        { additionalProperties: false },
      ),
      400: Problem,
      403: Problem,
    },
  }),
  fleetSummary: msspRoute('deny', {
    method: 'GET',
    path: '/api/mssp/fleet/summary',
    summary: 'Cross-tenant rollup (System principal, audited with a reason)',
    access: 'platform_admin, mssp_admin, analyst (not with an impersonation token)',
    responses: {
      200: Type.Object(
        {
          tenants_by_state: Type.Record(Type.String(), Type.Integer()),
          tenants: Type.Array(
            Type.Object(
              {
                tenant_id: Uuid,
                slug: Type.String(),
                state: TenantState,
                open_incidents: Type.Integer(),
                pending_reviews: Type.Integer(),
                last_event_at: Type.Union([Type.String(), Type.Null()]),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    },
  }),
  tenantEvents: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/events',
    summary:
      "Server-sent events of one tenant's event store (bound to that tenant at subscription)",
    access: 'platform_admin, mssp_admin, analyst',
    params: TenantParams,
    stream: 'text/event-stream',
    responses: { 200: Type.String(), 404: Problem },
  }),
} as const;

export const User = Type.Object(
  {
    id: Uuid,
    email: Type.String(),
    display_name: Type.Union([Type.String(), Type.Null()]),
    role: Type.Union([
      Type.Literal('platform_admin'),
      Type.Literal('mssp_admin'),
      Type.Literal('analyst'),
      Type.Literal('customer_viewer'),
    ]),
    tenant_id: Type.Union([Uuid, Type.Null()]),
    disabled_at: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.String(),
  },
  { additionalProperties: false },
);

const NewUser = {
  email: Email,
  display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
};

const Created = Type.Object(
  {
    user: User,
    /** Internal mode only: shown once; the user must change it at first sign-in. */
    initial_password: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

export const msspUserManagementContract = {
  listUsers: msspRoute('deny', {
    method: 'GET',
    path: '/api/mssp/users',
    summary: 'MSSP-side users',
    access: 'platform_admin, mssp_admin, analyst (not with an impersonation token)',
    responses: { 200: Type.Object({ items: Type.Array(User) }, { additionalProperties: false }) },
  }),
  createUser: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/users',
    summary:
      'Create an MSSP-side user (platform_admin: any MSSP role; mssp_admin: invite analysts)',
    access: 'platform_admin, mssp_admin',
    body: Type.Object(
      {
        ...NewUser,
        role: Type.Union([
          Type.Literal('platform_admin'),
          Type.Literal('mssp_admin'),
          Type.Literal('analyst'),
        ]),
      },
      { additionalProperties: false },
    ),
    responses: { 201: Created, 403: Problem, 409: Problem },
  }),
  listTenantUsers: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/users',
    summary: "A tenant's customer users",
    access: 'platform_admin, mssp_admin',
    params: Type.Object({ tenant_id: Uuid }, { additionalProperties: false }),
    responses: {
      200: Type.Object({ items: Type.Array(User) }, { additionalProperties: false }),
      404: Problem,
    },
  }),
  createTenantUser: msspRoute('own_tenant', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}/users',
    summary: 'Create a customer_viewer of the tenant',
    access: 'platform_admin, mssp_admin',
    params: Type.Object({ tenant_id: Uuid }, { additionalProperties: false }),
    body: Type.Object(NewUser, { additionalProperties: false }),
    responses: { 201: Created, 404: Problem, 409: Problem },
  }),
  deactivateTenantUser: msspRoute('own_tenant', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}/users/{user_id}:deactivate',
    summary: "Deactivate a customer user; all of the user's sessions are revoked",
    access: 'platform_admin, mssp_admin',
    params: Type.Object({ tenant_id: Uuid, user_id: Uuid }, { additionalProperties: false }),
    responses: {
      200: Type.Object({ user: User }, { additionalProperties: false }),
      404: Problem,
      409: Problem,
    },
  }),
} as const;

/**
 * The MSSP user lifecycle (issue 15): platform_admin only (spec §5.8 gives mssp_admin read
 * and invite on MSSP-side users). Customer users are not found here (404): they have
 * `…/tenants/{tenant_id}/users/{user_id}:deactivate`.
 */
const UserOnly = Type.Object({ id: Uuid }, { additionalProperties: false });
const OneUser = Type.Object({ user: User }, { additionalProperties: false });
export const msspUserLifecycleContract = {
  disableUser: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/users/{id}:disable',
    summary:
      'Disable an MSSP user and revoke all of its sessions (idempotent); never the last enabled platform_admin or oneself',
    access: 'platform_admin (not with an impersonation token)',
    params: UserOnly,
    responses: { 200: OneUser, 403: Problem, 404: Problem, 409: Problem },
  }),
  enableUser: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/users/{id}:enable',
    summary: 'Enable a disabled MSSP user (idempotent)',
    access: 'platform_admin (not with an impersonation token)',
    params: UserOnly,
    responses: { 200: OneUser, 403: Problem, 404: Problem },
  }),
  changeUserRole: msspRoute('deny', {
    method: 'PATCH',
    path: '/api/mssp/users/{id}',
    summary:
      "Change an MSSP user's role and revoke all of its sessions; never demote the last enabled platform_admin or oneself",
    access: 'platform_admin (not with an impersonation token)',
    params: UserOnly,
    body: Type.Object(
      {
        role: Type.Union([
          Type.Literal('platform_admin'),
          Type.Literal('mssp_admin'),
          Type.Literal('analyst'),
        ]),
      },
      { additionalProperties: false },
    ),
    responses: { 200: OneUser, 403: Problem, 404: Problem, 409: Problem },
  }),
} as const;

export const Incident = Type.Object(
  {
    id: Uuid,
    title: Type.String(),
    status: Type.String(),
    severity: Type.String(),
    verdict: Type.Union([Type.String(), Type.Null()]),
    opened_at: Type.String(),
    updated_at: Type.String(),
    /** Alerts grouped into this investigation at ingest (docs/ingest.md, the grouping rule). */
    alert_count: Type.Integer({ minimum: 0 }),
    /** The newest of those alerts' timestamps; null while it has none. */
    last_alert_at: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

export const PendingReview = Type.Object(
  {
    id: Uuid,
    investigation_id: Uuid,
    proposed_action: Type.String(),
    action_params: Type.Record(Type.String(), Type.Unknown()),
    rationale: Type.String(),
    evidence: Type.Unknown(),
    risk: Type.String(),
    confidence: Type.Union([Type.Number(), Type.Null()]),
    requested_by: Type.String(),
    requested_at: Type.String(),
    expires_at: Type.Union([Type.String(), Type.Null()]),
    decision: Type.Union([Type.String(), Type.Null()]),
    decided_by: Type.Union([Uuid, Type.Null()]),
    decided_at: Type.Union([Type.String(), Type.Null()]),
    decision_note: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

const ReviewParams = Type.Object(
  { tenant_id: Uuid, review_id: Uuid },
  { additionalProperties: false },
);
const Decision = Type.Object(
  { note: Type.String({ minLength: 1, maxLength: 2000 }) },
  { additionalProperties: false },
);

/** A rejection may say what the analyst judged the investigation to be (the read model's verdict). */
const Rejection = Type.Object(
  {
    note: Type.String({ minLength: 1, maxLength: 2000 }),
    verdict: Type.Optional(
      Type.Union([
        Type.Literal('true_positive'),
        Type.Literal('false_positive'),
        Type.Literal('benign'),
        Type.Literal('inconclusive'),
      ]),
    ),
  },
  { additionalProperties: false },
);

export const msspTriageContract = {
  tenantIncidents: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/incidents',
    summary: "One tenant's investigations, newest first (read under that tenant's context)",
    access: 'platform_admin, mssp_admin, analyst',
    params: Type.Object({ tenant_id: Uuid }, { additionalProperties: false }),
    query: Type.Object(
      {
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })),
        cursor: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,200}$' })),
      },
      { additionalProperties: false },
    ),
    responses: {
      200: Type.Object(
        { items: Type.Array(Incident), next_cursor: Type.Union([Type.String(), Type.Null()]) },
        { additionalProperties: false },
      ),
      404: Problem,
    },
  }),
  tenantReviews: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/reviews',
    summary: "One tenant's human-in-the-loop queue: reviews awaiting a decision, oldest first",
    access: 'platform_admin, mssp_admin, analyst',
    params: Type.Object({ tenant_id: Uuid }, { additionalProperties: false }),
    responses: {
      200: Type.Object({ items: Type.Array(PendingReview) }, { additionalProperties: false }),
      404: Problem,
    },
  }),
  approveReview: msspRoute('own_tenant', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}/reviews/{review_id}:approve',
    summary: 'Approve a proposed action (audited as investigation.approve)',
    access: 'platform_admin, mssp_admin, analyst',
    params: ReviewParams,
    body: Decision,
    responses: {
      200: Type.Object({ review: PendingReview }, { additionalProperties: false }),
      404: Problem,
      409: Problem,
    },
  }),
  rejectReview: msspRoute('own_tenant', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}/reviews/{review_id}:reject',
    summary:
      'Reject a proposed action (audited as investigation.reject); a rejected case proposal closes the investigation with the given verdict (default false_positive), a rejected closure reopens it',
    access: 'platform_admin, mssp_admin, analyst',
    params: ReviewParams,
    body: Rejection,
    responses: {
      200: Type.Object({ review: PendingReview }, { additionalProperties: false }),
      404: Problem,
      409: Problem,
    },
  }),
} as const;

/** Which tenant a row of a cross-tenant list belongs to. */
const TenantTag = { tenant_id: Uuid, tenant_slug: Type.String() };

export const FleetIncident = Type.Object(
  { ...TenantTag, ...Incident.properties },
  { additionalProperties: false },
);

export const FleetReview = Type.Object(
  { ...TenantTag, ...PendingReview.properties },
  { additionalProperties: false },
);

/**
 * The analyst's work across every tenant (issue 14): read through the system gate, audited
 * with its reason, so never with an impersonation token. Decisions stay per tenant
 * (`approveReview`, `rejectReview` with the row's `tenant_id`).
 */
export const msspCrossTenantContract = {
  allIncidents: msspRoute('deny', {
    method: 'GET',
    path: '/api/mssp/incidents',
    summary:
      "Every tenant's investigations, newest opened first, with their tenant (System principal, audited as mssp.incidents)",
    access: 'platform_admin, mssp_admin, analyst (not with an impersonation token)',
    query: Type.Object(
      {
        status: Type.Optional(InvestigationStatus),
        severity: Type.Optional(Severity),
        tenant_id: Type.Optional(Uuid),
        limit: Type.Optional(Limit),
        cursor: Type.Optional(Cursor),
      },
      { additionalProperties: false },
    ),
    responses: {
      200: Type.Object(
        {
          items: Type.Array(FleetIncident),
          next_cursor: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: false },
      ),
      400: Problem,
    },
  }),
  allReviews: msspRoute('deny', {
    method: 'GET',
    path: '/api/mssp/reviews',
    summary:
      'Reviews awaiting a decision in every tenant, oldest first, at most 500 (System principal, audited as mssp.reviews)',
    access: 'platform_admin, mssp_admin, analyst (not with an impersonation token)',
    responses: {
      200: Type.Object({ items: Type.Array(FleetReview) }, { additionalProperties: false }),
    },
  }),
} as const;

/** A tenant's triage policy: in force (every key, defaults filled in) and as stored. */
export const TriagePolicyView = Type.Object(
  {
    policy: TriagePolicy,
    /** As the MSSP put it; null while the tenant runs on the defaults. */
    stored: Type.Union([TriagePolicy, Type.Null()]),
    updated_at: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

/** One UTC day of a tenant's LLM use (docs/llm.md). */
export const LlmUsageDay = Type.Object(
  {
    day: Type.String({ format: 'date' }),
    input_tokens: Type.Integer({ minimum: 0 }),
    output_tokens: Type.Integer({ minimum: 0 }),
    cost_usd: Type.Number({ minimum: 0 }),
    /** Held by calls in flight. */
    reserved_tokens: Type.Integer({ minimum: 0 }),
    calls: Type.Integer({ minimum: 0 }),
    cache_hits: Type.Integer({ minimum: 0 }),
    cache_misses: Type.Integer({ minimum: 0 }),
    refused_over_budget: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

const TenantOnly = Type.Object({ tenant_id: Uuid }, { additionalProperties: false });

export const msspLlmContract = {
  getTriagePolicy: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/triage-policy',
    summary: "A tenant's triage policy: the rules before any model, redaction and LLM budget",
    access: 'platform_admin, mssp_admin, analyst',
    params: TenantOnly,
    responses: { 200: TriagePolicyView, 404: Problem },
  }),
  putTriagePolicy: msspRoute('own_tenant', {
    method: 'PUT',
    path: '/api/mssp/tenants/{tenant_id}/triage-policy',
    summary:
      "Replace a tenant's triage policy (absent keys take the defaults; audited as settings.update)",
    access: 'platform_admin, mssp_admin',
    params: TenantOnly,
    body: TriagePolicy,
    responses: { 200: TriagePolicyView, 403: Problem, 404: Problem, 422: Problem },
  }),
  llmUsage: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/llm-usage',
    summary: "A tenant's LLM tokens, cost, calls and cache use per UTC day, newest first",
    access: 'platform_admin, mssp_admin, analyst',
    params: TenantOnly,
    query: Type.Object(
      { days: Type.Optional(Type.Integer({ minimum: 1, maximum: 90 })) },
      { additionalProperties: false },
    ),
    responses: {
      200: Type.Object(
        {
          days: Type.Array(LlmUsageDay),
          daily_budget: Type.Object(
            {
              tokens: Type.Union([Type.Integer(), Type.Null()]),
              cost_usd: Type.Union([Type.Number(), Type.Null()]),
            },
            { additionalProperties: false },
          ),
        },
        { additionalProperties: false },
      ),
      404: Problem,
    },
  }),
} as const;

/**
 * A branding edit (spec §2.3 BrandingConfig): the creation schema's fields, with the logo and
 * favicon bounded by the service's rules instead of the pattern's length, so a logo over the
 * 200 KiB limit is answered by its decoded size (422 `invalid_branding`), not by a regex.
 */
const ImageDataUrl = Type.String({
  pattern: '^data:image/(png|svg\\+xml|jpeg);base64,[A-Za-z0-9+/]+={0,2}$',
  maxLength: 1_048_576,
});
const ImageHttpsUrl = Type.String({ pattern: '^https://[^\\s]{1,2040}$' });
export const BrandingUpdate = Type.Object(
  {
    app_name: Branding.properties.app_name,
    primary_color: Branding.properties.primary_color,
    secondary_color: Branding.properties.secondary_color,
    logo_url: Type.Optional(Type.Union([ImageHttpsUrl, ImageDataUrl])),
    /** Empty or absent for none; otherwise what the logo may be. */
    favicon: Type.Optional(Type.Union([Type.Literal(''), ImageHttpsUrl, ImageDataUrl])),
  },
  { additionalProperties: false },
);

/** A tenant's branding as stored, or the install defaults while it has none (`is_default`). */
export const BrandingView = Type.Object(
  {
    app_name: Type.String(),
    logo_url: Type.Union([Type.String(), Type.Null()]),
    primary_color: Type.String(),
    secondary_color: Type.String(),
    favicon: Type.String(),
    is_default: Type.Boolean(),
    updated_at: Type.Union([Timestamp, Type.Null()]),
  },
  { additionalProperties: false },
);

export const msspBrandingContract = {
  getBranding: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/branding',
    summary: "A tenant's branding (app name, logo, colours, favicon), or the install defaults",
    access: 'platform_admin, mssp_admin, analyst',
    params: TenantOnly,
    responses: { 200: BrandingView, 404: Problem },
  }),
  putBranding: msspRoute('own_tenant', {
    method: 'PUT',
    path: '/api/mssp/tenants/{tenant_id}/branding',
    summary:
      "Replace a tenant's branding; the portal shows it on its next load (audited as settings.update)",
    access: 'platform_admin, mssp_admin',
    params: TenantOnly,
    body: BrandingUpdate,
    responses: { 200: BrandingView, 403: Problem, 404: Problem, 422: Problem },
  }),
} as const;

/** Configuration revisions (issue 15; docs/operations.md "Configuration revisions"). */
export const msspConfigContract = {
  getConfig: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/config',
    summary:
      "A tenant's applied configuration (secret-free), its revision and the revision being rolled out",
    access: 'platform_admin, mssp_admin, analyst',
    params: TenantOnly,
    responses: { 200: TenantConfigView, 404: Problem },
  }),
  putConfig: msspRoute('deny', {
    method: 'PUT',
    path: '/api/mssp/tenants/{tenant_id}/config',
    summary:
      "Change an active tenant's configuration: a new revision the orchestrator rolls out like an upgrade (202); an unchanged configuration writes nothing (200)",
    access: 'platform_admin, mssp_admin (not with an impersonation token)',
    params: TenantOnly,
    body: TenantConfigUpdate,
    responses: {
      200: TenantConfigView,
      202: TenantConfigView,
      400: Problem,
      403: Problem,
      404: Problem,
      409: Problem,
      422: Problem,
      503: Problem,
    },
  }),
  listConfigRevisions: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/config/revisions',
    summary: "A tenant's configuration revisions, newest first, each with its outcome",
    access: 'platform_admin, mssp_admin, analyst',
    params: TenantOnly,
    query: Type.Object(
      { limit: Type.Optional(Limit), cursor: Type.Optional(Cursor) },
      { additionalProperties: false },
    ),
    responses: {
      200: Type.Object(
        {
          items: Type.Array(ConfigRevision),
          next_cursor: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: false },
      ),
      400: Problem,
      404: Problem,
    },
  }),
} as const;

/** Install settings (spec §2.2, §2.4; contracts/install-settings.ts). */
export const msspSettingsContract = {
  getSettings: msspRoute('deny', {
    method: 'GET',
    path: '/api/mssp/settings',
    summary: 'The install settings: each key with its effective value and default',
    access: 'platform_admin, mssp_admin, analyst (not with an impersonation token)',
    responses: { 200: InstallSettingsView },
  }),
  putSettings: msspRoute('deny', {
    method: 'PUT',
    path: '/api/mssp/settings',
    summary:
      'Set some install settings (keys not named keep their value); audited as settings.update',
    access: 'platform_admin (not with an impersonation token)',
    body: InstallSettingsUpdate,
    responses: { 200: InstallSettingsView, 403: Problem, 409: Problem, 422: Problem },
  }),
} as const;

/** `/api/mssp/*` (spec §4.2). */
export const msspContract = {
  ...msspTenantContract,
  ...msspUserContract,
  ...msspUserManagementContract,
  ...msspUserLifecycleContract,
  ...msspSettingsContract,
  ...msspTriageContract,
  ...msspCrossTenantContract,
  ...msspLlmContract,
  ...msspBrandingContract,
  ...msspConfigContract,
} as const;
