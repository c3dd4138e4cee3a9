import type { PasswordHasher } from '../../auth/passwords.ts';
import type { AppDatabase } from '../../db/pools.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { revokeUserSessions } from '../sessions/session-repository.ts';
import { findLogin, normaliseEmail, setPassword } from './user-repository.ts';

/**
 * Operator actions run from the command line on the installation itself (spec §5.10): the
 * actor is the System principal `system:cli`, not a signed-in user.
 */
export class OperatorError extends Error {
  override name = 'OperatorError';
}

/** `svc auth set-password`: writes the credential, sets must_change, revokes sessions. */
export async function setPasswordAsOperator(
  db: AppDatabase,
  hasher: PasswordHasher,
  email: string,
  password: string,
  now: Date = new Date(),
): Promise<{ userId: string }> {
  const normalised = normaliseEmail(email);
  const user = await db.withoutTenant((tx) => findLogin(tx, normalised));
  if (!user) throw new OperatorError(`no user with email ${normalised}`);
  const hash = await hasher.hash(password);
  await db.withScope(user.tenant_id, async (tx) => {
    await setPassword(tx, user.id, hash, true, now);
    const revoked = await revokeUserSessions(tx, user.id, now);
    await writeAudit(tx, {
      tenantId: user.tenant_id,
      actorPrincipal: 'System',
      actorId: 'system:cli',
      action: 'auth.password.reset.admin',
      resourceType: 'user',
      resourceId: user.id,
      after: { must_change: true },
      details: { revoked_sessions: revoked },
    });
  });
  return { userId: user.id };
}

/** `svc auth create-admin` and the first start: a platform_admin that must change its password. */
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
    const existing = await findLogin(tx, normalised);
    if (existing) throw new OperatorError(`a user with email ${normalised} already exists`);
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO users (email, role) VALUES ($1, 'platform_admin') RETURNING id`,
      [normalised],
    );
    const userId = rows[0]?.id;
    if (!userId) throw new Error('user insert returned no id');
    await setPassword(tx, userId, hash, true, now);
    await writeAudit(tx, {
      tenantId: null,
      actorPrincipal: 'System',
      actorId: 'system:cli',
      action: 'user.create',
      resourceType: 'user',
      resourceId: userId,
      after: { email: normalised, role: 'platform_admin' },
    });
    return { userId };
  });
}

/** True when the install has no MSSP user at all (first start). */
export async function hasNoUsers(db: AppDatabase): Promise<boolean> {
  const { rows } = await db.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM users WHERE tenant_id IS NULL',
  );
  return rows[0]?.n === 0;
}
