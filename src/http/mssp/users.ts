import { Hono } from 'hono';
import { msspContract } from '../../../contracts/mssp.ts';
import type { UserService } from '../../domains/users/user-service.ts';
import { actorOf } from '../../domains/users/user-types.ts';
import { implement } from '../contract.ts';

/** The admin password reset (spec §5.8); mounted in internal mode only. */
export function msspUserRoutes(users: UserService): Hono {
  const app = new Hono();
  implement(
    app,
    msspContract.resetPassword,
  )(async (c, { params }) => {
    const result = await users.resetPassword(actorOf(c.get('identity')), params.id);
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
  });
  return app;
}
