import Type from 'typebox';
import { MSSP_ROLES } from '../roles.ts';
import { Problem, Uuid } from '../route.ts';
import { Timestamp } from '../timestamp.ts';
import { msspRoute, TenantParams } from './route.ts';

/** Impersonation tokens (spec §5.2). */
export const msspImpersonationContract = {
  impersonate: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/impersonate/{tenant_id}',
    summary: 'Mint a token acting as one tenant (at most 30 minutes); audited at mint',
    roles: MSSP_ROLES,
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
        { token: Type.String(), tenant_id: Uuid, expires_at: Timestamp },
        { additionalProperties: false },
      ),
      404: Problem,
      409: Problem,
    },
  }),
} as const;
