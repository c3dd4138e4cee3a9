import Type from 'typebox';
import { MSSP_OPERATORS } from '../roles.ts';
import { Problem, Uuid } from '../route.ts';
import { msspRoute } from './route.ts';

export const msspUserContract = {
  resetPassword: msspRoute('deny', {
    method: 'POST',
    path: '/api/mssp/users/{id}/password/reset',
    summary:
      "Generate a new password for another user, revoke all of that user's sessions, require a change",
    roles: MSSP_OPERATORS,
    access: 'platform_admin: any user; mssp_admin: customer users; internal mode',
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
