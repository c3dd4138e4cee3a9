import pg from 'pg';
import { clientConfig, type DatabaseTarget } from '../db/target.ts';
import { TENANT_LOCK_KEY, tenantLockName } from '../domains/tenants/tenant-lifecycle.ts';
import type { OrchestratorDeps } from './context.ts';
import { advanceDecommission, purgeTenant } from './decommission.ts';
import { collectOrphanSecrets } from './orphans.ts';
import { advanceProvisioning } from './provision.ts';
import { reconcileTenant } from './reconcile.ts';
import { refreshAdapterToken } from './token-refresh.ts';
import { advanceUpgrade } from './upgrade.ts';

/**
 * One tenant at a time, cluster-wide: a session-level advisory lock on a dedicated connection.
 * If the orchestrator dies, PostgreSQL drops the connection and the lock with it, so a
 * restarted (or another replica's) orchestrator picks the tenant up where the lifecycle
 * record says it stopped. The API and the adapter heartbeat take the same lock per transaction
 * (lifecycle.ts lockTenant) before they move a tenant, so no transition lands in the middle of
 * the orchestrator's work.
 */
export interface TenantLocks {
  tryAcquire(tenantId: string): Promise<(() => Promise<void>) | undefined>;
  close(): Promise<void>;
}

export function createTenantLocks(target: DatabaseTarget, max: number): TenantLocks {
  const pool = new pg.Pool({ ...clientConfig(target, 'app'), max });
  pool.on('error', () => undefined);
  return {
    async tryAcquire(tenantId) {
      const client = await pool.connect();
      // Held across awaits with no statement running, so a server-side disconnect arrives as
      // an 'error' event that pg-pool does not catch for checked-out clients: it would crash
      // the process. The lock goes with the connection; releasing afterwards is harmless.
      let broken: Error | undefined;
      const onError = (error: Error) => {
        broken = error;
      };
      client.on('error', onError);
      const done = (error?: Error) => {
        client.off('error', onError);
        client.release(error ?? broken);
      };
      try {
        const { rows } = await client.query<{ ok: boolean }>(
          `SELECT pg_try_advisory_lock(${TENANT_LOCK_KEY}) AS ok`,
          [tenantLockName(tenantId)],
        );
        if (!rows[0]?.ok) {
          done();
          return undefined;
        }
      } catch (error) {
        done(error as Error);
        throw error;
      }
      return async () => {
        try {
          await client.query(`SELECT pg_advisory_unlock(${TENANT_LOCK_KEY})`, [
            tenantLockName(tenantId),
          ]);
          done();
        } catch (error) {
          done(error as Error);
        }
      };
    },
    close: () => pool.end(),
  };
}

export interface Orchestrator {
  start(): void;
  /** Look for work now (after an API call that created some). */
  kick(): void;
  /** One pass: starts a task for every tenant that has work and is not locked elsewhere. */
  runOnce(): Promise<void>;
  /** One reconciliation pass over every tenant not locked elsewhere (also run on start and every SVC_RECONCILE_INTERVAL). */
  reconcile(): Promise<void>;
  /** Tasks running in this process. */
  busy(): number;
  /** Resolves when no task is running. */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

interface Candidate {
  id: string;
  kind: 'provision' | 'decommission' | 'purge' | 'upgrade';
}

export function createOrchestrator(
  deps: OrchestratorDeps & { locks: TenantLocks; concurrency: number },
): Orchestrator {
  const running = new Map<string, Promise<void>>();
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let tokenTimer: NodeJS.Timeout | undefined;
  let reconcileTimer: NodeJS.Timeout | undefined;
  let reconciling: Promise<void> | undefined;
  let pass: Promise<void> | undefined;
  let again = false;
  let started = false;

  async function candidates(): Promise<Candidate[]> {
    const { timing } = deps;
    return deps.db.withoutTenant(async (tx) => {
      const { rows } = await tx.query<Candidate>(
        `SELECT id, CASE
                  WHEN state IN ('pending', 'provisioning') THEN 'provision'
                  WHEN state = 'active' THEN 'upgrade'
                  WHEN state = 'decommissioning' THEN 'decommission'
                  ELSE 'purge' END AS kind
           FROM tenants
          WHERE (state = 'pending' AND error_details IS NULL)
             OR state = 'provisioning'
             OR (state = 'active' AND upgrade_target IS NOT NULL)
             OR (state = 'decommissioning' AND coalesce(decommission_at,
                   state_changed_at + make_interval(secs => $2)) <= $1::timestamptz)
             OR (state = 'soft-deleted' AND deleted_at <= $1::timestamptz - make_interval(secs => $3))
          ORDER BY state_changed_at`,
        [deps.now(), timing.decommissionGraceMs / 1000, timing.retentionMs / 1000],
      );
      return rows;
    });
  }

  async function work(candidate: Candidate): Promise<void> {
    const release = await deps.locks.tryAcquire(candidate.id);
    if (!release) return; // another orchestrator has it
    try {
      switch (candidate.kind) {
        case 'provision':
          await advanceProvisioning(deps, candidate.id, abort.signal);
          break;
        case 'upgrade':
          await advanceUpgrade(deps, candidate.id, abort.signal);
          break;
        case 'decommission':
          await advanceDecommission(deps, candidate.id);
          break;
        case 'purge':
          await purgeTenant(deps, candidate.id);
          break;
      }
    } finally {
      await release();
    }
  }

  async function runOnce(): Promise<void> {
    if (abort.signal.aborted) return;
    for (const candidate of await candidates()) {
      if (running.has(candidate.id) || running.size >= deps.concurrency) continue;
      const task = work(candidate)
        .catch((error) => {
          if (!abort.signal.aborted)
            deps.logger.error(
              { err: error, tenant_id: candidate.id, kind: candidate.kind },
              'orchestrator task failed; retried on the next pass',
            );
        })
        .finally(() => {
          // No kick here: a task carries its tenant as far as it can go now (steps, then the
          // readiness wait), so what is left waits for a timer or an outside event. Kicking
          // would spin on a tenant that only waits for its adapter's heartbeat.
          running.delete(candidate.id);
        });
      running.set(candidate.id, task);
    }
  }

  function kick(): void {
    if (!started || abort.signal.aborted) return;
    if (pass) {
      again = true;
      return;
    }
    pass = runOnce()
      .catch((error) => deps.logger.warn({ err: error }, 'orchestrator pass failed'))
      .finally(() => {
        pass = undefined;
        if (again) {
          again = false;
          kick();
        }
      });
  }

  /**
   * Runs `work` for each tenant the query selects, one at a time under its lock; a tenant
   * locked elsewhere is simply left for the next pass, and one tenant's failure is logged
   * without stopping the others.
   */
  async function eachLockedTenant(
    sql: string,
    work: (id: string) => Promise<unknown>,
    failure: string,
  ): Promise<void> {
    const rows = await deps.db.withoutTenant(
      async (tx) => (await tx.query<{ id: string }>(sql)).rows,
    );
    for (const { id } of rows) {
      if (abort.signal.aborted) return;
      const release = await deps.locks.tryAcquire(id);
      if (!release) continue;
      try {
        await work(id);
      } catch (error) {
        deps.logger.warn({ err: error, tenant_id: id }, failure);
      } finally {
        await release();
      }
    }
  }

  /** Orphaned creation Secrets first (issue 18 item 6), then each tenant against the cluster. */
  async function reconcileAll(): Promise<void> {
    await collectOrphanSecrets(deps).catch((error) =>
      deps.logger.warn({ err: error }, 'orphan Secret collection failed; retried later'),
    );
    await eachLockedTenant(
      `SELECT id FROM tenants WHERE state = 'active' OR (state = 'pending' AND error_details IS NOT NULL)
        ORDER BY id`,
      (id) => reconcileTenant(deps, id),
      'reconciliation failed; retried later',
    );
  }

  /** A full pass that starts after this call; passes never overlap (this one queues). */
  function reconcile(): Promise<void> {
    const next: Promise<void> = (reconciling ?? Promise.resolve())
      .then(reconcileAll)
      .catch((error) => deps.logger.warn({ err: error }, 'reconciliation pass failed'))
      .finally(() => {
        if (reconciling === next) reconciling = undefined;
      });
    reconciling = next;
    return next;
  }

  /** The schedule skips a tick while a pass (a slow one: many tenants, a re-install) runs. */
  function scheduledReconcile(): void {
    if (!reconciling) void reconcile();
  }

  function refreshTokens(): Promise<void> {
    return eachLockedTenant(
      `SELECT id FROM tenants WHERE state IN ('provisioning', 'active')`,
      (id) => refreshAdapterToken(deps, id),
      'adapter token refresh failed; retried later',
    );
  }

  return {
    start() {
      started = true;
      kick();
      timer = setInterval(kick, deps.timing.pollMs);
      timer.unref();
      // Checked hourly; each tenant's token is rewritten once it is older than the refresh age.
      const tokenCheck = Math.min(3_600_000, deps.timing.adapterTokenRefreshMs);
      tokenTimer = setInterval(() => {
        refreshTokens().catch((error) =>
          deps.logger.warn({ err: error }, 'token refresh pass failed'),
        );
      }, tokenCheck);
      tokenTimer.unref();
      // On start: the cluster may have changed while svc was down (issue 18 item 7).
      void reconcile();
      // At least a second apart: `SVC_RECONCILE_INTERVAL=0s` must not become a busy loop.
      reconcileTimer = setInterval(scheduledReconcile, Math.max(1_000, deps.timing.reconcileMs));
      reconcileTimer.unref();
    },
    kick,
    runOnce,
    reconcile,
    busy: () => running.size,
    async idle() {
      while (pass || running.size > 0) {
        await pass;
        await Promise.all(running.values());
      }
    },
    async stop() {
      clearInterval(timer);
      clearInterval(tokenTimer);
      clearInterval(reconcileTimer);
      abort.abort();
      await pass;
      await reconciling;
      await Promise.allSettled(running.values());
    },
  };
}
