// Users: MSSP staff and tenant users, their passwords, and who may manage whom (spec §5.8).
// The API and the `svc auth` command reset a password through the same operation here.
import type { Role } from '../../auth/identity.ts';
import { generatePassword, type PasswordHasher } from '../../auth/passwords.ts';
import type { AuthMode } from '../../config/index.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { SystemGate } from '../../db/system-gate.ts';
import type { AppTx } from '../../db/tenant-context.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { findTenant } from '../tenants/tenant-repository.ts';
import {
  disableUser,
  findAnyUser,
  findLogin,
  hasNoMsspUsers,
  insertUser,
  listMsspUsers,
  listTenantUsers,
  normaliseEmail,
  revokeUserSessions,
  setPassword,
  tenantHasUser,
} from './user-repository.ts';
import {
  type Actor,
  AlreadyDeactivatedError,
  CannotResetSelfError,
  EmailTakenError,
  type ManagedUser,
  type NewUser,
  TenantNotFoundError,
  type UserActor,
  UserForbiddenError,
  UserNotFoundError,
} from './user-types.ts';

export interface UserServiceDeps {
  db: AppDatabase;
  /** Finding a reset's target: it may belong to any tenant (spec §4 rule 2). */
  system: SystemGate;
  hasher: PasswordHasher;
  now: () => Date;
  /** Internal mode gives a new user a one-time password; in proxy mode the proxy signs it in. */
  authMode: AuthMode;
}

/** Spec §5.8 "User management (MSSP side)": platform_admin RW, mssp_admin invites analysts. */
function mayCreate(actor: Role, role: Role): boolean {
  if (actor === 'platform_admin') return true;
  return actor === 'mssp_admin' && role === 'analyst';
}

/**
 * Who may reset whom (spec §5.8): platform_admin any other user; mssp_admin only tenant-side
 * users (it has read-only rights on MSSP-side user management).
 */
function mayReset(actor: Role, target: Role): boolean {
  if (actor === 'platform_admin') return true;
  return actor === 'mssp_admin' && target === 'customer_viewer';
}

/** The audit row's actor: the signed-in user, or the System principal of the console. */
function auditActor(actor: Actor) {
  return actor.kind === 'user'
    ? { actorPrincipal: 'User' as const, actorId: actor.userId }
    : { actorPrincipal: 'System' as const, actorId: 'system:cli' };
}

export function createUserService({ db, system, hasher, now, authMode }: UserServiceDeps) {
  /** The one password reset: a must-change password, every session ended, audited. */
  async function reset(
    actor: Actor,
    target: { id: string; tenant_id: string | null },
    password: string,
  ): Promise<number> {
    const hash = await hasher.hash(password);
    return db.withScope(target.tenant_id, async (tx) => {
      const at = now();
      await setPassword(tx, target.id, hash, true, at);
      const revoked = await revokeUserSessions(tx, target.id, at);
      // Filed under the target's tenant, so that tenant's customers see who reset their user.
      await writeAudit(tx, {
        tenantId: target.tenant_id,
        ...auditActor(actor),
        action: 'auth.password.reset.admin',
        resourceType: 'user',
        resourceId: target.id,
        after: { must_change: true },
        details: { target_tenant_id: target.tenant_id, revoked_sessions: revoked },
      });
      return revoked;
    });
  }

  async function create(
    tx: AppTx,
    actor: Actor,
    input: NewUser & { tenantId: string | null },
  ): Promise<{ user: ManagedUser; password: string | null }> {
    const user = await insertUser(tx, {
      tenant_id: input.tenantId,
      email: input.email,
      display_name: input.display_name ?? null,
      role: input.role,
    });
    const password = authMode === 'internal' ? generatePassword() : null;
    if (password !== null) await setPassword(tx, user.id, await hasher.hash(password), true, now());
    await writeAudit(tx, {
      tenantId: input.tenantId,
      ...auditActor(actor),
      action: 'user.create',
      resourceType: 'user',
      resourceId: user.id,
      after: { email: user.email, role: user.role },
      // Impersonation reaches tenant users only; an MSSP-side row has no tenant to act as.
      actingAs: actor.kind === 'user' && input.tenantId !== null ? actor.actingAs : null,
    });
    return { user, password };
  }

  async function requireTenant(tx: AppTx, tenantId: string): Promise<void> {
    const tenant = await findTenant(tx, tenantId);
    if (!tenant || tenant.state === 'soft-deleted') throw new TenantNotFoundError(tenantId);
  }

  return {
    /** An admin's reset of another user (spec §5.8): the new password is shown once. */
    async resetPassword(
      actor: UserActor,
      targetId: string,
    ): Promise<{ userId: string; password: string; revokedSessions: number }> {
      if (targetId === actor.userId) throw new CannotResetSelfError(targetId);
      const target = await system.withSystem('user.password_reset', (tx) =>
        findAnyUser(tx, targetId),
      );
      if (!target) throw new UserNotFoundError(targetId);
      if (!mayReset(actor.role, target.role))
        throw new UserForbiddenError('Your role does not allow resetting this user');
      const password = generatePassword();
      const revokedSessions = await reset(actor, target, password);
      return { userId: target.id, password, revokedSessions };
    },

    /** `svc auth set-password` (spec §5.10): the operator names the user and the password. */
    async resetPasswordByEmail(email: string, password: string): Promise<{ userId: string }> {
      const normalised = normaliseEmail(email);
      const user = await db.withoutTenant((tx) => findLogin(tx, normalised));
      if (!user) throw new UserNotFoundError(`no user with email ${normalised}`);
      await reset({ kind: 'operator' }, user, password);
      return { userId: user.id };
    },

    /** `svc auth create-admin` and the first start of an empty embedded install. */
    createPlatformAdmin: (email: string, password: string) =>
      createPlatformAdmin(db, hasher, email, password, now()),

    hasNoUsers: () => hasNoUsers(db),

    listMsspUsers(): Promise<ManagedUser[]> {
      return db.withoutTenant(listMsspUsers);
    },

    async createMsspUser(actor: UserActor, input: NewUser) {
      if (!mayCreate(actor.role, input.role))
        throw new UserForbiddenError(`An ${actor.role} may not create a ${input.role}`);
      return db.withoutTenant((tx) => create(tx, actor, { ...input, tenantId: null }));
    },

    listTenantUsers(tenantId: string): Promise<ManagedUser[]> {
      return db.withTenant(tenantId, async (tx) => {
        await requireTenant(tx, tenantId);
        return listTenantUsers(tx, tenantId);
      });
    },

    /** A tenant's users are customer viewers (spec §2.2). */
    createTenantUser(actor: UserActor, tenantId: string, input: Omit<NewUser, 'role'>) {
      return db.withTenant(tenantId, async (tx) => {
        await requireTenant(tx, tenantId);
        return create(tx, actor, { ...input, role: 'customer_viewer', tenantId });
      });
    },

    /** Disables the user and ends its sessions at once. */
    deactivateTenantUser(actor: UserActor, tenantId: string, userId: string): Promise<ManagedUser> {
      return db.withTenant(tenantId, async (tx) => {
        const user = await disableUser(tx, tenantId, userId);
        if (!user) {
          if (await tenantHasUser(tx, tenantId, userId)) throw new AlreadyDeactivatedError(userId);
          throw new UserNotFoundError(userId, 'tenant');
        }
        const revoked = await revokeUserSessions(tx, user.id, now());
        await writeAudit(tx, {
          tenantId,
          ...auditActor(actor),
          action: 'user.deactivate',
          resourceType: 'user',
          resourceId: user.id,
          before: { disabled: false },
          after: { disabled: true },
          actingAs: actor.actingAs,
          details: { revoked_sessions: revoked },
        });
        return user;
      });
    },
  };
}

export type UserService = ReturnType<typeof createUserService>;

/**
 * `svc auth create-admin` and the first start: a platform_admin that must change its password.
 * Outside the service: it runs before anything else exists (no system gate is needed).
 */
export async function createPlatformAdmin(
  db: AppDatabase,
  hasher: PasswordHasher,
  email: string,
  password: string,
  now: Date = new Date(),
): Promise<{ userId: string }> {
  const normalised = normaliseEmail(email);
  const hash = await hasher.hash(password);
  return db.withoutTenant(async (tx) => {
    if (await findLogin(tx, normalised))
      throw new EmailTakenError(`a user with email ${normalised} already exists`);
    const user = await insertUser(tx, {
      tenant_id: null,
      email: normalised,
      role: 'platform_admin',
    });
    await setPassword(tx, user.id, hash, true, now);
    await writeAudit(tx, {
      tenantId: null,
      ...auditActor({ kind: 'operator' }),
      action: 'user.create',
      resourceType: 'user',
      resourceId: user.id,
      after: { email: normalised, role: 'platform_admin' },
    });
    return { userId: user.id };
  });
}

/** True when the install has no MSSP user at all (first start). */
export function hasNoUsers(db: AppDatabase): Promise<boolean> {
  return db.withoutTenant(hasNoMsspUsers);
}
