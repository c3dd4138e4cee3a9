import { randomUUID } from 'node:crypto';
import type { Transaction } from '../db/tenant-context.ts';

export const SESSION_ABSOLUTE_MS = 12 * 60 * 60 * 1000;
export const SESSION_IDLE_MS = 30 * 60 * 1000;
export const LAST_SEEN_THROTTLE_MS = 60 * 1000;
export const SESSION_COOKIE = 'svc_session';

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

/** Cookie value: URL-safe base64 of the uuid's 16 bytes (spec §5.3); no claims inside. */
export function encodeSessionId(id: string): string {
  return Buffer.from(id.replaceAll('-', ''), 'hex').toString('base64url');
}

/** Anything but exactly 16 bytes of URL-safe base64 is not a session id. */
export function decodeSessionId(cookie: string | undefined): string | undefined {
  if (!cookie || !/^[A-Za-z0-9_-]{22}$/.test(cookie)) return undefined;
  const hex = Buffer.from(cookie, 'base64url').toString('hex');
  if (hex.length !== 32 || encodeSessionId(formatUuid(hex)) !== cookie) return undefined;
  return formatUuid(hex);
}

function formatUuid(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export async function createSession(
  tx: Transaction,
  input: {
    userId: string;
    tenantContext: string | null;
    ip: string | null;
    userAgent: string | null;
    now: Date;
  },
): Promise<SessionRow> {
  const absolute = new Date(input.now.getTime() + SESSION_ABSOLUTE_MS);
  const idle = new Date(Math.min(input.now.getTime() + SESSION_IDLE_MS, absolute.getTime()));
  const { rows } = await tx.query<SessionRow>(
    `INSERT INTO sessions (id, user_id, tenant_context, created_at, last_seen_at, absolute_expiry,
       idle_expiry, ip_created, user_agent)
     VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8)
     RETURNING id, user_id, tenant_context, created_at, last_seen_at, absolute_expiry, idle_expiry, revoked_at`,
    [
      randomUUID(),
      input.userId,
      input.tenantContext,
      input.now,
      absolute,
      idle,
      input.ip,
      input.userAgent?.slice(0, 1024) ?? null,
    ],
  );
  const row = rows[0];
  if (!row) throw new Error('session insert returned no row');
  return row;
}

export async function findSession(tx: Transaction, id: string): Promise<SessionRow | undefined> {
  const { rows } = await tx.query<SessionRow>(
    `SELECT id, user_id, tenant_context, created_at, last_seen_at, absolute_expiry, idle_expiry, revoked_at
       FROM sessions WHERE id = $1`,
    [id],
  );
  return rows[0];
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

/** Slides the idle expiry; written at most once per LAST_SEEN_THROTTLE_MS (spec §5.5 item 3). */
export async function touchSession(tx: Transaction, session: SessionRow, now: Date): Promise<void> {
  if (now.getTime() - session.last_seen_at.getTime() < LAST_SEEN_THROTTLE_MS) return;
  const idle = new Date(
    Math.min(now.getTime() + SESSION_IDLE_MS, session.absolute_expiry.getTime()),
  );
  await tx.query(
    `UPDATE sessions SET last_seen_at = $2, idle_expiry = $3
      WHERE id = $1 AND revoked_at IS NULL AND last_seen_at < $2`,
    [session.id, now, idle],
  );
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
