import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Transaction } from '../../db/tenant-context.ts';

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
export interface SessionRow {
  id: string;
  user_id: string;
  tenant_context: string | null;
  created_at: Date;
  last_seen_at: Date;
  absolute_expiry: Date;
  idle_expiry: Date;
  revoked_at: Date | null;
}

const SESSION_COLUMNS =
  'id, user_id, tenant_context, created_at, last_seen_at, absolute_expiry, idle_expiry, revoked_at';

/** The stored form: hex SHA-256 of the cookie value exactly as issued. */
function hashSessionSecret(secret: string): string {
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

/** The session a cookie names: found by the hash of its secret, through a unique index. */
export async function findSessionBySecret(
  tx: Transaction,
  secret: string,
): Promise<SessionRow | undefined> {
  const { rows } = await tx.query<SessionRow>(
    `SELECT ${SESSION_COLUMNS} FROM sessions WHERE secret_hash = $1`,
    [hashSessionSecret(secret)],
  );
  return rows[0];
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
export function isLive(session: SessionRow | undefined, now: Date): session is SessionRow {
  return (
    session !== undefined &&
    session.revoked_at === null &&
    now < session.absolute_expiry &&
    now < session.idle_expiry
  );
}

/**
 * Slides the idle expiry; written at most once per LAST_SEEN_THROTTLE_MS (spec §5.5 item 3).
 * Returns the session as it now stands, so a caller that keeps it (an event stream) knows the
 * idle deadline this request earned.
 */
export async function touchSession(
  tx: Transaction,
  session: SessionRow,
  now: Date,
): Promise<SessionRow> {
  if (now.getTime() - session.last_seen_at.getTime() < LAST_SEEN_THROTTLE_MS) return session;
  const idle = new Date(
    Math.min(now.getTime() + SESSION_IDLE_MS, session.absolute_expiry.getTime()),
  );
  const { rowCount } = await tx.query(
    `UPDATE sessions SET last_seen_at = $2, idle_expiry = $3
      WHERE id = $1 AND revoked_at IS NULL AND last_seen_at < $2`,
    [session.id, now, idle],
  );
  return rowCount ? { ...session, last_seen_at: now, idle_expiry: idle } : session;
}

export async function revokeSession(tx: Transaction, id: string, now: Date): Promise<void> {
  await tx.query('UPDATE sessions SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL', [
    id,
    now,
  ]);
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
