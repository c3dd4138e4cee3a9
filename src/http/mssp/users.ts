import { Hono } from 'hono';
import { msspContract } from '../../../contracts/mssp.ts';
import type { Role } from '../../auth/identity.ts';
import { generatePassword, type PasswordHasher } from '../../auth/passwords.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { SystemGate } from '../../db/system-gate.ts';
import type { AppTx } from '../../db/tenant-context.ts';
import { writeAudit } from '../../domains/audit/audit-repository.ts';
import { revokeUserSessions } from '../../domains/sessions/session-repository.ts';
import { setPassword } from '../../domains/users/user-repository.ts';
import { requireRole } from '../authenticate.ts';
import { implement } from '../contract.ts';
import { ProblemError } from '../problem.ts';

export interface MsspUserRoutesDeps {
  db: AppDatabase;
  system: SystemGate;
  hasher: PasswordHasher;
  now: () => Date;
}

/**
 * Who may reset whom (spec §5.8): platform_admin any other user; mssp_admin only tenant-side
 * users (it has read-only rights on MSSP-side user management); nobody themselves.
 */
function mayReset(actor: Role, target: Role): boolean {
  if (actor === 'platform_admin') return true;
  return actor === 'mssp_admin' && target === 'customer_viewer';
}

export function msspUserRoutes(deps: MsspUserRoutesDeps): Hono {
  const app = new Hono();
  implement(app, msspContract.resetPassword, [requireRole('platform_admin', 'mssp_admin')])(
    async (c, { params }) => {
      const actor = c.get('identity');
      const { id } = params;
      if (id === actor.user_id) {
        throw new ProblemError(
          409,
          'cannot_reset_self',
          'Use the change-password page for your own account',
        );
      }
      // The target may belong to any tenant: finding it is cross-tenant visibility (spec §4 rule 2).
      const target = await deps.system.withSystem('user.password_reset', async (tx) => {
        const { rows } = await tx.query<{ id: string; tenant_id: string | null; role: Role }>(
          'SELECT id, tenant_id, role FROM users WHERE id = $1',
          [id],
        );
        return rows[0];
      });
      if (!target) throw new ProblemError(404, 'user_not_found', 'No such user');
      if (!mayReset(actor.role, target.role)) {
        throw new ProblemError(403, 'forbidden', 'Your role does not allow resetting this user');
      }
      const password = generatePassword();
      const hash = await deps.hasher.hash(password);
      const work = async (tx: AppTx) => {
        const at = deps.now();
        await setPassword(tx, target.id, hash, true, at);
        const revoked = await revokeUserSessions(tx, target.id, at);
        // Filed under the target's tenant, so that tenant's customers see who reset their user.
        await writeAudit(tx, {
          tenantId: target.tenant_id,
          actorPrincipal: 'User',
          actorId: actor.user_id,
          action: 'auth.password.reset.admin',
          resourceType: 'user',
          resourceId: target.id,
          after: { must_change: true },
          details: { target_tenant_id: target.tenant_id, revoked_sessions: revoked },
        });
        return revoked;
      };
      const revoked = await deps.db.withScope(target.tenant_id, work);
      c.header('Cache-Control', 'no-store');
      return {
        status: 200,
        body: { user_id: target.id, password, must_change: true, revoked_sessions: revoked },
      };
    },
  );
  return app;
}
