import Type from 'typebox';
import { MSSP_ROLES } from '../roles.ts';
import { Problem, Uuid } from '../route.ts';
import { Cursor, Limit, msspRoute } from './route.ts';
import { Incident, IncidentListFilters, PendingReview, ReviewQuery } from './triage.ts';

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
 * The analyst's work across every tenant (docs/web.md "Console pages"): read through the system
 * gate, audited with its reason, so never with an impersonation token. Decisions stay per tenant
 * (`approveReview`, `rejectReview` with the row's `tenant_id`).
 */
export const msspCrossTenantContract = {
  allIncidents: msspRoute('deny', {
    method: 'GET',
    path: '/api/mssp/incidents',
    summary:
      "Every tenant's investigations, newest opened first, with their tenant (System principal, audited as mssp.incidents)",
    roles: MSSP_ROLES,
    query: Type.Object(
      {
        ...IncidentListFilters,
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
      'Reviews awaiting a decision in every tenant, oldest first; keyset-paginated (System principal, audited as mssp.reviews)',
    roles: MSSP_ROLES,
    query: ReviewQuery,
    responses: {
      200: Type.Object(
        { items: Type.Array(FleetReview), next_cursor: Type.Union([Type.String(), Type.Null()]) },
        { additionalProperties: false },
      ),
      400: Problem,
    },
  }),
} as const;
