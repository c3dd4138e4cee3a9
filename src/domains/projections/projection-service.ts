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
  hasUnfoldedEvents,
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
 * skips an event that commits later.
 */
async function foldBatch(
  tx: TenantTx,
  tenantId: string,
  checkpoints: Checkpoints,
  limit: number,
): Promise<{ events: number; lastEventId: bigint }> {
  const events = await readEventsToFold(tx, lowest(checkpoints), limit);
  const last = events.at(-1);
  if (!last) return { events: 0, lastEventId: lowest(checkpoints) };
  const lastEventId = BigInt(last.id);
  await writeChanges(tx, tenantId, foldEvents(events, checkpoints));
  const behind = PROJECTION_NAMES.filter((p) => checkpoints[p] < lastEventId);
  if ((await advanceCheckpoints(tx, tenantId, behind, lastEventId)) !== behind.length)
    throw new CheckpointConflictError(tenantId);
  for (const p of behind) checkpoints[p] = lastEventId;
  return { events: events.length, lastEventId };
}

export function createProjectionService(deps: ProjectionServiceDeps) {
  const { db } = deps;
  const limit = deps.batchSize ?? DEFAULT_BATCH_SIZE;
  return {
    batchSize: limit,

    /**
     * One fold transaction for the tenant: its lock (or 'locked' when another projector has
     * it), the checkpoints, up to one batch of events, the rows, the checkpoints again.
     */
    foldNext(tenantId: string): Promise<FoldOutcome> {
      return db.withTenant(tenantId, async (tx): Promise<FoldOutcome> => {
        if (!(await tryProjectorLock(tx, tenantId))) return { kind: 'locked' };
        const checkpoints = await readCheckpoints(tx);
        const batch = await foldBatch(tx, tenantId, checkpoints, limit);
        return { kind: 'folded', ...batch, caughtUp: batch.events < limit };
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

    /**
     * The periodic sweep's cheap question, for many tenants: of `tenantIds`, those with
     * unfolded events, each asked under its own tenant's RLS context. SWEEP_CHUNK tenants
     * share one unit of work (one connection and transaction, each question still in its own
     * tenant's RLS scope), so a sweep over a thousand tenants is five transactions, not a
     * thousand.
     */
    async behindOf(tenantIds: readonly string[]): Promise<string[]> {
      const behind: string[] = [];
      for (let at = 0; at < tenantIds.length; at += SWEEP_CHUNK) {
        const chunk = tenantIds.slice(at, at + SWEEP_CHUNK);
        const flags = await db.unitOfWork(() =>
          Promise.all(chunk.map((id) => db.withTenant(id, hasUnfoldedEvents))),
        );
        chunk.forEach((id, k) => {
          if (flags[k]) behind.push(id);
        });
      }
      return behind;
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
