import type { UserRow } from '../../auth/identity.ts';
import type { Transaction } from '../../db/tenant-context.ts';

export interface CredentialRow {
  password_hash: string;
  must_change: boolean;
  consecutive_failures: number;
  first_failure_at: Date | null;
  locked_until: Date | null;
}

export type LoginRecord = UserRow & { credential: CredentialRow | null };

const USER_COLUMNS = 'u.id, u.tenant_id, u.email, u.display_name, u.role, u.disabled_at';

/**
 * The one normalisation of an address someone types to sign in or that an operator names
 * (login, the per-email rate limit, the proxy's email header, the CLI): surrounding whitespace
 * dropped, then A–Z lower-cased. New addresses must already be in this canonical form
 * (contracts/email.ts refuses the rest), so what was created is what a sign-in finds. Only
 * ASCII is folded, and no NFKC: stored addresses are ASCII, and folding the Kelvin sign,
 * full-width letters or other compatibility forms onto them would only let visibly different
 * input reach the same account.
 */
export function normaliseEmail(email: string): string {
  return email.trim().replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

/**
 * Finds a user of any tenant by email before its tenant is known, through the SELECT-only
 * policy login_lookup (sql/0007): the transaction names the one email it may see.
 */
export async function findLogin(tx: Transaction, email: string): Promise<LoginRecord | undefined> {
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
export async function findUser(
  tx: Transaction,
  id: string,
): Promise<(UserRow & { must_change: boolean }) | undefined> {
  const { rows } = await tx.query<UserRow & { must_change: boolean | null }>(
    `SELECT ${USER_COLUMNS}, c.must_change
       FROM users u LEFT JOIN password_credentials c ON c.user_id = u.id
      WHERE u.id = $1`,
    [id],
  );
  const row = rows[0];
  return row ? { ...row, must_change: row.must_change ?? false } : undefined;
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
