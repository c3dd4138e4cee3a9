import Type from 'typebox';
import { Problem, route, Uuid } from './route.ts';

export const msspContract = {
  resetPassword: route({
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
