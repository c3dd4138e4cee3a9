import type * as s from 'zapatos/schema';
import type { UserRow } from '../../auth/identity.ts';
import type { Narrowed } from '../../db/rows.ts';
import type { AppTx, InstallTx, SystemTx, TenantTx, Transaction } from '../../db/tenant-context.ts';
import { EmailConfusableError, EmailTakenError, type ManagedUser } from './user-types.ts';

/**
 * SQL on `users` and `password_credentials`, and the one statement that ends a user's sessions
 * (a password reset or a deactivation ends them; the sessions domain builds on users, so the
 * statement lives here rather than make the two domains import each other).
 * `password_credentials` has no RLS: its statements take any transaction.
 */

export type CredentialRow = Pick<
  s.password_credentials.Selectable,
  'password_hash' | 'must_change' | 'consecutive_failures' | 'first_failure_at' | 'locked_until'
>;

export type LoginRecord = UserRow & { credential: CredentialRow | null };

/** Whether the user must change its password (false without a credential row). */
type MustChange = Pick<s.password_credentials.Selectable, 'must_change'>;

/** What the credential watch re-checks of a user. */
export type UserState = Pick<UserRow, 'id' | 'role' | 'tenant_id' | 'disabled_at'> &
  MustChange & {
    /** The lifecycle state of the user's tenant; null for MSSP staff. */
    tenant_state: s.tenants.Selectable['state'] | null;
  };

const USER_COLUMNS = 'u.id, u.tenant_id, u.email, u.display_name, u.role, u.disabled_at';
const MANAGED_COLUMNS = 'id, email, display_name, role, tenant_id, disabled_at, created_at';

/**
 * The one normalisation of an address someone types to sign in or that an operator names
 * (login, the per-email rate limit, the CLI; not the proxy's header, see proxyEmail):
 * surrounding whitespace dropped, then A–Z lower-cased. New addresses must already be in this
 * canonical form (contracts/email.ts refuses the rest), so what was created is what a sign-in
 * finds. Only ASCII is folded, and no NFKC: stored addresses are ASCII, and folding the Kelvin
 * sign, full-width letters or other compatibility forms onto them would only let visibly
 * different input reach the same account.
 */
export function normaliseEmail(email: string): string {
  return email.trim().replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

/**
 * Printable ASCII without space, exactly one `@` with something on each side: every address
 * the API creates has this shape. (The CLI keeps only the users.email CHECK, sql/0003, but an
 * HTTP header cannot carry anything beyond ASCII faithfully anyway.)
 */
const PROXY_EMAIL = /^[!-?A-~]+@[!-?A-~]+$/;

/**
 * The identity proxy's email header as the address to look up, or undefined when the value is
 * not exactly an address (docs/auth.md, proxy mode): nothing is trimmed — a no-break space, a zero-width or
 * control character around or inside the value refuses it instead of signing it in as whoever
 * the rest names. Only A–Z are lower-cased (identity providers forward addresses as the user
 * typed them at sign-up), as for every address svc looks up. Unlike a typed sign-in, nobody
 * can correct a header, and a value the proxy vouches for must name one account unambiguously.
 */
export function proxyEmail(value: string): string | undefined {
  if (value.length > 254 || !PROXY_EMAIL.test(value)) return undefined;
  return value.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

/**
 * Finds a user of any tenant by email before its tenant is known, through the SELECT-only
 * policy login_lookup (sql/0007): the transaction names the one email it may see.
 */
export async function findLogin(tx: InstallTx, email: string): Promise<LoginRecord | undefined> {
  await tx.query(`SELECT set_config('app.login_email', $1, true)`, [email]);
  const { rows } = await tx.query<UserRow & CredentialRow & { has_credential: boolean }>(
    `SELECT ${USER_COLUMNS}, c.user_id IS NOT NULL AS has_credential, c.password_hash,
            c.must_change, c.consecutive_failures, c.first_failure_at, c.locked_until
       FROM users u LEFT JOIN password_credentials c ON c.user_id = u.id
      WHERE u.email = $1`,
    [email],
  );
  await tx.query(`SELECT set_config('app.login_email', '', true)`);
  const row = rows[0];
  if (!row) return undefined;
  const {
    has_credential,
    password_hash,
    must_change,
    consecutive_failures,
    first_failure_at,
    locked_until,
    ...user
  } = row;
  return {
    ...user,
    credential: has_credential
      ? { password_hash, must_change, consecutive_failures, first_failure_at, locked_until }
      : null,
  };
}

/** Loads a user inside the caller's tenant context (RLS hides other tenants' users). */
export async function findUser(tx: AppTx, id: string): Promise<(UserRow & MustChange) | undefined> {
  const { rows } = await tx.query<UserRow & MustChange>(
    `SELECT ${USER_COLUMNS}, coalesce(c.must_change, false) AS must_change
       FROM users u LEFT JOIN password_credentials c ON c.user_id = u.id
      WHERE u.id = $1`,
    [id],
  );
  return rows[0];
}

/** A user of any tenant, for an action whose target may be anywhere (spec §4 rule 2). */
export async function findAnyUser(
  tx: SystemTx,
  id: string,
): Promise<Pick<UserRow, 'id' | 'tenant_id' | 'role'> | undefined> {
  const { rows } = await tx.query<Pick<UserRow, 'id' | 'tenant_id' | 'role'>>(
    'SELECT id, tenant_id, role FROM users WHERE id = $1',
    [id],
  );
  return rows[0];
}

/** The users among `ids` that the transaction's scope shows (RLS hides other tenants'). */
export async function findUserStates(tx: AppTx, ids: readonly string[]): Promise<UserState[]> {
  if (ids.length === 0) return [];
  const { rows } = await tx.query<UserState>(
    `SELECT u.id, u.role, u.tenant_id, u.disabled_at, coalesce(c.must_change, false) AS must_change,
            t.state AS tenant_state
       FROM users u LEFT JOIN password_credentials c ON c.user_id = u.id
            LEFT JOIN tenants t ON t.id = u.tenant_id
      WHERE u.id = ANY($1::uuid[])`,
    [ids],
  );
  return rows;
}

/** MSSP staff (no tenant), by email. */
export async function listMsspUsers(tx: InstallTx): Promise<ManagedUser[]> {
  const { rows } = await tx.query<ManagedUser>(
    `SELECT ${MANAGED_COLUMNS} FROM users WHERE tenant_id IS NULL ORDER BY email`,
  );
  return rows;
}

export async function listTenantUsers(tx: TenantTx, tenantId: string): Promise<ManagedUser[]> {
  const { rows } = await tx.query<ManagedUser>(
    `SELECT ${MANAGED_COLUMNS} FROM users WHERE tenant_id = $1 ORDER BY email`,
    [tenantId],
  );
  return rows;
}

/** True when the install has no MSSP user at all (first start). */
export async function hasNoMsspUsers(tx: InstallTx): Promise<boolean> {
  const { rows } = await tx.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM users WHERE tenant_id IS NULL',
  );
  return rows[0]?.n === 0;
}

/** Inserts a user; a taken or look-alike email is a domain error, not a constraint failure. */
export async function insertUser(
  tx: AppTx,
  input: Pick<s.users.Insertable, 'tenant_id' | 'email' | 'display_name' | 'role'>,
): Promise<ManagedUser> {
  try {
    const { rows } = await tx.query<ManagedUser>(
      `INSERT INTO users (tenant_id, email, display_name, role) VALUES ($1, $2, $3, $4)
       RETURNING ${MANAGED_COLUMNS}`,
      [input.tenant_id ?? null, input.email, input.display_name ?? null, input.role],
    );
    const row = rows[0];
    if (!row) throw new Error('user insert returned no row');
    return row;
  } catch (error) {
    const constraint = (error as { constraint?: string }).constraint;
    if (constraint === 'users_email_key') throw new EmailTakenError(`${input.email} is taken`);
    if (constraint === 'users_email_skeleton_key')
      throw new EmailConfusableError(`a look-alike of ${input.email} exists`);
    throw error;
  }
}

/** Disables an enabled user of the tenant; undefined when there is none by that id. */
export async function disableUser(
  tx: TenantTx,
  tenantId: string,
  id: string,
): Promise<ManagedUser | undefined> {
  const { rows } = await tx.query<ManagedUser>(
    `UPDATE users SET disabled_at = now(), updated_at = now()
      WHERE id = $1 AND tenant_id = $2 AND disabled_at IS NULL RETURNING ${MANAGED_COLUMNS}`,
    [id, tenantId],
  );
  return rows[0];
}

/** Whether the tenant has a user by that id, enabled or not. */
export async function tenantHasUser(tx: TenantTx, tenantId: string, id: string): Promise<boolean> {
  const { rowCount } = await tx.query('SELECT 1 FROM users WHERE id = $1 AND tenant_id = $2', [
    id,
    tenantId,
  ]);
  return (rowCount ?? 0) > 0;
}

export async function setPassword(
  tx: Transaction,
  userId: string,
  hash: string,
  mustChange: boolean,
  now: Date,
): Promise<void> {
  await tx.query(
    `INSERT INTO password_credentials (user_id, password_hash, must_change, updated_at)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (user_id) DO UPDATE
       SET password_hash = excluded.password_hash, must_change = excluded.must_change,
           updated_at = excluded.updated_at, consecutive_failures = 0, first_failure_at = NULL,
           locked_until = NULL`,
    [userId, hash, mustChange, now],
  );
}

/** A successful sign-in: the failure streak ends, and a stale hash is replaced when given. */
export async function recordSignIn(
  tx: Transaction,
  userId: string,
  at: Date,
  rehash: string | undefined,
): Promise<void> {
  await tx.query(
    `UPDATE password_credentials
        SET consecutive_failures = 0, first_failure_at = NULL, locked_until = NULL,
            last_used_at = $2, password_hash = coalesce($3, password_hash)
      WHERE user_id = $1`,
    [userId, at, rehash ?? null],
  );
}

/**
 * Counts one failure in the streak that started after `windowStart` (an older streak restarts
 * at 1); returns the streak's length. One statement, so concurrent failures cannot undercount.
 */
export async function countFailure(
  tx: Transaction,
  userId: string,
  windowStart: Date,
  at: Date,
): Promise<number> {
  const { rows } = await tx.query<{
    failures: s.password_credentials.Selectable['consecutive_failures'];
  }>(
    `UPDATE password_credentials
        SET consecutive_failures = CASE WHEN first_failure_at IS NULL OR first_failure_at <= $2
                                        THEN 1 ELSE consecutive_failures + 1 END,
            first_failure_at = CASE WHEN first_failure_at IS NULL OR first_failure_at <= $2
                                    THEN $3 ELSE first_failure_at END
      WHERE user_id = $1
      RETURNING consecutive_failures AS failures`,
    [userId, windowStart, at],
  );
  return rows[0]?.failures ?? 0;
}

/**
 * Locks the credential until `until` unless a lock is already running; returns the lock set,
 * so only one of two racing threshold crossings sets (and audits) it.
 */
export async function lockCredential(
  tx: Transaction,
  userId: string,
  until: Date,
  at: Date,
): Promise<Date | undefined> {
  const { rows } = await tx.query<
    Narrowed<Pick<s.password_credentials.Selectable, 'locked_until'>, { locked_until: Date }>
  >(
    `UPDATE password_credentials SET locked_until = $2
      WHERE user_id = $1 AND (locked_until IS NULL OR locked_until <= $3)
      RETURNING locked_until`,
    [userId, until, at],
  );
  return rows[0]?.locked_until;
}

/** Revokes the user's live sessions except `keep`; returns how many were revoked. */
export async function revokeUserSessions(
  tx: Transaction,
  userId: string,
  now: Date,
  keep: string | null = null,
): Promise<number> {
  const { rowCount } = await tx.query(
    `UPDATE sessions SET revoked_at = $2
      WHERE user_id = $1 AND revoked_at IS NULL AND ($3::uuid IS NULL OR id <> $3)`,
    [userId, now, keep],
  );
  return rowCount ?? 0;
}

/**
 * Every MSSP platform_admin row, enabled or not, locked in id order until the transaction
 * ends. Each change that could remove a platform_admin takes these locks first and in this
 * order, so two admins disabling or demoting each other wait for one another (no deadlock),
 * and the second sees the first's result.
 */
export async function lockPlatformAdmins(
  tx: InstallTx,
): Promise<Pick<UserRow, 'id' | 'disabled_at'>[]> {
  const { rows } = await tx.query<Pick<UserRow, 'id' | 'disabled_at'>>(
    `SELECT id, disabled_at FROM users
      WHERE tenant_id IS NULL AND role = 'platform_admin' ORDER BY id FOR UPDATE`,
  );
  return rows;
}

/** An MSSP-side user (no tenant), locked until the transaction ends; customers are not found. */
export async function lockMsspUser(tx: InstallTx, id: string): Promise<ManagedUser | undefined> {
  const { rows } = await tx.query<ManagedUser>(
    `SELECT ${MANAGED_COLUMNS} FROM users WHERE id = $1 AND tenant_id IS NULL FOR UPDATE`,
    [id],
  );
  return rows[0];
}

/** Sets or clears an MSSP-side user's disabled_at; returns the row as it is now. */
export async function setMsspUserDisabled(
  tx: InstallTx,
  id: string,
  disabledAt: Date | null,
): Promise<ManagedUser> {
  const { rows } = await tx.query<ManagedUser>(
    `UPDATE users SET disabled_at = $2, updated_at = now()
      WHERE id = $1 AND tenant_id IS NULL RETURNING ${MANAGED_COLUMNS}`,
    [id, disabledAt],
  );
  const row = rows[0];
  if (!row) throw new Error('MSSP user update returned no row');
  return row;
}

export async function setMsspUserRole(
  tx: InstallTx,
  id: string,
  role: 'platform_admin' | 'mssp_admin' | 'analyst',
): Promise<ManagedUser> {
  const { rows } = await tx.query<ManagedUser>(
    `UPDATE users SET role = $2, updated_at = now()
      WHERE id = $1 AND tenant_id IS NULL RETURNING ${MANAGED_COLUMNS}`,
    [id, role],
  );
  const row = rows[0];
  if (!row) throw new Error('MSSP user update returned no row');
  return row;
}
