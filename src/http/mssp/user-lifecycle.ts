import { Hono } from 'hono';
import { msspUserLifecycleContract as contract } from '../../../contracts/mssp.ts';
import type { UserLifecycle } from '../../domains/users/user-lifecycle.ts';
import { actorOf } from '../../domains/users/user-types.ts';
import { implement } from '../contract.ts';

/** Disable, enable and re-role MSSP users (docs/operations.md "MSSP users"); both auth modes. */
export function userLifecycleRoutes(lifecycle: UserLifecycle): Hono {
  const app = new Hono();

  implement(
    app,
    contract.disableUser,
  )(async (c, { params }) => {
    const user = await lifecycle.disable(actorOf(c.get('identity')), params.id);
    return { status: 200, body: { user: user } };
  });

  implement(
    app,
    contract.enableUser,
  )(async (c, { params }) => {
    const user = await lifecycle.enable(actorOf(c.get('identity')), params.id);
    return { status: 200, body: { user: user } };
  });

  implement(
    app,
    contract.changeUserRole,
  )(async (c, { params, body }) => {
    const user = await lifecycle.changeRole(actorOf(c.get('identity')), params.id, body.role);
    return { status: 200, body: { user: user } };
  });

  return app;
}
