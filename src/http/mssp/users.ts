import { Hono } from 'hono';
import { msspContract } from '../../../contracts/mssp.ts';
import type { UserService } from '../../domains/users/user-service.ts';
import {
  actorOf,
  CannotResetSelfError,
  UserForbiddenError,
  UserNotFoundError,
} from '../../domains/users/user-types.ts';
import { implement } from '../contract.ts';
import { requireRole } from '../guards.ts';
import { ProblemError } from '../problem.ts';

function problemOf(error: unknown): never {
  if (error instanceof CannotResetSelfError)
    throw new ProblemError(
      409,
      'cannot_reset_self',
      'Use the change-password page for your own account',
    );
  if (error instanceof UserNotFoundError)
    throw new ProblemError(404, 'user_not_found', 'No such user');
  if (error instanceof UserForbiddenError)
    throw new ProblemError(403, 'forbidden', 'Your role does not allow resetting this user');
  throw error;
}

/** The admin password reset (spec §5.8); mounted in internal mode only. */
export function msspUserRoutes(users: UserService): Hono {
  const app = new Hono();
  implement(app, msspContract.resetPassword, [requireRole('platform_admin', 'mssp_admin')])(
    async (c, { params }) => {
      const result = await users
        .resetPassword(actorOf(c.get('identity')), params.id)
        .catch(problemOf);
      c.header('Cache-Control', 'no-store');
      return {
        status: 200,
        body: {
          user_id: result.userId,
          password: result.password,
          must_change: true,
          revoked_sessions: result.revokedSessions,
        },
      };
    },
  );
  return app;
}
