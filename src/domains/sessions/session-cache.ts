import type { Identity } from '../../auth/identity.ts';
import type { SessionRow } from './session-repository.ts';

/** A session the database confirmed a moment ago, as the request check returned it. */
export interface KnownSession {
  identity: Identity;
  session: SessionRow;
}

interface Entry extends KnownSession {
  /** Epoch ms after which the entry is not used (the TTL, or the session's own expiry). */
  until: number;
}

/**
 * What the app believes of recently checked sessions, by the hash of their secret: a read can
 * then go ahead on that identity while the database confirms it in the same round trip as the
 * read's first statement (sql/0025, unit-of-work guard). Never the authority: a revoked,
 * expired or changed session fails that confirmation whatever this says. Bounded in age (ttlMs,
 * and never past the session's idle or absolute expiry as last seen) and in size (the oldest
 * entries go first).
 */
export function createSessionCache(options: { ttlMs: number; maxEntries: number }) {
  const entries = new Map<string, Entry>();
  return {
    get(hash: string, now: Date): KnownSession | undefined {
      const entry = entries.get(hash);
      if (!entry) return undefined;
      if (now.getTime() >= entry.until) {
        entries.delete(hash);
        return undefined;
      }
      return entry;
    },
    set(hash: string, known: KnownSession, now: Date): void {
      const { session } = known;
      const until = Math.min(
        now.getTime() + options.ttlMs,
        session.idle_expiry.getTime(),
        session.absolute_expiry.getTime(),
      );
      entries.delete(hash);
      entries.set(hash, { ...known, until });
      while (entries.size > options.maxEntries) {
        const oldest = entries.keys().next().value;
        if (oldest === undefined) break;
        entries.delete(oldest);
      }
    },
    forget(hash: string): void {
      entries.delete(hash);
    },
    /** A session this process revoked (a sign-out). */
    forgetSession(sessionId: string): void {
      for (const [hash, entry] of entries) {
        if (entry.session.id === sessionId) entries.delete(hash);
      }
    },
  };
}

export type SessionCache = ReturnType<typeof createSessionCache>;
