import type { NoticeObserver } from '../domains/events/index.ts';
import type { ProjectionService } from '../domains/projections/projection-service.ts';
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
  status(): { known: number; running: number; waiting: number; folded: number };
  /** Stops waking up and awaits the folds in progress (each one commits or rolls back whole). */
  stop(): Promise<void>;
}

export interface ProjectorDeps {
  projections: Pick<ProjectionService, 'foldNext' | 'behindOf' | 'discover'>;
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
}

/** Four batches (4,000 events at the default batch size) per turn: see ProjectorDeps.turnBatches. */
export const TURN_BATCHES = 4;

export function createProjector(deps: ProjectorDeps): Projector {
  const { projections, logger } = deps;
  const turnBatches = deps.turnBatches ?? TURN_BATCHES;
  const known = new Set<string>();
  const dirty = new Set<string>();
  const running = new Map<string, Promise<void>>();
  let folded = 0;
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
   * Folds the tenant batch by batch until it is caught up and no notice came meanwhile, or
   * until its turn is over: then it goes to the back of the waiting tenants (a Set keeps
   * insertion order, and pump takes from the front), so every tenant marked before it is
   * folded first.
   */
  async function run(tenantId: string): Promise<void> {
    try {
      for (let batches = 0; !stopped; ) {
        dirty.delete(tenantId);
        const outcome = await projections.foldNext(tenantId);
        // Held elsewhere: that projector folds, and it had the same notices.
        if (outcome.kind === 'locked') return;
        folded += outcome.events;
        if (outcome.caughtUp && !dirty.has(tenantId)) return;
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
      for (const tenantId of await projections.behindOf(idle)) if (!stopped) dirty.add(tenantId);
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
    status: () => ({ known: known.size, running: running.size, waiting: dirty.size, folded }),
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
