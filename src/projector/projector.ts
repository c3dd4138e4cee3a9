import type { NoticeObserver } from '../domains/events/index.ts';
import type { ProjectionService } from '../domains/projections/projection-service.ts';
import type { FoldOutcome } from '../domains/projections/projection-types.ts';
import type { Logger } from '../log/index.ts';

/**
 * The projector of one process: folds tenants' new events into the projections, one fold
 * transaction per tenant and batch (docs/projections.md).
 *
 * Woken by the event hub's notices (one per appended event, so a burst coalesces into one
 * dirty mark per tenant) and by a periodic sweep that asks each tenant it knows of, with one
 * cheap query under that tenant's RLS context, whether it has unfolded events: that covers
 * notices lost while the LISTEN connection was down, tenants another replica held when the
 * notice came, and folds that failed. The install-wide discovery (an audited system entry)
 * runs at start and after a LISTEN reconnect only.
 */
export interface Projector {
  start(): Promise<void>;
  /** Marks the tenants (default: every known one) as having new events and waits until idle. */
  catchUp(tenantIds?: readonly string[]): Promise<void>;
  /** Resolves once no tenant is being folded or waiting to be. */
  idle(): Promise<void>;
  /** `folds`: fold transactions committed; `folded`: the events they held. */
  status(): { known: number; running: number; waiting: number; folds: number; folded: number };
  /**
   * How far behind this projector's tenants are: the age of each one's oldest event not yet
   * folded, as this process last learnt it (a fold, a sweep, a notice); the `top` worst first.
   */
  lag(top?: number): ProjectorLag;
  /** Stops waking up and awaits the folds in progress (each one commits or rolls back whole). */
  stop(): Promise<void>;
}

export interface ProjectorLag {
  /** Tenants with events not yet folded. */
  behind: number;
  /** The largest lag, seconds (0 when every tenant is caught up). */
  maxSeconds: number;
  tenants: { tenantId: string; seconds: number }[];
}

/** What the projector reports to the process's metrics (src/metrics). */
export interface ProjectorMetrics {
  /** One committed fold: each folded event's delay from its append to the commit, seconds. */
  projectionFolded(delaysSeconds: readonly number[]): void;
}

export interface ProjectorDeps {
  projections: Pick<ProjectionService, 'foldNext' | 'lagOf' | 'discover'>;
  /** The process's event hub: every tenant's notices. */
  events: { watch(observer: NoticeObserver): () => void };
  logger: Logger;
  sweepMs: number;
  /** Tenants folded at once (each holds one pooled connection while it folds). */
  concurrency: number;
  /**
   * Batches one tenant folds before it yields its slot to the tenants waiting behind it
   * (default TURN_BATCHES): a tenant with a large backlog takes turns instead of holding a slot
   * until it has caught up, so its backlog does not become every other tenant's lag.
   */
  turnBatches?: number;
  metrics?: ProjectorMetrics;
  /** A tenant this far behind is named in a warning (at most one per LAG_LOG_MS). Default 60 s. */
  lagWarnSeconds?: number;
  now?: () => number;
}

/** At most one "tenants behind" warning per minute, naming the worst LAG_LOG_TOP. */
const LAG_LOG_MS = 60_000;
const LAG_LOG_TOP = 10;

/** Four batches (4,000 events at the default batch size) per turn: see ProjectorDeps.turnBatches. */
export const TURN_BATCHES = 4;

export function createProjector(deps: ProjectorDeps): Projector {
  const { projections, logger } = deps;
  const turnBatches = deps.turnBatches ?? TURN_BATCHES;
  const now = deps.now ?? Date.now;
  const lagWarnMs = (deps.lagWarnSeconds ?? 60) * 1000;
  /** Per tenant behind: when its oldest unfolded event was appended (epoch ms). */
  const behindSince = new Map<string, number>();
  /** Per tenant: when the first notice since its last fold started came (epoch ms). */
  const noticedAt = new Map<string, number>();
  let lagLoggedAt = Number.NEGATIVE_INFINITY;
  const known = new Set<string>();
  const dirty = new Set<string>();
  const running = new Map<string, Promise<void>>();
  let folded = 0;
  let folds = 0;
  let stopped = false;
  let started = false;
  let needsDiscovery = true;
  let sweeping: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let unwatch: (() => void) | undefined;
  let wake: (() => void)[] = [];

  function mark(tenantId: string): void {
    known.add(tenantId);
    dirty.add(tenantId);
  }

  function settle(): void {
    if (running.size > 0 || (dirty.size > 0 && !stopped) || sweeping) return;
    for (const resolve of wake.splice(0)) resolve();
  }

  /**
   * Folds the tenant batch by batch while its batches come full (a backlog), until it is
   * caught up or its turn is over: then it goes to the back of the waiting tenants (a Set keeps
   * insertion order, and pump takes from the front), so every tenant marked before it is
   * folded first. A notice during a fold does the same: the tenant is folded again after the
   * tenants already waiting, not at once in its slot.
   */
  async function run(tenantId: string): Promise<void> {
    try {
      for (let batches = 0; !stopped; ) {
        dirty.delete(tenantId);
        noticedAt.delete(tenantId);
        const outcome = await projections.foldNext(tenantId);
        // Held elsewhere: that projector folds, it had the same notices, and its lag is its own.
        if (outcome.kind === 'locked') {
          behindSince.delete(tenantId);
          return;
        }
        folded += outcome.events;
        folds += 1;
        recordFold(tenantId, outcome);
        // Caught up: a notice that came meanwhile queued the tenant again behind the tenants
        // already waiting (mark() appends it). Folding it again at once, in its slot, made
        // every busy tenant fold up to a whole turn of near-empty batches per round, and with
        // a hundred adapters posting twice a second the round grew to ~4 folds per tenant.
        if (outcome.caughtUp) return;
        if (++batches >= turnBatches) {
          dirty.delete(tenantId);
          dirty.add(tenantId);
          return;
        }
      }
    } catch (error) {
      // Not retried at once (a lost database would make that a busy loop): the sweep asks again.
      dirty.delete(tenantId);
      if (!stopped)
        logger.warn({ err: error, tenant_id: tenantId }, 'projection fold failed; retried later');
    }
  }

  /**
   * After a commit: every folded event's delay into the metrics, and the tenant's lag: the next
   * unfolded event's append when the batch was full, else the first notice that came during
   * the fold (its events may not be folded yet), else none.
   */
  function recordFold(tenantId: string, outcome: Extract<FoldOutcome, { kind: 'folded' }>): void {
    const at = now();
    if (deps.metrics && outcome.appendedAt.length > 0)
      deps.metrics.projectionFolded(
        outcome.appendedAt.map((d) => Math.max(0, (at - d.getTime()) / 1000)),
      );
    const since = outcome.nextAppendedAt?.getTime() ?? noticedAt.get(tenantId);
    if (since === undefined) behindSince.delete(tenantId);
    else behindSince.set(tenantId, since);
  }

  function lag(top = LAG_LOG_TOP): ProjectorLag {
    const at = now();
    const tenants = [...behindSince]
      .map(([tenantId, since]) => ({ tenantId, seconds: Math.max(0, (at - since) / 1000) }))
      .sort((a, b) => b.seconds - a.seconds);
    return {
      behind: tenants.length,
      maxSeconds: tenants[0]?.seconds ?? 0,
      tenants: tenants.slice(0, top),
    };
  }

  /** Per-tenant lag is not a metric label (1,000 tenants); the worst are named in the log. */
  function warnIfLagging(): void {
    const current = lag();
    if (current.maxSeconds * 1000 < lagWarnMs || now() - lagLoggedAt < LAG_LOG_MS) return;
    lagLoggedAt = now();
    logger.warn(
      {
        tenants_behind: current.behind,
        max_lag_seconds: Math.round(current.maxSeconds),
        worst: current.tenants.map((t) => ({
          tenant_id: t.tenantId,
          lag_seconds: Math.round(t.seconds),
        })),
      },
      'projections behind their events',
    );
  }

  function pump(): void {
    if (stopped || !started) {
      settle();
      return;
    }
    for (const tenantId of dirty) {
      if (running.size >= deps.concurrency) break;
      if (running.has(tenantId)) continue;
      const task = run(tenantId).finally(() => {
        running.delete(tenantId);
        pump();
      });
      running.set(tenantId, task);
    }
    settle();
  }

  async function discover(): Promise<void> {
    needsDiscovery = false;
    try {
      for (const tenantId of await projections.discover()) mark(tenantId);
    } catch (error) {
      needsDiscovery = true;
      logger.warn({ err: error }, 'projector discovery failed; retried on the next sweep');
    }
  }

  async function sweepOnce(): Promise<void> {
    if (needsDiscovery) await discover();
    if (stopped) return;
    const idle = [...known].filter((id) => !running.has(id) && !dirty.has(id));
    try {
      const behind = await projections.lagOf(idle);
      for (const tenantId of idle) {
        const since = behind.get(tenantId);
        // A tenant marked or folded while the question was out has fresher news than the answer.
        if (running.has(tenantId) || dirty.has(tenantId)) continue;
        if (since === undefined) behindSince.delete(tenantId);
        else behindSince.set(tenantId, since.getTime());
      }
      for (const tenantId of behind.keys()) if (!stopped) dirty.add(tenantId);
      warnIfLagging();
    } catch (error) {
      logger.warn(
        { err: error, tenants: idle.length },
        'projector sweep failed; retried next sweep',
      );
    }
  }

  /** Sweeps never overlap: a tick during a slow sweep is skipped. */
  function sweep(): void {
    if (sweeping || stopped) return;
    sweeping = sweepOnce().finally(() => {
      sweeping = undefined;
      pump();
    });
  }

  const observer: NoticeObserver = {
    notice(tenantId) {
      if (stopped) return;
      if (!noticedAt.has(tenantId)) noticedAt.set(tenantId, now());
      if (!behindSince.has(tenantId)) behindSince.set(tenantId, now());
      mark(tenantId);
      pump();
    },
    reconnected() {
      needsDiscovery = true;
      sweep();
    },
  };

  return {
    async start() {
      if (started || stopped) return;
      // Watching first: an event appended during the discovery is noticed, not lost.
      unwatch = deps.events.watch(observer);
      started = true;
      await discover();
      pump();
      timer = setInterval(sweep, deps.sweepMs);
      timer.unref();
    },
    async catchUp(tenantIds) {
      for (const tenantId of tenantIds ?? [...known]) mark(tenantId);
      pump();
      await this.idle();
    },
    idle() {
      return new Promise<void>((resolve) => {
        wake.push(resolve);
        settle();
      });
    },
    status: () => ({
      known: known.size,
      running: running.size,
      waiting: dirty.size,
      folds,
      folded,
    }),
    lag,
    async stop() {
      stopped = true;
      clearInterval(timer);
      unwatch?.();
      await sweeping;
      await Promise.allSettled(running.values());
      wake.splice(0).forEach((resolve) => {
        resolve();
      });
      wake = [];
    },
  };
}
