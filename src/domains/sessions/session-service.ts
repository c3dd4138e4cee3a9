// Sessions: signing in and out, the per-request session check (spec §5.5), the lockout, and
// a user's own password change; session rows are the sessions repository's.
import { type Identity, identityOf } from '../../auth/identity.ts';
import type { HashPlace, PasswordHasher } from '../../auth/passwords.ts';
import type { AuthMode } from '../../config/index.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { Transaction } from '../../db/tenant-context.ts';
import { type Metrics, NO_METRICS } from '../../metrics/metrics.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { DomainError } from '../domain-error.ts';
import { signInSuspended, tenantSuspended } from '../tenants/tenant-suspension.ts';
import {
  countFailure,
  findLogin,
  findUser,
  lockCredential,
  normaliseEmail,
  recordSignIn,
  revokeUserSessions,
  setPassword,
} from '../users/user-repository.ts';
import { createSessionCache, type KnownSession } from './session-cache.ts';
import {
  checkSession,
  createSession,
  hashSessionSecret,
  revokeSession,
  type SessionRow,
  sessionAssertStatement,
} from './session-repository.ts';

/** How long a checked session may be acted on before the database has confirmed it again. */
export const KNOWN_SESSION_TTL_MS = 30_000;
const KNOWN_SESSIONS_MAX = 10_000;

/**
 * A read that went ahead on a recently checked session, which the database then refused:
 * `expired` when the session is no longer live (revoked, past an expiry, its user disabled),
 * `changed` when its user's role, tenant or password obligation changed since.
 */
export class SessionRefusedError extends DomainError {
  override name = 'SessionRefusedError';
  readonly code: 'session_expired' | 'session_changed';
  constructor(readonly reason: 'expired' | 'changed') {
    super(`session ${reason}`);
    this.code = reason === 'expired' ? 'session_expired' : 'session_changed';
  }
}

export const LOCKOUT_THRESHOLD = 10;
export const LOCKOUT_WINDOW_MS = 15 * 60 * 1000;
export const LOCKOUT_DURATION_MS = 15 * 60 * 1000;

export type LoginResult =
  /** `secret` is the cookie value; only its hash is stored. */
  | { kind: 'ok'; identity: Identity; session: SessionRow; secret: string }
  | { kind: 'invalid' }
  | { kind: 'locked'; unlockAt: Date }
  /** Right password, but the user's tenant is suspended (docs/operations.md "Suspension"): no
   * session. */
  | { kind: 'suspended' };

export type ChangeResult =
  | { kind: 'ok'; revokedSessions: number }
  | { kind: 'wrong_password' }
  | { kind: 'unchanged' };

export interface AuthServiceDeps {
  db: AppDatabase;
  hasher: PasswordHasher;
  now: () => Date;
  authMode: AuthMode;
  /** Counts accounts as they become locked (the `svc_lockouts_total` metric). */
  metrics?: Pick<Metrics, 'lockout'>;
}

export function createAuthService({
  db,
  hasher,
  now,
  authMode,
  metrics = NO_METRICS,
}: AuthServiceDeps) {
  const known = createSessionCache({ ttlMs: KNOWN_SESSION_TTL_MS, maxEntries: KNOWN_SESSIONS_MAX });

  /**
   * The read goes ahead on `found` while the unit of work confirms the session in front of its
   * first statement (sql/0025). False when there is no unit to carry the confirmation.
   */
  function confirmInUnit(hash: string, found: KnownSession, at: Date): boolean {
    const { identity, session } = found;
    const statement = sessionAssertStatement(hash, at, {
      userId: identity.user_id,
      role: identity.role,
      tenantContext: session.tenant_context,
      mustChange: identity.must_change,
    });
    return db.guard(
      statement,
      session.tenant_context,
      (error) => {
        const code = (error as { code?: unknown }).code;
        if (code !== 'SV401' && code !== 'SV409') return error as Error;
        known.forget(hash);
        return new SessionRefusedError(code === 'SV401' ? 'expired' : 'changed');
      },
      true,
    );
  }

  async function signIn(
    input: {
      email: string;
      password: string;
      ip: string | null;
      userAgent: string | null;
      trustedDevice?: boolean;
    },
    place: HashPlace,
  ): Promise<LoginResult> {
    const email = normaliseEmail(input.email);
    const record = await db.withoutTenant((tx) => findLogin(tx, email));
    if (!record?.credential || record.disabled_at !== null) {
      await place.verifyDummy(input.password);
      await db.withoutTenant((tx) =>
        writeAudit(tx, {
          tenantId: null,
          actorPrincipal: 'User',
          actorId: record?.id ?? 'anonymous',
          action: 'auth.login.failure',
          resourceType: 'user',
          resourceId: record?.id ?? null,
          details: { reason: 'unknown_email', email, ip: input.ip },
        }),
      );
      return { kind: 'invalid' };
    }
    const user = record;
    const credential = record.credential;
    const audit = (tx: Transaction, action: string, details: Record<string, unknown> = {}) =>
      writeAudit(tx, {
        tenantId: user.tenant_id,
        actorPrincipal: 'User',
        actorId: user.id,
        action,
        resourceType: 'user',
        resourceId: user.id,
        details: { ip: input.ip, ...details },
      });

    // Spec §5.4.3: a running lock refuses even the right password, from a trusted device too
    // (the device cookie buys a place in the hasher, not a way past the lock).
    const lockedUntil = credential.locked_until;
    if (lockedUntil !== null && lockedUntil > now()) {
      await db.withScope(user.tenant_id, (tx) =>
        audit(tx, 'auth.login.failure', { reason: 'locked' }),
      );
      return { kind: 'locked', unlockAt: lockedUntil };
    }

    const verdict = await place.verify(credential.password_hash, input.password);
    if (!verdict.ok) {
      const failed = await db.withScope(user.tenant_id, async (tx) => {
        await audit(tx, 'auth.login.failure', { reason: 'bad_password' });
        const locked = await recordFailure(tx, user.id, now());
        if (!locked) return { kind: 'invalid' } as const;
        await writeAudit(tx, {
          tenantId: user.tenant_id,
          actorPrincipal: 'System',
          actorId: 'system:auth',
          action: 'auth.lockout.triggered',
          resourceType: 'user',
          resourceId: user.id,
          after: { locked_until: locked.toISOString() },
          details: { threshold: LOCKOUT_THRESHOLD },
        });
        return { kind: 'locked', unlockAt: locked } as const;
      });
      // Once the lock has committed: a rolled-back failure locked nothing.
      if (failed.kind === 'locked') metrics.lockout();
      return failed;
    }

    const rehash = verdict.needsRehash ? await place.hash(input.password) : undefined;
    return db.withScope(user.tenant_id, async (tx) => {
      // After the password check: only the password's holder learns of the suspension, and
      // the answer takes as long as any other verified sign-in.
      if (await signInSuspended(tx, user.tenant_id)) {
        await audit(tx, 'auth.login.failure', { reason: 'tenant_suspended' });
        return { kind: 'suspended' } as const;
      }
      const at = now();
      await recordSignIn(tx, user.id, at, rehash);
      const { session, secret } = await createSession(tx, {
        userId: user.id,
        tenantContext: user.tenant_id,
        ip: input.ip,
        userAgent: input.userAgent,
        now: at,
      });
      await audit(tx, 'auth.login.success', {
        session_id: session.id,
        rehashed: rehash !== undefined,
      });
      const identity = identityOf(user, {
        auth_mode: authMode,
        must_change: credential.must_change,
        session_id: session.id,
        via: 'session',
      });
      return { kind: 'ok', identity, session, secret } as const;
    });
  }

  return {
    /**
     * Spec §3.2, §3.3, §5.4, §6.1. Never tells an unknown email from a wrong password.
     * `trustedDevice`: the attempt carries a valid device cookie of this email (docs/auth.md
     * "Device cookie"): it hashes in the device lane, and the account's lockout does not stop
     * it (the password still has to be right); its failures still count towards the lockout.
     * Throws HasherBusyError, before any database work, when its lane of the hasher is full.
     */
    async login(input: {
      email: string;
      password: string;
      ip: string | null;
      userAgent: string | null;
      trustedDevice?: boolean;
    }): Promise<LoginResult> {
      const place = hasher.reserve(input.trustedDevice ? 'device' : 'anonymous');
      try {
        return await signIn(input, place);
      } finally {
        place.release();
      }
    },

    /** Whether an anonymous sign-in would get a place in the hasher now. */
    acceptsAnonymous: () => hasher.admits('anonymous'),

    /**
     * Spec §5.5: the session row found by the cookie's secret decides; a live one slides its
     * idle expiry. The returned session carries the expiries after this request.
     *
     * `confirmLater` (reads only: GET and HEAD, no stream): a session checked in the last
     * KNOWN_SESSION_TTL_MS is returned at once and confirmed by the database in the same round
     * trip as the request's first statement; if it no longer holds, the request fails with
     * SessionRefusedError and none of its statements' results is handed out. The rest of such
     * a request's transaction is READ ONLY: a read that tries to write fails loudly.
     */
    async authenticate(
      secret: string,
      options: { confirmLater?: boolean } = {},
    ): Promise<KnownSession | undefined> {
      const at = now();
      const hash = hashSessionSecret(secret);
      const cached = options.confirmLater ? known.get(hash, at) : undefined;
      if (cached && confirmInUnit(hash, cached, at)) return cached;
      // One statement (sql/0014). Expendable: a request that then fails may drop the
      // last-seen touch with its own work.
      // The check leaves the session's tenant context set (sql/0014): the handler's own
      // queries on that tenant need no set_config round trip.
      const checked = await db.withoutTenant((tx) => checkSession(tx, secret, at), {
        expendable: true,
        opensUnit: true,
        contextAfter: (found) => (found ? found.session.tenant_context : undefined),
      });
      if (!checked) {
        known.forget(hash);
        return undefined;
      }
      const identity = identityOf(checked.user, {
        auth_mode: authMode,
        must_change: checked.user.must_change,
        session_id: checked.session.id,
        via: 'session',
      });
      const found = { identity, session: checked.session };
      // A session that must change its password is one request away from changing: not kept.
      if (checked.user.must_change) known.forget(hash);
      else known.set(hash, found, at);
      return found;
    },

    /**
     * The user a bearer token names, as the row is now: tokens cannot be revoked, the user can
     * (disabled, deleted or re-roled), so every request reads it.
     */
    tokenUser(userId: string, tenantId: string | null) {
      return db.withScope(tenantId, (tx) => findUser(tx, userId), { expendable: true });
    },

    /**
     * The provisioned user the identity proxy vouches for (spec §5.1), by email, and whether
     * their tenant is suspended: in proxy mode there is no session the suspension could revoke,
     * so every customer request checks (docs/operations.md "Suspension"). `email` is the header as
     * `proxyEmail` (in user-repository.ts) accepted it, looked up exactly: never trimmed or
     * otherwise folded.
     */
    proxyUser(email: string) {
      return db.withoutTenant(
        async (tx) => {
          const record = await findLogin(tx, email);
          if (!record) return undefined;
          return { ...record, tenant_suspended: await tenantSuspended(tx, record.tenant_id) };
        },
        { expendable: true },
      );
    },

    /** Revokes only the current session (spec §3.2). */
    async logout(identity: Identity): Promise<void> {
      const sessionId = identity.session_id;
      if (!sessionId) return;
      await db.withScope(identity.tenant_id, async (tx) => {
        await revokeSession(tx, sessionId, now());
        known.forgetSession(sessionId);
        await writeAudit(tx, {
          tenantId: identity.tenant_id,
          actorPrincipal: 'User',
          actorId: identity.user_id,
          action: 'auth.logout',
          resourceType: 'session',
          resourceId: sessionId,
        });
      });
    },

    /** Spec §3.2, §3.3: the changing session stays live, every other one is revoked. */
    async changePassword(identity: Identity, current: string, next: string): Promise<ChangeResult> {
      const record = await db.withoutTenant((tx) => findLogin(tx, identity.email));
      if (!record?.credential) return { kind: 'wrong_password' };
      const verdict = await hasher.verify(record.credential.password_hash, current);
      if (!verdict.ok) return { kind: 'wrong_password' };
      if (current === next) return { kind: 'unchanged' };
      const hash = await hasher.hash(next);
      return db.withScope(identity.tenant_id, async (tx) => {
        const at = now();
        await setPassword(tx, identity.user_id, hash, false, at);
        const revoked = await revokeUserSessions(tx, identity.user_id, at, identity.session_id);
        await writeAudit(tx, {
          tenantId: identity.tenant_id,
          actorPrincipal: 'User',
          actorId: identity.user_id,
          action: 'auth.password.changed',
          resourceType: 'user',
          resourceId: identity.user_id,
          details: { revoked_sessions: revoked },
        });
        return { kind: 'ok', revokedSessions: revoked } as const;
      });
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;

/**
 * Counts one failure in the current 15-minute streak; returns the lock expiry when this
 * failure reached the threshold and set the lock.
 */
async function recordFailure(tx: Transaction, userId: string, at: Date): Promise<Date | undefined> {
  const windowStart = new Date(at.getTime() - LOCKOUT_WINDOW_MS);
  if ((await countFailure(tx, userId, windowStart, at)) < LOCKOUT_THRESHOLD) return undefined;
  return lockCredential(tx, userId, new Date(at.getTime() + LOCKOUT_DURATION_MS), at);
}
