// The MSSP user lifecycle (docs/operations.md "MSSP users"): disable, enable and re-role MSSP-side
// users. Spec §5.8 gives "User management (MSSP side)" RW to platform_admin only (mssp_admin reads
// and invites analysts), so only a platform_admin acts here, as it alone resets MSSP users'
// passwords. Customer users are not MSSP-side: they are not found here (they have
// `…/users/{id}:deactivate`).
import type { AppDatabase } from '../../db/pools.ts';
import type { InstallTx } from '../../db/tenant-context.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import {
  lockMsspUser,
  lockPlatformAdmins,
  revokeUserSessions,
  setMsspUserDisabled,
  setMsspUserRole,
} from './user-repository.ts';
import {
  CannotChangeSelfError,
  LastPlatformAdminError,
  type ManagedUser,
  type UserActor,
  UserForbiddenError,
  UserNotFoundError,
} from './user-types.ts';

export type MsspRole = 'platform_admin' | 'mssp_admin' | 'analyst';

/** The target and the install's platform admins, locked; the actor still one of them. */
interface Locked {
  target: ManagedUser;
  /** Enabled platform_admins, as they are once every concurrent change before ours is done. */
  enabledAdmins: string[];
}

export function createUserLifecycle(deps: { db: AppDatabase; now: () => Date }) {
  /**
   * Locks the platform admins first (always in the same order, see lockPlatformAdmins), then
   * the target. A change that waited for another one reads its result here.
   */
  async function lock(tx: InstallTx, actor: UserActor, id: string): Promise<Locked> {
    if (actor.role !== 'platform_admin')
      throw new UserForbiddenError('Only a platform_admin manages MSSP users');
    const admins = await lockPlatformAdmins(tx);
    const target = await lockMsspUser(tx, id);
    if (!target) throw new UserNotFoundError(id, 'mssp');
    const enabledAdmins = admins.filter((a) => a.disabled_at === null).map((a) => a.id);
    return { target, enabledAdmins };
  }

  /**
   * Refuses a change that would leave no enabled platform_admin, then one by an actor a
   * concurrent change has just disabled or demoted (its request began before that committed).
   */
  function guard({ target, enabledAdmins }: Locked, actor: UserActor): void {
    const removesAdmin = target.role === 'platform_admin' && target.disabled_at === null;
    if (removesAdmin && enabledAdmins.length <= 1)
      throw new LastPlatformAdminError('The install must keep one enabled platform_admin');
    if (!enabledAdmins.includes(actor.userId))
      throw new UserForbiddenError('Only a platform_admin manages MSSP users');
  }

  const audit = (
    tx: InstallTx,
    actor: UserActor,
    entry: { action: string; id: string; before: unknown; after: unknown; revoked?: number },
  ) =>
    writeAudit(tx, {
      tenantId: null,
      actorPrincipal: 'User',
      actorId: actor.userId,
      action: entry.action,
      resourceType: 'user',
      resourceId: entry.id,
      before: entry.before,
      after: entry.after,
      ...(entry.revoked === undefined ? {} : { details: { revoked_sessions: entry.revoked } }),
    });

  return {
    /**
     * Disables an MSSP user and revokes every session of it in the same transaction. A user
     * already disabled is answered as it is, with no second audit row.
     */
    async disable(actor: UserActor, id: string): Promise<ManagedUser> {
      if (id === actor.userId) throw new CannotChangeSelfError('disable');
      return deps.db.withoutTenant(async (tx) => {
        const locked = await lock(tx, actor, id);
        if (locked.target.disabled_at !== null) return locked.target;
        guard(locked, actor);
        const at = deps.now();
        const user = await setMsspUserDisabled(tx, id, at);
        const revoked = await revokeUserSessions(tx, id, at);
        await audit(tx, actor, {
          action: 'user.disable',
          id,
          before: { disabled: false },
          after: { disabled: true },
          revoked,
        });
        return user;
      });
    },

    /** Enables a disabled MSSP user; it signs in again with its password. Idempotent. */
    async enable(actor: UserActor, id: string): Promise<ManagedUser> {
      return deps.db.withoutTenant(async (tx) => {
        const locked = await lock(tx, actor, id);
        if (locked.target.disabled_at === null) return locked.target;
        guard(locked, actor);
        const user = await setMsspUserDisabled(tx, id, null);
        await audit(tx, actor, {
          action: 'user.enable',
          id,
          before: { disabled: true },
          after: { disabled: false },
        });
        return user;
      });
    },

    /**
     * Gives an MSSP user another MSSP role and revokes its sessions, so the new role applies
     * from its next sign-in (its bearer tokens already stop at the next request: they carry
     * the old role). The same role is answered as it is, unaudited.
     */
    async changeRole(actor: UserActor, id: string, role: MsspRole): Promise<ManagedUser> {
      if (id === actor.userId) throw new CannotChangeSelfError('role');
      return deps.db.withoutTenant(async (tx) => {
        const locked = await lock(tx, actor, id);
        if (locked.target.role === role) return locked.target;
        guard(locked, actor);
        const user = await setMsspUserRole(tx, id, role);
        const revoked = await revokeUserSessions(tx, id, deps.now());
        await audit(tx, actor, {
          action: 'user.role.change',
          id,
          before: { role: locked.target.role },
          after: { role },
          revoked,
        });
        return user;
      });
    },
  };
}

export type UserLifecycle = ReturnType<typeof createUserLifecycle>;
