import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type * as s from 'zapatos/schema';
import { isUuid } from '../../../contracts/uuid.ts';
import type { UserRow } from '../../auth/identity.ts';
import type { InstallTx, SystemTx, Transaction } from '../../db/tenant-context.ts';

export const SESSION_ABSOLUTE_MS = 12 * 60 * 60 * 1000;
export const SESSION_IDLE_MS = 30 * 60 * 1000;
export const LAST_SEEN_THROTTLE_MS = 60 * 1000;
export const SESSION_COOKIE = 'svc_session';

/**
 * 128 random bits, the size of the uuid spec §5.3 puts in the cookie: guessing is hopeless, so
 * a fast hash (not argon2) is the right store, as for the adapter credential (sql/0009, 0011).
 */
const SESSION_SECRET_BYTES = 16;

/** `id` is an internal row id that audit rows may name; the cookie's secret is not stored. */
export type SessionRow = Pick<
  s.sessions.Selectable,
  | 'id'
  | 'user_id'
  | 'tenant_context'
  | 'created_at'
  | 'last_seen_at'
  | 'absolute_expiry'
  | 'idle_expiry'
  | 'revoked_at'
>;

/** What a request's session check yields: the session's user and the session after the touch. */
export interface CheckedSession {
  user: UserRow & { must_change: boolean };
  session: SessionRow;
}

const SESSION_COLUMNS =
  'id, user_id, tenant_context, created_at, last_seen_at, absolute_expiry, idle_expiry, revoked_at';

/** The stored form: hex SHA-256 of the cookie value exactly as issued. */
export function hashSessionSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * The cookie value keeps the shape of spec §5.3 (URL-safe base64 of 16 bytes, no claims
 * inside), but the bytes are a random secret of their own, not the row id (docs/auth.md).
 * Anything but the canonical encoding of exactly 16 bytes is not a session cookie.
 */
export function parseSessionCookie(cookie: string | undefined): string | undefined {
  if (!cookie || !/^[A-Za-z0-9_-]{22}$/.test(cookie)) return undefined;
  const bytes = Buffer.from(cookie, 'base64url');
  if (bytes.length !== SESSION_SECRET_BYTES || bytes.toString('base64url') !== cookie)
    return undefined;
  return cookie;
}

/** Creates the session; the returned secret is the cookie value and is stored nowhere. */
export async function createSession(
  tx: Transaction,
  input: {
    userId: string;
    tenantContext: string | null;
    ip: string | null;
    userAgent: string | null;
    now: Date;
  },
): Promise<{ session: SessionRow; secret: string }> {
  const secret = randomBytes(SESSION_SECRET_BYTES).toString('base64url');
  const absolute = new Date(input.now.getTime() + SESSION_ABSOLUTE_MS);
  const idle = new Date(Math.min(input.now.getTime() + SESSION_IDLE_MS, absolute.getTime()));
  const { rows } = await tx.query<SessionRow>(
    `INSERT INTO sessions (id, secret_hash, user_id, tenant_context, created_at, last_seen_at,
       absolute_expiry, idle_expiry, ip_created, user_agent)
     VALUES ($1, $2, $3, $4, $5, $5, $6, $7, $8, $9)
     RETURNING ${SESSION_COLUMNS}`,
    [
      randomUUID(),
      hashSessionSecret(secret),
      input.userId,
      input.tenantContext,
      input.now,
      absolute,
      idle,
      input.ip,
      input.userAgent?.slice(0, 1024) ?? null,
    ],
  );
  const session = rows[0];
  if (!session) throw new Error('session insert returned no row');
  return { session, secret };
}

const HEX_HASH = /^[0-9a-f]{64}$/;

/**
 * The check as one literal statement, without parameters: the unit of work can then send it in
 * the same round trip as its BEGIN (a simple query may carry several statements; a parameterised
 * one may not). Every value is svc's own making and checked here: a hex digest, an ISO instant
 * and two integer constants, so writing them into the text is safe.
 */
function sessionCheckStatement(hash: string, at: Date): string {
  if (!HEX_HASH.test(hash)) throw new TypeError('a session hash is 64 hex digits');
  const instant = at.toISOString();
  return `SELECT * FROM svc_session_check('${hash}', '${instant}', ${SESSION_IDLE_MS}, ${LAST_SEEN_THROTTLE_MS})`;
}

const ROLE = /^[a-z_]{1,40}$/;

/** What the app believes of a session when it asks the database to confirm it. */
export interface ExpectedSession {
  userId: string;
  role: string;
  tenantContext: string | null;
  mustChange: boolean;
}

/**
 * The check with the app's belief (sql/0025 svc_session_assert), as one literal statement for
 * the unit of work's guard: it raises SV401 for a session no longer live and SV409 for one whose
 * identity changed. Every value is a hex digest, an ISO instant, a constant, a checked uuid, a
 * role name or a boolean, so writing them into the text is safe.
 */
export function sessionAssertStatement(
  secretHash: string,
  at: Date,
  expected: ExpectedSession,
): string {
  const { userId, role, tenantContext, mustChange } = expected;
  if (!HEX_HASH.test(secretHash)) throw new TypeError('a session hash is 64 hex digits');
  if (!isUuid(userId) || (tenantContext !== null && !isUuid(tenantContext)))
    throw new TypeError('a user id and a tenant context are uuids');
  if (!ROLE.test(role)) throw new TypeError(`not a role: ${role}`);
  const context = tenantContext === null ? 'NULL' : `'${tenantContext}'`;
  return (
    `SELECT svc_session_assert('${secretHash}', '${at.toISOString()}', ${SESSION_IDLE_MS}, ` +
    `${LAST_SEEN_THROTTLE_MS}, '${userId}', '${role}', ${context}, ${mustChange})`
  );
}

/**
 * Spec §5.5 for one request in one round trip (sql/0014 svc_session_check): the live session
 * the cookie's secret names, its enabled user, and the idle expiry slid when the last-seen
 * throttle has passed. Undefined for anything the request must refuse.
 */
export async function checkSession(
  tx: InstallTx,
  secret: string,
  at: Date,
): Promise<CheckedSession | undefined> {
  const { rows } = await tx.query<
    Omit<UserRow, 'id' | 'disabled_at'> &
      Omit<SessionRow, 'id' | 'revoked_at'> & { must_change: boolean; session_id: string }
  >(sessionCheckStatement(hashSessionSecret(secret), at));
  const row = rows[0];
  if (!row) return undefined;
  return {
    user: {
      id: row.user_id,
      tenant_id: row.tenant_id,
      email: row.email,
      display_name: row.display_name,
      role: row.role,
      disabled_at: null,
      must_change: row.must_change,
    },
    session: {
      id: row.session_id,
      user_id: row.user_id,
      tenant_context: row.tenant_context,
      created_at: row.created_at,
      last_seen_at: row.last_seen_at,
      absolute_expiry: row.absolute_expiry,
      idle_expiry: row.idle_expiry,
      revoked_at: null,
    },
  };
}

/** Sessions by row id, for re-validating open event streams in one query. */
export async function findSessionsById(
  tx: Transaction,
  ids: readonly string[],
): Promise<SessionRow[]> {
  const { rows } = await tx.query<SessionRow>(
    `SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  return rows;
}

/** Spec §3.2: missing, revoked, or past either expiry is rejected; the row is kept. */
export function isLive<
  S extends Pick<SessionRow, 'revoked_at' | 'absolute_expiry' | 'idle_expiry'>,
>(session: S | undefined, now: Date): session is S {
  return (
    session !== undefined &&
    session.revoked_at === null &&
    now < session.absolute_expiry &&
    now < session.idle_expiry
  );
}

export async function revokeSession(tx: Transaction, id: string, now: Date): Promise<void> {
  await tx.query('UPDATE sessions SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL', [
    id,
    now,
  ]);
}

/**
 * Sessions live at `now` across the install, for the `svc_sessions_live` gauge (`sessions` has
 * no RLS). Only live rows can pass `idle_expiry > now`, at most 30 minutes of sign-ins.
 */
export async function countLiveSessions(tx: InstallTx, now: Date): Promise<number> {
  const { rows } = await tx.query<{ live: number }>(
    `SELECT count(*)::int AS live FROM sessions
      WHERE revoked_at IS NULL AND idle_expiry > $1 AND absolute_expiry > $1`,
    [now],
  );
  return rows[0]?.live ?? 0;
}

/**
 * Deletes up to `limit` sessions that ended before `before` and returns how many (the retention
 * purge, docs/auth.md "Sessions"). A session ends at the first of its revocation, its idle expiry
 * as last slid and its absolute expiry; a live one never qualifies, whatever its age. A
 * session ends no earlier than it was created, so the candidates are found through
 * sessions_created_at_idx (sql/0027) and the end decides. Through the system gate: svc_app
 * may not DELETE sessions.
 */
export async function purgeEndedSessions(
  tx: SystemTx,
  before: Date,
  limit: number,
): Promise<number> {
  const { rowCount } = await tx.query(
    `DELETE FROM sessions
      WHERE id IN (SELECT id FROM sessions
                    WHERE created_at < $1
                      AND least(revoked_at, idle_expiry, absolute_expiry) < $1
                    LIMIT $2)`,
    [before, limit],
  );
  return rowCount ?? 0;
}
