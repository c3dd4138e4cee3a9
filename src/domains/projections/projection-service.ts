// The projections domain: folds each tenant's event store, in id order, into the read models of
// the registered projections (projection-registry.ts), with a checkpoint each.
import type { AppDatabase } from '../../db/pools.ts';
import type { SystemGate } from '../../db/system-gate.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import { readEventsToFold } from '../events/event-repository.ts';
import { findTenantBySlugOrId } from '../tenants/tenant-repository.ts';
import { foldEvents } from './folds.ts';
import { type Checkpoints, noCheckpoints, PROJECTION_NAMES } from './projection-registry.ts';
import {
  advanceCheckpoints,
  allTenants,
  clearProjections,
  nextEventAfter,
  oldestUnfoldedEvent,
  projectorLock,
  readCheckpoints,
  tenantsWithUnfoldedEvents,
  tryProjectorLock,
  writeChanges,
} from './projection-repository.ts';
import {
  CheckpointConflictError,
  type FoldOutcome,
  type RebuildResult,
} from './projection-types.ts';

/** Events folded per transaction: a handful of statements each, whatever the batch holds. */
export const DEFAULT_BATCH_SIZE = 1_000;
/** Tenants one sweep transaction asks about (ProjectionService.behindOf). */
export const SWEEP_CHUNK = 200;

export interface ProjectionServiceDeps {
  db: AppDatabase;
  system: SystemGate;
  batchSize?: number;
}

function lowest(checkpoints: Checkpoints): bigint {
  let min: bigint | undefined;
  for (const p of PROJECTION_NAMES)
    if (min === undefined || checkpoints[p] < min) min = checkpoints[p];
  return min ?? 0n;
}

/**
 * One batch after the checkpoints, folded, written and checkpointed in the caller's
 * transaction. Ids are commit order within a tenant (sql/0008), so "after the checkpoint" never
 * skips an event that commits later. The writes, the checkpoints' advance and (with `probeNext`,
 * when the batch is full) the next event's append time go out together: on a pipelined
 * connection one round trip, not one per statement (a fold was round-trip bound on a busy
 * machine: docs/benchmarks.md "Ingest at fleet size").
 */
async function foldBatch(
  tx: TenantTx,
  tenantId: string,
  checkpoints: Checkpoints,
  limit: number,
  probeNext = false,
): Promise<{ events: number; lastEventId: bigint; appendedAt: Date[]; next?: Date | undefined }> {
  const events = await readEventsToFold(tx, lowest(checkpoints), limit);
  const last = events.at(-1);
  if (!last) return { events: 0, lastEventId: lowest(checkpoints), appendedAt: [] };
  const lastEventId = BigInt(last.id);
  const behind = PROJECTION_NAMES.filter((p) => checkpoints[p] < lastEventId);
  const [, moved, next] = await Promise.all([
    writeChanges(tx, tenantId, foldEvents(events, checkpoints)),
    advanceCheckpoints(tx, tenantId, behind, lastEventId),
    probeNext && events.length >= limit ? nextEventAfter(tx, lastEventId) : undefined,
  ]);
  if (moved !== behind.length) throw new CheckpointConflictError(tenantId);
  for (const p of behind) checkpoints[p] = lastEventId;
  return { events: events.length, lastEventId, appendedAt: events.map((e) => e.recordedAt), next };
}

export function createProjectionService(deps: ProjectionServiceDeps) {
  const { db } = deps;
  const limit = deps.batchSize ?? DEFAULT_BATCH_SIZE;

  /**
   * The periodic sweep's cheap question, for many tenants: of `tenantIds`, those with
   * unfolded events, each with when its oldest unfolded event was appended, each asked under
   * its own tenant's RLS context. SWEEP_CHUNK tenants share one unit of work (one connection
   * and transaction, each question still in its own tenant's RLS scope), so a sweep over a
   * thousand tenants is five transactions, not a thousand.
   */
  async function lagOf(tenantIds: readonly string[]): Promise<Map<string, Date>> {
    const behind = new Map<string, Date>();
    for (let at = 0; at < tenantIds.length; at += SWEEP_CHUNK) {
      const chunk = tenantIds.slice(at, at + SWEEP_CHUNK);
      const oldest = await db.unitOfWork(() =>
        Promise.all(chunk.map((id) => db.withTenant(id, oldestUnfoldedEvent))),
      );
      chunk.forEach((id, k) => {
        const since = oldest[k];
        if (since) behind.set(id, since);
      });
    }
    return behind;
  }

  return {
    batchSize: limit,

    /**
     * One fold transaction for the tenant: its lock (or 'locked' when another projector has
     * it), the checkpoints, up to one batch of events, the rows, the checkpoints again; when
     * the batch was full, when the next event waiting was appended (the tenant's lag).
     */
    foldNext(tenantId: string): Promise<FoldOutcome> {
      return db.withTenant(tenantId, async (tx): Promise<FoldOutcome> => {
        // The lock and the checkpoints in one round trip: read for nothing when it is held.
        const [locked, checkpoints] = await Promise.all([
          tryProjectorLock(tx, tenantId),
          readCheckpoints(tx),
        ]);
        if (!locked) return { kind: 'locked' };
        const { next, ...batch } = await foldBatch(tx, tenantId, checkpoints, limit, true);
        const caughtUp = batch.events < limit;
        return {
          kind: 'folded',
          ...batch,
          caughtUp,
          ...(next ? { nextAppendedAt: next } : {}),
        };
      });
    },

    /**
     * Read-your-writes for a writer that just committed `eventId`: folds the tenant's events
     * until every projection is past it. It queues behind a projector folding the tenant (its
     * lock) rather than polling, and folds nothing when the projector got there first.
     */
    catchUp(tenantId: string, eventId: bigint): Promise<void> {
      return db.withTenant(tenantId, async (tx) => {
        await projectorLock(tx, tenantId);
        const checkpoints = await readCheckpoints(tx);
        while (lowest(checkpoints) < eventId) {
          const batch = await foldBatch(tx, tenantId, checkpoints, limit);
          if (batch.events === 0) break;
        }
      });
    },

    lagOf,

    /** Of `tenantIds`, those with unfolded events (lagOf without the times). */
    async behindOf(tenantIds: readonly string[]): Promise<string[]> {
      return [...(await lagOf(tenantIds)).keys()];
    },

    /** Tenants with unfolded events, across the install: one audited system entry. */
    discover(): Promise<string[]> {
      return deps.system.withSystem('projector.discover', tenantsWithUnfoldedEvents);
    },

    /**
     * Rebuilds the tenant's projections from event 0 in one transaction under its projector
     * lock: derived rows and checkpoints are deleted, investigations are rebuilt in place
     * (pending_reviews refer to them; docs/projections.md), then every event is folded again.
     */
    rebuild(tenantId: string): Promise<RebuildResult> {
      return db.withTenant(tenantId, async (tx) => {
        await projectorLock(tx, tenantId);
        await clearProjections(tx, tenantId);
        const checkpoints = noCheckpoints();
        let events = 0;
        let lastEventId = 0n;
        for (;;) {
          const batch = await foldBatch(tx, tenantId, checkpoints, limit);
          events += batch.events;
          lastEventId = batch.lastEventId;
          if (batch.events < limit) break;
        }
        return { tenantId, events, lastEventId };
      });
    },

    /** The tenant an operator names by slug or id, soft-deleted included. */
    async findTenant(ref: string): Promise<{ id: string; slug: string } | undefined> {
      const tenant = await db.withoutTenant((tx) => findTenantBySlugOrId(tx, ref));
      return tenant ? { id: tenant.id, slug: tenant.slug } : undefined;
    },

    /** Every tenant, by slug. */
    tenants(): Promise<{ id: string; slug: string }[]> {
      return db.withoutTenant(allTenants);
    },
  };
}

export type ProjectionService = ReturnType<typeof createProjectionService>;
