import type { InstallTx } from '../../db/tenant-context.ts';
import type { SessionRow } from './session-repository.ts';

/** What the credential watch judges of a session: revoked, and its two expiries. */
export type SessionState = Pick<
  SessionRow,
  'id' | 'revoked_at' | 'absolute_expiry' | 'idle_expiry'
>;

/**
 * The watched sessions' state, and nothing else: a pass over 10,000 open streams reads 10,000
 * rows every 5 s, so the columns the watch does not judge (user, tenant context, creation and
 * last-seen times) are not carried over and parsed (`sessions` has no RLS).
 */
export async function findSessionStates(
  tx: InstallTx,
  ids: readonly string[],
): Promise<SessionState[]> {
  if (ids.length === 0) return [];
  const { rows } = await tx.query<SessionState>(
    'SELECT id, revoked_at, absolute_expiry, idle_expiry FROM sessions WHERE id = ANY($1::uuid[])',
    [ids],
  );
  return rows;
}
