import {
  type Credential,
  type CredentialEnd,
  expiryAt,
  hardDeadline,
} from '../../auth/credential.ts';
import type { AuthMode } from '../../config/index.ts';
import type { AppDatabase } from '../../db/pools.ts';
import { readEachTenant } from '../../db/tenant-batch.ts';
import { findUserStates, type UserState } from '../users/user-repository.ts';
import { findSessionStates, type SessionState } from './credential-watch-repository.ts';
import { isLive } from './session-repository.ts';

/**
 * How often open credentials are re-checked against the database anyway. Revocations reach
 * open streams at once through their notices (sql/0027, `revoked`); this pass is the backstop
 * should a notice path ever fail. Expiry needs no pass: a timer per credential fires at its
 * deadline.
 */
export const CREDENTIAL_RECHECK_MS = 5_000;

/** Timers cannot be longer than this (about 24.8 days); a later deadline re-arms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** One watched credential, for as long as the work that holds it lasts. */
export interface CredentialLease {
  /** Resolves once the credential no longer holds, with why. */
  readonly ended: Promise<CredentialEnd>;
  /** The end if it has come, judged now: a passed hard deadline counts before its timer fires. */
  check(): CredentialEnd | undefined;
  /**
   * Resolves once the credential is not in doubt: at once, except from `watch` until its
   * first check and from a revocation notice naming it (or a lost LISTEN connection) until
   * the database has been read again. Nothing is written to its holder before (docs/auth.md, open event streams).
   */
  settled(): Promise<void>;
  /** Stops watching (the work ended for another reason). */
  release(): void;
}

/** What a revocation notice names (src/domains/events/notice.ts, sql/0027). */
export interface RevocationHint {
  kind: 'session' | 'user' | 'tenant';
  id: string;
}

export interface CredentialWatch {
  /**
   * Starts watching. The lease is in doubt until one check of its own has read the database
   * after this call: a revocation committed between the request's check and this call sent
   * its notice before the lease existed, and that read sees it instead.
   */
  watch(credential: Credential): CredentialLease;
  /**
   * A revocation notice: every lease it may concern is put in doubt now, synchronously, and
   * re-checked at once; a forged or irrelevant notice only costs that re-check.
   */
  revoked(hint: RevocationHint): void;
  /** Notices may have been lost (the LISTEN connection was down): every lease is re-checked. */
  recheckAll(): void;
  /** Resolves once no lease that is in doubt now is still in doubt. */
  settled(): Promise<void>;
  /** doubted: leases held back now until a re-check has read the database. */
  status(): { watched: number; passes: number; doubted: number };
}

export interface CredentialWatchOptions {
  db: AppDatabase;
  now: () => Date;
  recheckMs?: number;
  /**
   * The install's auth mode: a forced password change ends credentials only in internal mode,
   * as the request middleware judges (src/http/authenticate.ts). Default internal.
   */
  authMode?: AuthMode;
  /** A re-check that could not read the database, for logging; the watched credentials stay. */
  onError?: (error: unknown) => void;
}

class Lease implements CredentialLease {
  readonly ended: Promise<CredentialEnd>;
  credential: Credential;
  end: CredentialEnd | undefined;
  timer: NodeJS.Timeout | undefined;
  /** Counts the doubts cast: a re-check clears only the doubts cast before it read. */
  doubts = 0;
  #doubt: { promise: Promise<void>; resolve: () => void } | undefined;
  #resolve: (end: CredentialEnd) => void = () => undefined;
  readonly #watch: Watch;

  constructor(watch: Watch, credential: Credential) {
    this.#watch = watch;
    this.credential = credential;
    this.ended = new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }

  check(): CredentialEnd | undefined {
    if (!this.end) {
      const expired = expiryAt(this.credential, this.#watch.now());
      if (expired) this.finish(expired);
    }
    return this.end;
  }

  settled(): Promise<void> {
    return this.#doubt?.promise ?? Promise.resolve();
  }

  /** Holds writes back until a re-check that starts after this call has read the database. */
  doubt(): void {
    if (this.end) return;
    this.doubts++;
    if (this.#doubt) return;
    this.#watch.doubting(this);
    let resolve: () => void = () => undefined;
    const promise = new Promise<void>((r) => {
      resolve = r;
    });
    this.#doubt = { promise, resolve };
  }

  /** A re-check that started when `doubts` was this count found the credential valid. */
  confirm(doubts: number): void {
    if (doubts === this.doubts) this.#lift();
  }

  finish(end: CredentialEnd): void {
    if (this.end) return;
    this.end = end;
    this.#resolve(end);
    this.#lift();
    this.release();
  }

  #lift(): void {
    const doubt = this.#doubt;
    this.#doubt = undefined;
    this.#watch.lifted(this);
    doubt?.resolve();
  }

  release(): void {
    this.#watch.forget(this);
  }
}

/**
 * One per process: every credential held open (by an event stream) is re-checked in one pass
 * per interval, not one query per holder. A pass is two transactions at once: all watched
 * sessions and the MSSP staff in one (no tenant context), and the customer users of every
 * tenant in the other, one query per tenant under its own context (RLS hides them otherwise),
 * all sent in one round trip (readEachTenant). Its cost follows the number of tenants with
 * open streams, not the number of streams. Whatever the request middleware
 * would refuse now (a revoked or expired session, a disabled or re-roled user, a forced
 * password change, a customer whose tenant is suspended) ends the credential's leases with the
 * reason.
 */
export function createCredentialWatch(options: CredentialWatchOptions): CredentialWatch {
  return new Watch(options);
}

class Watch implements CredentialWatch {
  readonly now: () => Date;
  readonly #db: AppDatabase;
  readonly #recheckMs: number;
  readonly #mustChangeEnds: boolean;
  readonly #onError: (error: unknown) => void;
  readonly #leases = new Set<Lease>();
  /** The leases a revocation notice may concern, by the session, user or tenant it names. */
  readonly #bySession = new LeaseIndex();
  readonly #byUser = new LeaseIndex();
  readonly #byTenant = new LeaseIndex();
  /** Leases in doubt now: what settled() waits for, without looking at the others. */
  readonly #doubted = new Set<Lease>();
  readonly #suspects = new Set<Lease>();
  #interval: NodeJS.Timeout | undefined;
  #running = false;
  #passes = 0;

  constructor(options: CredentialWatchOptions) {
    this.#db = options.db;
    this.now = options.now;
    this.#recheckMs = options.recheckMs ?? CREDENTIAL_RECHECK_MS;
    this.#mustChangeEnds = (options.authMode ?? 'internal') === 'internal';
    this.#onError = options.onError ?? (() => undefined);
  }

  watch(credential: Credential): CredentialLease {
    const lease = new Lease(this, credential);
    this.#leases.add(lease);
    this.#index(lease, credential, 'add');
    this.#arm(lease);
    if (lease.check()) return lease;
    this.#suspect(lease);
    // Idle while nothing is watched: no timer keeps the process awake or queries for nobody.
    if (!this.#interval) {
      this.#interval = setInterval(() => void this.#pass(), this.#recheckMs);
      this.#interval.unref();
    }
    return lease;
  }

  revoked(hint: RevocationHint): void {
    const index =
      hint.kind === 'session'
        ? this.#bySession
        : hint.kind === 'user'
          ? this.#byUser
          : this.#byTenant;
    for (const lease of index.get(hint.id)) this.#suspect(lease);
  }

  recheckAll(): void {
    for (const lease of this.#leases) this.#suspect(lease);
  }

  async settled(): Promise<void> {
    await Promise.all([...this.#doubted].map((lease) => lease.settled()));
  }

  doubting(lease: Lease): void {
    if (this.#leases.has(lease)) this.#doubted.add(lease);
  }

  lifted(lease: Lease): void {
    this.#doubted.delete(lease);
  }

  /**
   * Puts the lease in doubt now and re-checks it soon: the doubts cast while one batch of
   * notices is read (pg hands them over synchronously) share one re-check.
   */
  #suspect(lease: Lease): void {
    lease.doubt();
    const first = this.#suspects.size === 0;
    this.#suspects.add(lease);
    if (!first) return;
    queueMicrotask(() => {
      const leases = [...this.#suspects];
      this.#suspects.clear();
      void this.#run(leases);
    });
  }

  status(): { watched: number; passes: number; doubted: number } {
    return { watched: this.#leases.size, passes: this.#passes, doubted: this.#doubted.size };
  }

  forget(lease: Lease): void {
    clearTimeout(lease.timer);
    if (!this.#leases.delete(lease)) return;
    this.#index(lease, lease.credential, 'delete');
    this.#doubted.delete(lease);
    if (this.#leases.size === 0 && this.#interval) {
      clearInterval(this.#interval);
      this.#interval = undefined;
    }
  }

  /** A credential's session, user and tenant never change while it is watched. */
  #index(lease: Lease, credential: Credential, op: 'add' | 'delete'): void {
    if (credential.kind === 'session') this.#bySession[op](credential.sessionId, lease);
    this.#byUser[op](credential.userId, lease);
    if (credential.userTenant !== null) this.#byTenant[op](credential.userTenant, lease);
  }

  /**
   * A timer at the next deadline. At a hard one the lease ends; at a session's idle expiry
   * the row decides at once (other requests may have slid it), so a stream does not outlive
   * it by more than one query. If the clock says the deadline has not come (it was moved),
   * the timer re-arms.
   */
  #arm(lease: Lease): void {
    clearTimeout(lease.timer);
    const { credential } = lease;
    const hard = hardDeadline(credential);
    const idle = credential.kind === 'session' ? credential.idleExpiry : undefined;
    const next = [hard, idle].filter((d) => d !== undefined).sort((a, b) => +a - +b)[0];
    if (next === undefined) return;
    const ms = Math.min(Math.max(next.getTime() - this.now().getTime(), 0), MAX_TIMER_MS);
    lease.timer = setTimeout(() => {
      if (lease.check()) return;
      if (idle !== undefined && this.now() >= idle) void this.#run([lease]);
      else this.#arm(lease);
    }, ms);
    lease.timer.unref();
  }

  #pass(): Promise<void> {
    if (this.#running) return Promise.resolve();
    this.#running = true;
    return this.#run([...this.#leases]).finally(() => {
      this.#running = false;
      this.#passes++;
    });
  }

  async #run(leases: Lease[]): Promise<void> {
    try {
      await this.#recheck(leases);
    } catch (error) {
      // The database is unreachable, so nobody can revoke anything either; hard deadlines
      // still hold, a lease in doubt stays paused, and the next pass judges whatever
      // happened meanwhile.
      this.#onError(error);
    }
  }

  async #recheck(leases: Lease[]): Promise<void> {
    // Only doubts cast before the reads below can be cleared by what they find.
    const doubts = new Map(leases.map((lease) => [lease, lease.doubts]));
    const sessionIds = new Set<string>();
    const usersByScope = new Map<string | null, Set<string>>([[null, new Set()]]);
    for (const { credential } of leases) {
      if (credential.kind === 'session') sessionIds.add(credential.sessionId);
      const scope = usersByScope.get(credential.userTenant) ?? new Set<string>();
      scope.add(credential.userId);
      usersByScope.set(credential.userTenant, scope);
    }
    const sessions = new Map<string, SessionState>();
    const users = new Map<string, UserState>();
    const tenantScopes = [...usersByScope.keys()].filter((scope) => scope !== null);
    // Sessions and MSSP staff need no tenant context; each tenant's customers are read after a
    // set_config of that tenant, every tenant in one read-only transaction and one round trip
    // (src/db/tenant-batch.ts), so RLS still confines every read to one tenant. Either read
    // failing fails the pass as a whole (the leases stay in doubt).
    const [install, perTenant] = await Promise.all([
      this.#db.withoutTenant(async (tx) => ({
        sessions: await findSessionStates(tx, [...sessionIds]),
        staff: await findUserStates(tx, [...(usersByScope.get(null) ?? [])]),
      })),
      readEachTenant(this.#db.pool, tenantScopes, (tx, tenantId) =>
        findUserStates(tx, [...(usersByScope.get(tenantId) ?? [])]),
      ),
    ]);
    for (const row of install.sessions) sessions.set(row.id, row);
    for (const row of [...install.staff, ...perTenant.flat()]) users.set(row.id, row);
    const now = this.now();
    for (const lease of leases) {
      const { credential } = lease;
      const session = credential.kind === 'session' ? sessions.get(credential.sessionId) : null;
      const end = judge(credential, users.get(credential.userId), session, now, {
        mustChangeEnds: this.#mustChangeEnds,
      });
      if (end) {
        lease.finish(end);
        continue;
      }
      // Other requests of the session may have slid its idle expiry; the stream follows (a
      // pass over 10,000 unchanged sessions re-arms no timer).
      if (
        session &&
        credential.kind === 'session' &&
        +session.idle_expiry !== +credential.idleExpiry
      ) {
        lease.credential = { ...credential, idleExpiry: session.idle_expiry };
        this.#arm(lease);
      }
      lease.confirm(doubts.get(lease) ?? -1);
    }
  }
}

/** Leases by one key (a session, user or tenant id), as a revocation notice names them. */
class LeaseIndex {
  readonly #map = new Map<string, Set<Lease>>();

  get(key: string): Lease[] {
    const leases = this.#map.get(key);
    return leases ? [...leases] : [];
  }

  add(key: string, lease: Lease): void {
    const leases = this.#map.get(key);
    if (leases) leases.add(lease);
    else this.#map.set(key, new Set([lease]));
  }

  delete(key: string, lease: Lease): void {
    const leases = this.#map.get(key);
    if (!leases) return;
    leases.delete(lease);
    if (leases.size === 0) this.#map.delete(key);
  }
}

/**
 * What the request middleware would say about this credential now. `session` is null for
 * credentials that are not sessions and undefined for a session whose row is gone.
 */
function judge(
  credential: Credential,
  user: UserState | undefined,
  session: SessionState | null | undefined,
  now: Date,
  rules: { mustChangeEnds: boolean },
): CredentialEnd | undefined {
  if (!user || user.disabled_at !== null) return { event: 'revoked', reason: 'user_disabled' };
  if (user.role !== credential.role || user.tenant_id !== credential.userTenant)
    return { event: 'revoked', reason: 'role_changed' };
  // A suspension revokes the customers' sessions, but proxy mode has none: the middleware
  // refuses their next request (403 tenant_suspended), and their open streams end here.
  if (user.tenant_id !== null && user.tenant_state === 'suspended')
    return { event: 'revoked', reason: 'tenant_suspended' };
  if (session !== null) {
    if (!session || session.revoked_at !== null)
      return { event: 'revoked', reason: 'session_revoked' };
    if (!isLive(session, now)) return { event: 'expired', reason: 'session_expired' };
  }
  // Proxy mode never asks for a password change, not even of a token's holder: the proxy
  // authenticates, and the password set for the move to internal mode (spec §5.10) is not
  // used until then.
  if (rules.mustChangeEnds && user.must_change)
    return { event: 'revoked', reason: 'password_change_required' };
  return expiryAt(credential, now);
}
