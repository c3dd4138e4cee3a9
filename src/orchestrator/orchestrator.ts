import { takeClusterSnapshot } from '../cluster/snapshot.ts';
import type { WorkKind } from '../domains/provisioning/provisioning-types.ts';
import { advanceConfigChange } from './config-rollout.ts';
import type { OrchestratorDeps } from './context.ts';
import { advanceDecommission, purgeTenant } from './decommission.ts';
import { reconcileEdgeProxy } from './edge-proxy.ts';
import { guardedDeps } from './lock-guard.ts';
import { collectOrphanSecrets } from './orphans.ts';
import { advanceProvisioning } from './provision.ts';
import { reconcileTenant } from './reconcile.ts';
import { advanceResume, advanceSuspension } from './suspension.ts';
import { TenantLockLostError, type TenantLocks } from './tenant-locks.ts';
import { refreshAdapterToken } from './token-refresh.ts';
import { advanceUpgrade } from './upgrade.ts';

/**
 * Tenants a reconcile (or token) pass works on at once. A tenant's reconciliation is mostly
 * waiting on the API server and PostgreSQL (about 7 requests and 4 transactions), so a few
 * lanes overlap those waits; the pass stays gentle on both (docs/orchestrator.md "What one
 * pass costs").
 */
export const PASS_LANES = 4;

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

/** What a pass did with the tenants it selected (busy: locked elsewhere, left for the next). */
export interface PassCount {
  selected: number;
  done: number;
  busy: number;
  failed: number;
}

interface Candidate {
  id: string;
  kind: WorkKind;
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

  function candidates(): Promise<Candidate[]> {
    const { timing } = deps;
    return deps.provisioning.dueWork({
      now: deps.now(),
      graceMs: timing.decommissionGraceMs,
      retentionMs: timing.retentionMs,
    });
  }

  async function work(candidate: Candidate): Promise<void> {
    const release = await deps.locks.tryAcquire(candidate.id);
    if (!release) return; // another orchestrator (or another task of this one) has it
    // Stops on shutdown and when the lock is lost: the guarded parts refuse the next call.
    const signal = AbortSignal.any([abort.signal, release.signal]);
    const task = guardedDeps(deps, signal);
    try {
      switch (candidate.kind) {
        case 'provision':
          await advanceProvisioning(task, candidate.id, signal);
          break;
        case 'upgrade':
          await advanceUpgrade(task, candidate.id, signal);
          break;
        case 'config':
          await advanceConfigChange(task, candidate.id, signal);
          break;
        case 'decommission':
          await advanceDecommission(task, candidate.id);
          break;
        case 'purge':
          await purgeTenant(task, candidate.id);
          break;
        case 'suspend':
          await advanceSuspension(task, candidate.id);
          break;
        case 'resume':
          await advanceResume(task, candidate.id);
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
          if (error instanceof TenantLockLostError)
            deps.logger.warn(
              { err: error, tenant_id: candidate.id, kind: candidate.kind },
              'tenant lock lost; the task stopped and is retried on a later pass',
            );
          else if (!abort.signal.aborted)
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
   * Runs `work` for each tenant `select` returns, PASS_LANES at a time, each under its lock; a
   * tenant locked elsewhere is simply left for the next pass, and one tenant's failure is
   * logged without stopping the others.
   */
  async function eachLockedTenant(
    select: () => Promise<string[]>,
    work: (task: OrchestratorDeps, id: string) => Promise<unknown>,
    failure: string,
  ): Promise<PassCount> {
    const ids = await select();
    const count: PassCount = { selected: ids.length, done: 0, busy: 0, failed: 0 };
    let next = 0;
    const lane = async () => {
      for (let id = ids[next++]; id !== undefined; id = ids[next++]) {
        if (abort.signal.aborted) return;
        const release = await deps.locks.tryAcquire(id);
        if (!release) {
          count.busy++;
          continue;
        }
        try {
          await work(guardedDeps(deps, AbortSignal.any([abort.signal, release.signal])), id);
          count.done++;
        } catch (error) {
          count.failed++;
          deps.logger.warn({ err: error, tenant_id: id }, failure);
        } finally {
          await release();
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PASS_LANES, ids.length) }, lane));
    return count;
  }

  /**
   * Orphaned creation Secrets first, then each tenant against the cluster, then the edge proxy
   * against the tenants holding a port pair (docs/orchestrator.md "Reconciliation").
   */
  async function reconcileAll(): Promise<void> {
    const started = performance.now();
    await collectOrphanSecrets(deps).catch((error) =>
      deps.logger.warn({ err: error }, 'orphan Secret collection failed; retried later'),
    );
    // One snapshot for the pass: a fixed number of LISTs, not reads per tenant. Without it
    // (the LISTs failed) each tenant is read on its own, as before.
    const snapshot = await takeClusterSnapshot(deps.kubeConfig, {
      installNamespace: deps.secrets.namespace,
    }).catch((error: unknown) => {
      deps.logger.warn({ err: error }, 'cluster snapshot failed; reading each tenant instead');
      return undefined;
    });
    const tenants = await eachLockedTenant(
      deps.provisioning.reconcilableTenantIds,
      (task, id) => reconcileTenant(task, id, snapshot),
      'reconciliation failed; retried later',
    );
    await reconcileEdgeProxy(deps).catch((error) =>
      deps.logger.warn({ err: error }, 'edge proxy reconciliation failed; retried later'),
    );
    // One line per pass: how long it took over how many tenants is what sizes the interval
    // (docs/orchestrator.md "What one pass costs").
    deps.logger.info(
      { ...tenants, snapshot: snapshot !== undefined, ms: Math.round(performance.now() - started) },
      'reconciliation pass done',
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

  async function refreshTokens(): Promise<void> {
    await eachLockedTenant(
      deps.provisioning.tokenHoldingTenantIds,
      refreshAdapterToken,
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
      // On start: the cluster may have changed while svc was down (docs/orchestrator.md "Reconciliation").
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
