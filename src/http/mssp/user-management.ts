import { Hono } from 'hono';
import { msspUserManagementContract as contract } from '../../../contracts/mssp.ts';
import { MSSP_ROLES, type Role } from '../../auth/identity.ts';
import { generatePassword } from '../../auth/passwords.ts';
import type { AuthMode } from '../../config/index.ts';
import type { Transaction } from '../../db/tenant-context.ts';
import { writeAudit } from '../../domains/audit/audit-repository.ts';
import { revokeUserSessions } from '../../domains/sessions/session-repository.ts';
import { setPassword } from '../../domains/users/user-repository.ts';
import type { ApiDeps } from '../app.ts';
import { requireRole, tenantOfRequest } from '../authenticate.ts';
import { implement } from '../contract.ts';
import { ProblemError } from '../problem.ts';

interface UserRow {
  id: string;
  email: string;
  display_name: string | null;
  role: Role;
  tenant_id: string | null;
  disabled_at: Date | null;
  created_at: Date;
}

const COLUMNS = 'id, email, display_name, role, tenant_id, disabled_at, created_at';

const json = (u: UserRow) => ({
  ...u,
  disabled_at: u.disabled_at?.toISOString() ?? null,
  created_at: u.created_at.toISOString(),
});

/** Spec §5.8 "User management (MSSP side)": platform_admin RW, mssp_admin invite, analyst R. */
function mayCreate(actor: Role, role: Role): boolean {
  if (actor === 'platform_admin') return true;
  return actor === 'mssp_admin' && role === 'analyst';
}

async function insertUser(
  tx: Transaction,
  input: { email: string; display_name?: string | undefined; role: Role; tenantId: string | null },
): Promise<UserRow> {
  try {
    const { rows } = await tx.query<UserRow>(
      `INSERT INTO users (tenant_id, email, display_name, role) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
      [input.tenantId, input.email, input.display_name ?? null, input.role],
    );
    const row = rows[0];
    if (!row) throw new Error('user insert returned no row');
    return row;
  } catch (error) {
    if ((error as { constraint?: string }).constraint === 'users_email_key') {
      throw new ProblemError(409, 'email_taken', 'A user with this email already exists');
    }
    if ((error as { constraint?: string }).constraint === 'users_email_skeleton_key') {
      throw new ProblemError(409, 'email_confusable', 'A user with a look-alike email exists');
    }
    throw error;
  }
}

export function userManagementRoutes(api: ApiDeps, authMode: AuthMode): Hono {
  const app = new Hono();
  const internal = () => authMode === 'internal';

  /** In internal mode a new user gets a one-time password; in proxy mode the proxy signs it in. */
  async function initialPassword(tx: Transaction, userId: string): Promise<string | null> {
    if (!internal()) return null;
    const password = generatePassword();
    await setPassword(tx, userId, await api.hasher.hash(password), true, api.now());
    return password;
  }

  implement(app, contract.listUsers, [requireRole(...MSSP_ROLES)])(async () => {
    const { rows } = await api.db.withoutTenant((tx) =>
      tx.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE tenant_id IS NULL ORDER BY email`),
    );
    return { status: 200, body: { items: rows.map(json) } };
  });

  implement(app, contract.createUser, [requireRole('platform_admin', 'mssp_admin')])(
    async (c, { body }) => {
      const actor = c.get('identity');
      if (!mayCreate(actor.role, body.role)) {
        throw new ProblemError(403, 'forbidden', `An ${actor.role} may not create a ${body.role}`);
      }
      const result = await api.db.withoutTenant(async (tx) => {
        const user = await insertUser(tx, { ...body, tenantId: null });
        const password = await initialPassword(tx, user.id);
        await writeAudit(tx, {
          tenantId: null,
          actorPrincipal: 'User',
          actorId: actor.user_id,
          action: 'user.create',
          resourceType: 'user',
          resourceId: user.id,
          after: { email: user.email, role: user.role },
        });
        return { user, password };
      });
      c.header('Cache-Control', 'no-store');
      return { status: 201, body: { user: json(result.user), initial_password: result.password } };
    },
  );

  const tenantAdmins = requireRole('platform_admin', 'mssp_admin');

  async function requireTenant(tx: Transaction, tenantId: string): Promise<void> {
    const { rowCount } = await tx.query(
      `SELECT 1 FROM tenants WHERE id = $1 AND state <> 'soft-deleted'`,
      [tenantId],
    );
    if (!rowCount) throw new ProblemError(404, 'tenant_not_found', 'No such tenant');
  }

  implement(app, contract.listTenantUsers, [tenantAdmins])(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const rows = await api.db.withTenant(tenantId, async (tx) => {
      await requireTenant(tx, tenantId);
      return (
        await tx.query<UserRow>(
          `SELECT ${COLUMNS} FROM users WHERE tenant_id = $1 ORDER BY email`,
          [tenantId],
        )
      ).rows;
    });
    return { status: 200, body: { items: rows.map(json) } };
  });

  implement(app, contract.createTenantUser, [tenantAdmins])(async (c, { params, body }) => {
    const actor = c.get('identity');
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const result = await api.db.withTenant(tenantId, async (tx) => {
      await requireTenant(tx, tenantId);
      const user = await insertUser(tx, { ...body, role: 'customer_viewer', tenantId });
      const password = await initialPassword(tx, user.id);
      await writeAudit(tx, {
        tenantId,
        actorPrincipal: 'User',
        actorId: actor.user_id,
        action: 'user.create',
        resourceType: 'user',
        resourceId: user.id,
        after: { email: user.email, role: user.role },
        actingAs: actor.current_tenant,
      });
      return { user, password };
    });
    c.header('Cache-Control', 'no-store');
    return { status: 201, body: { user: json(result.user), initial_password: result.password } };
  });

  implement(app, contract.deactivateTenantUser, [tenantAdmins])(async (c, { params }) => {
    const actor = c.get('identity');
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const user = await api.db.withTenant(tenantId, async (tx) => {
      const { rows } = await tx.query<UserRow>(
        `UPDATE users SET disabled_at = now(), updated_at = now()
          WHERE id = $1 AND tenant_id = $2 AND disabled_at IS NULL RETURNING ${COLUMNS}`,
        [params.user_id, tenantId],
      );
      const updated = rows[0];
      if (!updated) {
        const exists = await tx.query('SELECT 1 FROM users WHERE id = $1 AND tenant_id = $2', [
          params.user_id,
          tenantId,
        ]);
        if (exists.rowCount)
          throw new ProblemError(409, 'already_deactivated', 'The user is already deactivated');
        throw new ProblemError(404, 'user_not_found', 'No such user in this tenant');
      }
      const revoked = await revokeUserSessions(tx, updated.id, api.now());
      await writeAudit(tx, {
        tenantId,
        actorPrincipal: 'User',
        actorId: actor.user_id,
        action: 'user.deactivate',
        resourceType: 'user',
        resourceId: updated.id,
        before: { disabled: false },
        after: { disabled: true },
        actingAs: actor.current_tenant,
        details: { revoked_sessions: revoked },
      });
      return updated;
    });
    return { status: 200, body: { user: json(user) } };
  });

  return app;
}
