import Type, { type TObject, type TProperties } from 'typebox';
import { InvestigationStatus, Severity } from './investigation-values.ts';
import {
  AlertPage,
  IncidentCore,
  IncidentIoc,
  RelatedIncident,
  TimelineEntry,
} from './mssp/incidents.ts';
import { TenantState } from './mssp.ts';
import { ReportFigures, ReportPeriod } from './report-values.ts';
import { CUSTOMER_ROLES } from './roles.ts';
import { Problem, route, Uuid } from './route.ts';
import { Timestamp } from './timestamp.ts';

const ACCESS = "session or tenant token; always the caller's own tenant";

const Verdict = Type.Union([
  Type.Literal('true_positive'),
  Type.Literal('false_positive'),
  Type.Literal('benign'),
  Type.Literal('inconclusive'),
]);

/** Every object here is closed: responses never carry fields the schema does not name. */
function closed<P extends TProperties>(properties: P): TObject<P> {
  return Type.Object(properties, { additionalProperties: false });
}

const Count = Type.Integer({ minimum: 0 });
const NullableString = Type.Union([Type.String(), Type.Null()]);
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

/** Keyset pagination (docs/api-tenant.md): the cursor is opaque, validated by the server. */
const Limit = Type.Integer({ minimum: 1, maximum: 200 });
const Cursor = Type.String({ maxLength: 512 });
const NextCursor = Type.Union([Type.String(), Type.Null()]);

/** Closed: an unknown parameter (a `tenant_id` above all) is a 400, never silently ignored. */
const NoQuery = closed({});

export const Overview = closed({
  tenant: closed({ id: Uuid, display_name: Type.String(), state: TenantState }),
  open_investigations: closed({
    total: Count,
    by_severity: closed({
      info: Count,
      low: Count,
      medium: Count,
      high: Count,
      critical: Count,
    }),
    by_status: closed({ open: Count, triaging: Count, awaiting_review: Count }),
  }),
  pending_reviews: Count,
  events_last_24h: Count,
  resolved_last_7d: Count,
  as_of: Timestamp,
});

export const Incident = closed({
  id: Uuid,
  title: Type.String(),
  summary: NullableString,
  status: InvestigationStatus,
  severity: Severity,
  verdict: Type.Union([Verdict, Type.Null()]),
  source: NullableString,
  source_ref: NullableString,
  opened_at: Timestamp,
  updated_at: Timestamp,
  resolved_at: NullableTimestamp,
  closed_at: NullableTimestamp,
  /** Alerts grouped into this investigation at ingest (docs/ingest.md, the grouping rule). */
  alert_count: Count,
  /** The newest of those alerts' timestamps; null while it has none. */
  last_alert_at: NullableTimestamp,
});

/**
 * One incident as its customer may read it (docs/investigations.md "What the customer sees"):
 * no assignee identity (only whether someone works on it), no internal notes, no version (the
 * customer edits nothing), the review without its evidence or decider, a timeline whose
 * payloads are cut to what the customer may read.
 */
export const IncidentDetail = closed({
  incident: closed({
    ...IncidentCore,
    /** Whether an analyst has taken the incident; who it is stays inside the MSSP. */
    assigned: Type.Boolean(),
  }),
  iocs: Type.Array(IncidentIoc),
  related: Type.Array(RelatedIncident),
  review: Type.Union([
    closed({
      proposed_action: Type.String(),
      risk: Type.String(),
      requested_at: Timestamp,
      decision: NullableString,
      decided_at: NullableTimestamp,
    }),
    Type.Null(),
  ]),
  timeline: Type.Array(TimelineEntry),
});

const IncidentParams = closed({ id: Uuid });

export const Report = closed({
  days: Type.Integer({ minimum: 1, maximum: 90 }),
  /** The period of `figures` (UTC; weeks start on Monday). */
  period: ReportPeriod,
  /**
   * The tenant's figures per period over the same days (docs/reports.md "Figures"), oldest
   * first: what the mssp_admin's cross-tenant report shows for this tenant.
   */
  figures: Type.Array(ReportFigures),
  /** First and last UTC calendar day of the window, inclusive (YYYY-MM-DD). */
  from: Type.String({ format: 'date' }),
  to: Type.String({ format: 'date' }),
  /** One entry per day, oldest first, days without data included with `{}`. */
  daily: Type.Array(
    closed({
      date: Type.String({ format: 'date' }),
      metrics: Type.Record(Type.String(), Type.Number()),
    }),
  ),
  /** Each metric summed over the whole window. */
  totals: Type.Record(Type.String(), Type.Number()),
  top_rules: Type.Array(
    closed({
      rule_id: Type.String(),
      rule_name: NullableString,
      fired: Count,
      true_positives: Count,
      false_positives: Count,
      last_fired_at: NullableTimestamp,
    }),
  ),
  top_iocs: Type.Array(
    closed({
      ioc_type: Type.String(),
      ioc_value: Type.String(),
      hits: Count,
      malicious_verdicts: Count,
      first_seen_at: Timestamp,
      last_seen_at: Timestamp,
    }),
  ),
});

export const AuditEntry = closed({
  id: Uuid,
  timestamp: Timestamp,
  actor_principal: Type.String(),
  actor_id: Type.String(),
  action: Type.String(),
  resource_type: Type.String(),
  resource_id: NullableString,
  before: Type.Unknown(),
  after: Type.Unknown(),
  /** Set when MSSP staff acted as this tenant (spec §2.6); then `impersonated` is true. */
  acting_as: Type.Union([Uuid, Type.Null()]),
  impersonated: Type.Boolean(),
  request_id: NullableString,
  details: Type.Record(Type.String(), Type.Unknown()),
});

export const Branding = closed({
  app_name: Type.String(),
  logo_url: NullableString,
  primary_color: Type.String(),
  secondary_color: Type.String(),
  favicon: Type.String(),
  /** True when the tenant has no branding of its own and the install defaults apply. */
  is_default: Type.Boolean(),
  updated_at: NullableTimestamp,
});

export const IncidentsQuery = closed({
  status: Type.Optional(InvestigationStatus),
  severity: Type.Optional(Severity),
  limit: Type.Optional(Limit),
  cursor: Type.Optional(Cursor),
});

export const AuditQuery = closed({
  /** Exact action name, e.g. `user.impersonate`. */
  action: Type.Optional(Type.String({ pattern: '^[a-z][a-z_.]{0,99}$' })),
  /** Only rows at or after this instant. */
  since: Type.Optional(Timestamp),
  limit: Type.Optional(Limit),
  cursor: Type.Optional(Cursor),
});

/** `/api/tenant/*` (spec §4.3). */
export const tenantContract = {
  overview: route({
    method: 'GET',
    path: '/api/tenant/overview',
    summary: 'Dashboard numbers: open investigations, pending reviews, recent activity',
    roles: CUSTOMER_ROLES,
    access: ACCESS,
    query: NoQuery,
    responses: { 200: Overview, 400: Problem },
  }),
  incidents: route({
    method: 'GET',
    path: '/api/tenant/incidents',
    summary: 'Investigations, newest first, by status and severity; keyset-paginated',
    roles: CUSTOMER_ROLES,
    access: ACCESS,
    query: IncidentsQuery,
    responses: {
      200: closed({ items: Type.Array(Incident), next_cursor: NextCursor }),
      400: Problem,
    },
  }),
  incident: route({
    method: 'GET',
    path: '/api/tenant/incidents/{id}',
    summary:
      'One incident: IOCs, related incidents, the review and the timeline, shared notes only',
    roles: CUSTOMER_ROLES,
    access: ACCESS,
    params: IncidentParams,
    query: NoQuery,
    responses: { 200: IncidentDetail, 400: Problem, 404: Problem },
  }),
  incidentAlerts: route({
    method: 'GET',
    path: '/api/tenant/incidents/{id}/alerts',
    summary: "The incident's alerts, newest first; keyset-paginated",
    roles: CUSTOMER_ROLES,
    access: ACCESS,
    params: IncidentParams,
    query: closed({ limit: Type.Optional(Limit), cursor: Type.Optional(Cursor) }),
    responses: { 200: AlertPage, 400: Problem, 404: Problem },
  }),
  reports: route({
    method: 'GET',
    path: '/api/tenant/reports',
    summary:
      'Daily metric rollups over the last `days` UTC days, top rules and top IOCs, and the report figures per `period` (day, week, month)',
    roles: CUSTOMER_ROLES,
    access: ACCESS,
    query: closed({
      days: Type.Optional(Type.Integer({ minimum: 1, maximum: 90 })),
      period: Type.Optional(ReportPeriod),
    }),
    responses: { 200: Report, 400: Problem },
  }),
  audit: route({
    method: 'GET',
    path: '/api/tenant/audit',
    summary: "The tenant's audit trail, newest first, impersonation entries flagged",
    roles: CUSTOMER_ROLES,
    access: ACCESS,
    query: AuditQuery,
    responses: {
      200: closed({ items: Type.Array(AuditEntry), next_cursor: NextCursor }),
      400: Problem,
    },
  }),
  branding: route({
    method: 'GET',
    path: '/api/tenant/branding',
    summary: "The tenant's branding, or the install defaults when it has none",
    roles: CUSTOMER_ROLES,
    access: ACCESS,
    query: NoQuery,
    responses: { 200: Branding, 400: Problem },
  }),
  events: route({
    method: 'GET',
    path: '/api/tenant/events',
    summary: "Server-sent events of the caller's tenant (bound to it at subscription)",
    roles: CUSTOMER_ROLES,
    access: ACCESS,
    query: NoQuery,
    stream: 'text/event-stream',
    responses: { 200: Type.String(), 400: Problem },
  }),
} as const;
