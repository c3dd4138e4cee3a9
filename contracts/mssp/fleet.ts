import Type from 'typebox';
import { MSSP_ROLES } from '../roles.ts';
import { Uuid } from '../route.ts';
import { Timestamp } from '../timestamp.ts';
import { msspRoute } from './route.ts';
import { TenantState } from './tenants.ts';

export const msspFleetContract = {
  fleetSummary: msspRoute('deny', {
    method: 'GET',
    path: '/api/mssp/fleet/summary',
    summary: 'Cross-tenant rollup (System principal, audited with a reason)',
    roles: MSSP_ROLES,
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
                last_event_at: Type.Union([Timestamp, Type.Null()]),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    },
  }),
} as const;
