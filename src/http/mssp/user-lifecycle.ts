import { Hono } from 'hono';
import { msspUserLifecycleContract as contract } from '../../../contracts/mssp.ts';
import type { UserLifecycle } from '../../domains/users/user-lifecycle.ts';
import {
  actorOf,
  CannotChangeSelfError,
  LastPlatformAdminError,
  UserForbiddenError,
  UserNotFoundError,
} from '../../domains/users/user-types.ts';
import { implement } from '../contract.ts';
import { requireRole } from '../guards.ts';
import { ProblemError } from '../problem.ts';
import { managedUserJson } from './user-management.ts';

function problemOf(error: unknown): never {
  if (error instanceof UserNotFoundError)
    throw new ProblemError(404, 'user_not_found', 'No such MSSP user');
  if (error instanceof UserForbiddenError) throw new ProblemError(403, 'forbidden', error.message);
  if (error instanceof LastPlatformAdminError)
    throw new ProblemError(409, 'last_platform_admin', error.message);
  if (error instanceof CannotChangeSelfError && error.change === 'disable')
    throw new ProblemError(409, 'cannot_disable_self', error.message);
  if (error instanceof CannotChangeSelfError)
    throw new ProblemError(409, 'cannot_change_own_role', error.message);
  throw error;
}

/** Disable, enable and re-role MSSP users (issue 15); both auth modes. */
export function userLifecycleRoutes(lifecycle: UserLifecycle): Hono {
  const app = new Hono();
  const admins = [requireRole('platform_admin')];

  implement(
    app,
    contract.disableUser,
    admins,
  )(async (c, { params }) => {
    const user = await lifecycle.disable(actorOf(c.get('identity')), params.id).catch(problemOf);
    return { status: 200, body: { user: managedUserJson(user) } };
  });

  implement(
    app,
    contract.enableUser,
    admins,
  )(async (c, { params }) => {
    const user = await lifecycle.enable(actorOf(c.get('identity')), params.id).catch(problemOf);
    return { status: 200, body: { user: managedUserJson(user) } };
  });

  implement(
    app,
    contract.changeUserRole,
    admins,
  )(async (c, { params, body }) => {
    const user = await lifecycle
      .changeRole(actorOf(c.get('identity')), params.id, body.role)
      .catch(problemOf);
    return { status: 200, body: { user: managedUserJson(user) } };
  });

  return app;
}
