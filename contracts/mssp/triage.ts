import Type from 'typebox';
import { InvestigationStatus, Severity } from '../investigation-values.ts';
import { MSSP_ROLES } from '../roles.ts';
import { Problem, Uuid } from '../route.ts';
import { Timestamp } from '../timestamp.ts';
import { Cursor, Limit, msspRoute } from './route.ts';

export const Incident = Type.Object(
  {
    id: Uuid,
    title: Type.String(),
    status: Type.String(),
    severity: Type.String(),
    verdict: Type.Union([Type.String(), Type.Null()]),
    opened_at: Timestamp,
    updated_at: Timestamp,
    /** Alerts grouped into this investigation at ingest (docs/ingest.md, the grouping rule). */
    alert_count: Type.Integer({ minimum: 0 }),
    /** The newest of those alerts' timestamps; null while it has none. */
    last_alert_at: Type.Union([Timestamp, Type.Null()]),
    /** The MSSP user working on it (`:assign`); null while nobody is. */
    assignee_id: Type.Union([Uuid, Type.Null()]),
  },
  { additionalProperties: false },
);

/**
 * The MSSP incident lists' filters (docs/investigations.md "Queues"): `assignee` `me` is the
 * caller's own, `none` the unassigned ones; `opened_after` / `opened_before` bound the age.
 */
export const IncidentListFilters = {
  status: Type.Optional(InvestigationStatus),
  severity: Type.Optional(Severity),
  assignee: Type.Optional(Type.Union([Type.Literal('me'), Type.Literal('none')])),
  opened_after: Type.Optional(Timestamp),
  opened_before: Type.Optional(Timestamp),
};

/** A review queue's page, oldest request first. */
export const ReviewQuery = Type.Object(
  { limit: Type.Optional(Limit), cursor: Type.Optional(Cursor) },
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
    requested_at: Timestamp,
    expires_at: Type.Union([Timestamp, Type.Null()]),
    decision: Type.Union([Type.String(), Type.Null()]),
    decided_by: Type.Union([Uuid, Type.Null()]),
    decided_at: Type.Union([Timestamp, Type.Null()]),
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
    roles: MSSP_ROLES,
    params: Type.Object({ tenant_id: Uuid }, { additionalProperties: false }),
    query: Type.Object(
      { ...IncidentListFilters, limit: Type.Optional(Limit), cursor: Type.Optional(Cursor) },
      { additionalProperties: false },
    ),
    responses: {
      200: Type.Object(
        { items: Type.Array(Incident), next_cursor: Type.Union([Type.String(), Type.Null()]) },
        { additionalProperties: false },
      ),
      400: Problem,
      404: Problem,
    },
  }),
  tenantReviews: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/tenants/{tenant_id}/reviews',
    summary:
      "One tenant's human-in-the-loop queue: reviews awaiting a decision, oldest first; keyset-paginated",
    roles: MSSP_ROLES,
    params: Type.Object({ tenant_id: Uuid }, { additionalProperties: false }),
    query: ReviewQuery,
    responses: {
      200: Type.Object(
        {
          items: Type.Array(PendingReview),
          next_cursor: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: false },
      ),
      400: Problem,
      404: Problem,
    },
  }),
  approveReview: msspRoute('own_tenant', {
    method: 'POST',
    path: '/api/mssp/tenants/{tenant_id}/reviews/{review_id}:approve',
    summary: 'Approve a proposed action (audited as investigation.approve)',
    roles: MSSP_ROLES,
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
    roles: MSSP_ROLES,
    params: ReviewParams,
    body: Rejection,
    responses: {
      200: Type.Object({ review: PendingReview }, { additionalProperties: false }),
      404: Problem,
      409: Problem,
    },
  }),
} as const;
