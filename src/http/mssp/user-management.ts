import { Hono } from 'hono';
import { msspUserManagementContract as contract } from '../../../contracts/mssp.ts';
import { MSSP_ROLES } from '../../auth/identity.ts';
import type { UserService } from '../../domains/users/user-service.ts';
import {
  AlreadyDeactivatedError,
  actorOf,
  EmailConfusableError,
  EmailTakenError,
  type ManagedUser,
  TenantNotFoundError,
  UserForbiddenError,
  UserNotFoundError,
} from '../../domains/users/user-types.ts';
import { implement } from '../contract.ts';
import { requireRole, tenantOfRequest } from '../guards.ts';
import { ProblemError } from '../problem.ts';

/** A user as the MSSP user routes answer it (this file's and user-lifecycle.ts's). */
export const managedUserJson = (u: ManagedUser) => ({
  ...u,
  disabled_at: u.disabled_at?.toISOString() ?? null,
  created_at: u.created_at.toISOString(),
});

function problemOf(error: unknown): never {
  if (error instanceof UserForbiddenError) throw new ProblemError(403, 'forbidden', error.message);
  if (error instanceof EmailTakenError)
    throw new ProblemError(409, 'email_taken', 'A user with this email already exists');
  if (error instanceof EmailConfusableError)
    throw new ProblemError(409, 'email_confusable', 'A user with a look-alike email exists');
  if (error instanceof TenantNotFoundError)
    throw new ProblemError(404, 'tenant_not_found', 'No such tenant');
  if (error instanceof UserNotFoundError)
    throw new ProblemError(404, 'user_not_found', 'No such user in this tenant');
  if (error instanceof AlreadyDeactivatedError)
    throw new ProblemError(409, 'already_deactivated', 'The user is already deactivated');
  throw error;
}

export function userManagementRoutes(users: UserService): Hono {
  const app = new Hono();

  implement(app, contract.listUsers, [requireRole(...MSSP_ROLES)])(async () => {
    const rows = await users.listMsspUsers();
    return { status: 200, body: { items: rows.map(managedUserJson) } };
  });

  implement(app, contract.createUser, [requireRole('platform_admin', 'mssp_admin')])(
    async (c, { body }) => {
      const result = await users.createMsspUser(actorOf(c.get('identity')), body).catch(problemOf);
      c.header('Cache-Control', 'no-store');
      return {
        status: 201,
        body: { user: managedUserJson(result.user), initial_password: result.password },
      };
    },
  );

  const tenantAdmins = requireRole('platform_admin', 'mssp_admin');

  implement(app, contract.listTenantUsers, [tenantAdmins])(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const rows = await users.listTenantUsers(tenantId).catch(problemOf);
    return { status: 200, body: { items: rows.map(managedUserJson) } };
  });

  implement(app, contract.createTenantUser, [tenantAdmins])(async (c, { params, body }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const result = await users
      .createTenantUser(actorOf(c.get('identity')), tenantId, body)
      .catch(problemOf);
    c.header('Cache-Control', 'no-store');
    return {
      status: 201,
      body: { user: managedUserJson(result.user), initial_password: result.password },
    };
  });

  implement(app, contract.deactivateTenantUser, [tenantAdmins])(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const user = await users
      .deactivateTenantUser(actorOf(c.get('identity')), tenantId, params.user_id)
      .catch(problemOf);
    return { status: 200, body: { user: managedUserJson(user) } };
  });

  return app;
}
