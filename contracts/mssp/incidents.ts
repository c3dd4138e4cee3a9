import Type from 'typebox';
import { InvestigationStatus, Severity } from '../investigation-values.ts';
import { MSSP_ROLES } from '../roles.ts';
import { Problem, Uuid } from '../route.ts';
import { Timestamp } from '../timestamp.ts';
import { Cursor, Limit, msspRoute } from './route.ts';
import { PendingReview } from './triage.ts';

// The analyst's desk on one incident (docs/investigations.md): the detail, its alerts, and the
// work routes. The shapes shared with the customer's detail (contracts/tenant.ts) live here too.

const NullableString = Type.Union([Type.String(), Type.Null()]);
const NullableInteger = Type.Union([Type.Integer(), Type.Null()]);
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

export const Verdict = Type.Union([
  Type.Literal('true_positive'),
  Type.Literal('false_positive'),
  Type.Literal('benign'),
  Type.Literal('inconclusive'),
]);

/** The verdicts an analyst closes with by hand (docs/investigations.md "Close"). */
export const CloseVerdict = Type.Union([
  Type.Literal('true_positive'),
  Type.Literal('false_positive'),
  Type.Literal('benign'),
]);

export const NoteVisibility = Type.Union([Type.Literal('internal'), Type.Literal('shared')]);

/**
 * The stream position the caller saw (the detail's `version`): every edit names it, and an
 * edit on a stream that moved since answers 409 `stale_version`.
 */
export const Version = Type.Integer({ minimum: 0, maximum: 2_147_483_647 });

/** A reason an analyst gives: shown in the timeline and the audit log. */
const Reason = Type.String({ minLength: 1, maxLength: 2000 });

/** An indicator seen in the incident's alerts (the ioc_stats extraction rule, docs/projections.md). */
export const IncidentIoc = Type.Object(
  {
    type: Type.String(),
    value: Type.String(),
    /** How many of the incident's alerts carried it. */
    alerts: Type.Integer({ minimum: 0 }),
    first_seen_at: Timestamp,
    last_seen_at: Timestamp,
  },
  { additionalProperties: false },
);

/** Another incident of the tenant sharing an indicator or the agent with this one. */
export const RelatedIncident = Type.Object(
  {
    id: Uuid,
    title: Type.String(),
    status: InvestigationStatus,
    severity: Severity,
    opened_at: Timestamp,
    /** Why it is related: a shared indicator, the same agent, or both. */
    relations: Type.Array(Type.Union([Type.Literal('shared_ioc'), Type.Literal('same_agent')])),
  },
  { additionalProperties: false },
);

/**
 * One event of the incident's own stream, oldest first. `actor` is who did it: `pipeline` (the
 * triage workers), `user` (a person; `email` for MSSP readers), `system` otherwise. `data` is
 * the event's payload as the reader may see it (docs/investigations.md "Timeline").
 */
export const TimelineEntry = Type.Object(
  {
    seq: Type.Integer({ minimum: 1 }),
    type: Type.String(),
    occurred_at: Timestamp,
    actor: Type.Object(
      {
        kind: Type.Union([Type.Literal('user'), Type.Literal('pipeline'), Type.Literal('system')]),
        /** The user's id (MSSP readers only; null otherwise). */
        id: Type.Union([Uuid, Type.Null()]),
        /** The user's email (MSSP readers only; null otherwise or when the user is gone). */
        email: NullableString,
      },
      { additionalProperties: false },
    ),
    data: Type.Record(Type.String(), Type.Unknown()),
  },
  { additionalProperties: false },
);

/** The fields an analyst reads first on an alert (docs/investigations.md "Alerts"). */
export const AlertSummary = Type.Object(
  {
    /** The alert's own stream id: the key of `.../alerts/{alert_id}`. */
    id: Uuid,
    timestamp: Timestamp,
    rule: Type.Object(
      { id: NullableString, level: NullableInteger, description: NullableString },
      { additionalProperties: false },
    ),
    agent: Type.Object(
      { id: NullableString, name: NullableString, ip: NullableString },
      { additionalProperties: false },
    ),
    source: Type.Object(
      { ip: NullableString, port: NullableString },
      { additionalProperties: false },
    ),
    destination: Type.Object(
      { ip: NullableString, port: NullableString },
      { additionalProperties: false },
    ),
    /** MITRE ATT&CK technique ids of the rule (`T1110`, `T1059.001`). */
    mitre: Type.Array(Type.String()),
  },
  { additionalProperties: false },
);

export const AlertDocument = Type.Object(
  {
    ...AlertSummary.properties,
    /** The alert exactly as the adapter delivered it. */
    document: Type.Unknown(),
  },
  { additionalProperties: false },
);

export const AlertPage = Type.Object(
  { items: Type.Array(AlertSummary), next_cursor: Type.Union([Type.String(), Type.Null()]) },
  { additionalProperties: false },
);

/** The investigation columns both families read on the detail. */
export const IncidentCore = {
  id: Uuid,
  title: Type.String(),
  summary: NullableString,
  status: InvestigationStatus,
  severity: Severity,
  /** True once an analyst set the severity: later alerts no longer raise it. */
  severity_pinned: Type.Boolean(),
  verdict: Type.Union([Verdict, Type.Null()]),
  source: NullableString,
  source_ref: NullableString,
  opened_at: Timestamp,
  updated_at: Timestamp,
  resolved_at: NullableTimestamp,
  closed_at: NullableTimestamp,
  alert_count: Type.Integer({ minimum: 0 }),
  last_alert_at: NullableTimestamp,
};

export const IncidentDetail = Type.Object(
  {
    incident: Type.Object(
      {
        ...IncidentCore,
        assignee: Type.Union([
          Type.Object({ id: Uuid, email: Type.String() }, { additionalProperties: false }),
          Type.Null(),
        ]),
        /** The investigation stream's last position: send it back with every edit. */
        version: Version,
      },
      { additionalProperties: false },
    ),
    iocs: Type.Array(IncidentIoc),
    related: Type.Array(RelatedIncident),
    /** The latest review of the incident, decided or not; null when it never had one. */
    review: Type.Union([PendingReview, Type.Null()]),
    timeline: Type.Array(TimelineEntry),
  },
  { additionalProperties: false },
);

const IncidentParams = Type.Object({ tenant_id: Uuid, id: Uuid }, { additionalProperties: false });
const AlertParams = Type.Object(
  { tenant_id: Uuid, id: Uuid, alert_id: Uuid },
  { additionalProperties: false },
);
const AlertsQuery = Type.Object(
  { limit: Type.Optional(Limit), cursor: Type.Optional(Cursor) },
  { additionalProperties: false },
);

/** Every work route answers the detail as it is after the edit (read-your-writes). */
const WorkResponses = {
  200: IncidentDetail,
  400: Problem,
  404: Problem,
  409: Problem,
  422: Problem,
} as const;

export const msspIncidentContract = {
  incident: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/incidents/{id}',
    summary:
      'One incident: the investigation with its assignee and version, IOCs, related incidents, review and timeline',
    roles: MSSP_ROLES,
    params: IncidentParams,
    responses: { 200: IncidentDetail, 404: Problem },
  }),
  incidentAlerts: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/incidents/{id}/alerts',
    summary:
      "The incident's alerts, newest first, in the fields an analyst reads; keyset-paginated",
    roles: MSSP_ROLES,
    params: IncidentParams,
    query: AlertsQuery,
    responses: { 200: AlertPage, 400: Problem, 404: Problem },
  }),
  incidentAlert: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/incidents/{id}/alerts/{alert_id}',
    summary: 'One alert of the incident with its full raw document',
    roles: MSSP_ROLES,
    params: AlertParams,
    responses: { 200: AlertDocument, 404: Problem },
  }),
  assignIncident: msspRoute('own_tenant', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}/incidents/{id}:assign',
    summary:
      'Assign the incident to an active MSSP user (null: unassign); audited as investigation.assign / investigation.unassign',
    roles: MSSP_ROLES,
    params: IncidentParams,
    body: Type.Object(
      { assignee_id: Type.Union([Uuid, Type.Null()]), version: Version },
      { additionalProperties: false },
    ),
    responses: WorkResponses,
  }),
  addIncidentNote: msspRoute('own_tenant', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}/incidents/{id}:note',
    summary:
      'Append a markdown note, internal or shared with the customer; audited as investigation.note',
    roles: MSSP_ROLES,
    params: IncidentParams,
    body: Type.Object(
      {
        body: Type.String({ minLength: 1, maxLength: 10000 }),
        visibility: NoteVisibility,
        version: Version,
      },
      { additionalProperties: false },
    ),
    responses: WorkResponses,
  }),
  closeIncident: msspRoute('own_tenant', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}/incidents/{id}:close',
    summary: 'Close the incident by hand with a verdict and reason; audited as investigation.close',
    roles: MSSP_ROLES,
    params: IncidentParams,
    body: Type.Object(
      { verdict: CloseVerdict, reason: Reason, version: Version },
      { additionalProperties: false },
    ),
    responses: WorkResponses,
  }),
  reopenIncident: msspRoute('own_tenant', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}/incidents/{id}:reopen',
    summary: 'Reopen a closed or resolved incident; audited as investigation.reopen',
    roles: MSSP_ROLES,
    params: IncidentParams,
    body: Type.Object({ reason: Reason, version: Version }, { additionalProperties: false }),
    responses: WorkResponses,
  }),
  changeIncidentSeverity: msspRoute('own_tenant', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}/incidents/{id}:severity',
    summary:
      'Set the severity and pin it (later alerts no longer raise it); audited as investigation.severity',
    roles: MSSP_ROLES,
    params: IncidentParams,
    body: Type.Object(
      { severity: Severity, reason: Reason, version: Version },
      { additionalProperties: false },
    ),
    responses: WorkResponses,
  }),
} as const;
