import pg from 'pg';
import { clientConfig, type DatabaseTarget } from '../db/target.ts';
import { tenantSessionLocks } from '../domains/provisioning/provisioning-service.ts';

/**
 * One tenant at a time, cluster-wide: a session-level advisory lock per tenant, all of this
 * process's locks held by ONE dedicated direct session (advisory locks are per session and
 * one session holds any number of keys). If the orchestrator dies, PostgreSQL drops the
 * session and every lock with it, so a restarted (or another replica's) orchestrator picks the
 * tenant up where the lifecycle record says it stopped. The API and the adapter heartbeat take
 * the same lock per transaction (tenant-lifecycle.ts lockTenant) before they move a tenant, so
 * no transition lands in the middle of the orchestrator's work.
 *
 * Inside the process a per-tenant mutex keeps tasks apart (the session's advisory locks are
 * re-entrant, so the database cannot): runOnce's tasks, the reconcile pass and the token pass
 * never work on one tenant at once.
 *
 * When the session is lost (backend terminated, network gone) every holder's `signal` aborts:
 * the locks are gone, another orchestrator may already hold the tenant, so the task must stop
 * before its next write (lock-guard.ts). The next acquisition opens a new session.
 */
export interface TenantLocks {
  tryAcquire(tenantId: string): Promise<TenantLockRelease | undefined>;
  close(): Promise<void>;
}

/** Releases the tenant; `signal` aborts if the lock is lost before that (TenantLockLostError). */
export type TenantLockRelease = (() => Promise<void>) & { readonly signal: AbortSignal };

export class TenantLockLostError extends Error {
  readonly code = 'tenant_lock_lost';
  constructor(cause: unknown) {
    super('the tenant lock session was lost; the task stops and is retried on a later pass', {
      cause,
    });
    this.name = 'TenantLockLostError';
  }
}

interface Session {
  client: pg.Client;
  /** The tail of the session's statements: one at a time (pg 9 will not queue them itself). */
  tail: Promise<unknown>;
  lost: AbortController;
}

/** Runs `statement` on the session after the ones already sent. */
function inTurn<T>(session: Session, statement: (client: pg.Client) => Promise<T>): Promise<T> {
  const result = session.tail.then(() => statement(session.client));
  session.tail = result.catch(() => undefined);
  return result;
}

export function createTenantLocks(target: DatabaseTarget): TenantLocks {
  // Direct (clientConfig), never through a transaction pooler: the locks live in the session.
  const config: pg.ClientConfig = {
    ...clientConfig(target, 'app'),
    application_name: 'svc-tenant-locks',
    // A vanished peer (no FIN) is noticed by TCP keepalive instead of never.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
  let session: Session | undefined;
  let closed: Promise<void> | undefined;
  // The in-process mutex: a tenant is in here from the start of its acquisition to its release.
  const held = new Set<string>();

  function open(): Session {
    const client = new pg.Client(config);
    const lost = new AbortController();
    const opened: Session = { client, lost, tail: Promise.resolve() };
    const drop = (cause: unknown) => {
      if (session === opened) session = undefined;
      if (lost.signal.aborted) return;
      lost.abort(new TenantLockLostError(cause));
      client.end().catch(() => undefined);
    };
    // A FATAL arriving while no statement runs is an 'error' event: unhandled, it would crash.
    client.on('error', drop);
    client.on('end', () => drop(new Error('tenant lock session ended')));
    inTurn(opened, () => client.connect()).catch(drop);
    return opened;
  }

  async function lockOn(
    current: Session,
    tenantId: string,
  ): Promise<TenantLockRelease | undefined> {
    if (!(await inTurn(current, (c) => tenantSessionLocks.tryLock(c, tenantId)))) return undefined;
    // Taken, but the session died right after: the lock is already gone.
    if (current.lost.signal.aborted) return undefined;
    let released: Promise<void> | undefined;
    const release = () => {
      released ??= (async () => {
        try {
          if (!current.lost.signal.aborted)
            await inTurn(current, (c) => tenantSessionLocks.unlock(c, tenantId));
        } catch {
          // The session failed during the unlock: the lock went with it.
        } finally {
          held.delete(tenantId);
        }
      })();
      return released;
    };
    return Object.assign(release, { signal: current.lost.signal });
  }

  return {
    async tryAcquire(tenantId) {
      if (closed) throw new Error('tenant locks are closed');
      if (held.has(tenantId)) return undefined; // another task of this process has it
      held.add(tenantId);
      try {
        session ??= open();
        const lock = await lockOn(session, tenantId);
        if (!lock) held.delete(tenantId);
        return lock;
      } catch (error) {
        held.delete(tenantId);
        throw error;
      }
    },
    // Idempotent: a runtime stopped by its owner and again by a harness's cleanup must not
    // throw on the second stop.
    close() {
      closed ??= (async () => {
        const last = session;
        session = undefined;
        if (!last) return;
        last.lost.abort(new TenantLockLostError(new Error('tenant locks closed')));
        await last.client.end().catch(() => undefined);
      })();
      return closed;
    },
  };
}
