import Type from 'typebox';
import { MSSP_ROLES } from '../roles.ts';
import { Problem, Uuid } from '../route.ts';
import { Timestamp } from '../timestamp.ts';
import { Cursor, msspRoute } from './route.ts';

export const AuditRow = Type.Object(
  {
    id: Uuid,
    timestamp: Timestamp,
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

/** The cross-tenant audit view, read through the system gate. */
export const msspAuditContract = {
  audit: msspRoute('own_tenant', {
    method: 'GET',
    path: '/api/mssp/audit',
    summary: 'Cross-tenant audit view (System principal), newest first; JSON Lines or CSV export',
    roles: MSSP_ROLES,
    access: 'export: platform_admin',
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
} as const;
