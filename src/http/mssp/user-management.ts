import { Hono } from 'hono';
import { msspUserManagementContract as contract } from '../../../contracts/mssp.ts';
import type { UserService } from '../../domains/users/user-service.ts';
import { actorOf } from '../../domains/users/user-types.ts';
import { implement } from '../contract.ts';
import { tenantOfRequest } from '../guards.ts';

export function userManagementRoutes(users: UserService): Hono {
  const app = new Hono();

  implement(
    app,
    contract.listUsers,
  )(async () => {
    const rows = await users.listMsspUsers();
    return { status: 200, body: { items: rows } };
  });

  implement(
    app,
    contract.createUser,
  )(async (c, { body }) => {
    const result = await users.createMsspUser(actorOf(c.get('identity')), body);
    c.header('Cache-Control', 'no-store');
    return {
      status: 201,
      body: { user: result.user, initial_password: result.password },
    };
  });

  implement(
    app,
    contract.listTenantUsers,
  )(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const rows = await users.listTenantUsers(tenantId);
    return { status: 200, body: { items: rows } };
  });

  implement(
    app,
    contract.createTenantUser,
  )(async (c, { params, body }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const result = await users.createTenantUser(actorOf(c.get('identity')), tenantId, body);
    c.header('Cache-Control', 'no-store');
    return {
      status: 201,
      body: { user: result.user, initial_password: result.password },
    };
  });

  implement(
    app,
    contract.deactivateTenantUser,
  )(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const user = await users.deactivateTenantUser(
      actorOf(c.get('identity')),
      tenantId,
      params.user_id,
    );
    return { status: 200, body: { user: user } };
  });

  return app;
}
