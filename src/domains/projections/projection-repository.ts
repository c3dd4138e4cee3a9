import type * as s from 'zapatos/schema';
import { prepared } from '../../db/prepared.ts';
import type { InstallTx, SystemTx, TenantTx } from '../../db/tenant-context.ts';
import {
  type AnyProjection,
  type Checkpoints,
  noCheckpoints,
  PROJECTION_NAMES,
  PROJECTIONS,
  type Projection,
  type ProjectionChanges,
} from './projection-registry.ts';

type Tenant = Pick<s.tenants.Selectable, 'id' | 'slug'>;

// The projector's advisory lock: (key, hashtext(tenant)), taken per transaction. Distinct from
// the event-append locks of sql/0008 (727008, 727009) and the tenant lifecycle lock (one
// bigint key, another lock space).
const PROJECTOR_LOCK_KEY = 727016;

/** One projector per tenant at a time: false when another transaction holds the tenant. */
export async function tryProjectorLock(tx: TenantTx, tenantId: string): Promise<boolean> {
  const { rows } = await tx.query<{ ok: boolean }>(
    prepared(
      'projections.try-lock',
      'SELECT pg_try_advisory_xact_lock($1::int, hashtext($2)) AS ok',
      [PROJECTOR_LOCK_KEY, tenantId],
    ),
  );
  return rows[0]?.ok === true;
}

/** Waits for the tenant's projector lock (a rebuild waits out a running fold). */
export async function projectorLock(tx: TenantTx, tenantId: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [
    PROJECTOR_LOCK_KEY,
    tenantId,
  ]);
}

/** Every projection's checkpoint in the transaction's tenant (0n where none was written). */
export async function readCheckpoints(tx: TenantTx): Promise<Checkpoints> {
  const { rows } = await tx.query<
    Pick<s.projection_checkpoints.Selectable, 'projection' | 'last_event_id'>
  >(
    prepared(
      'projections.checkpoints',
      'SELECT projection, last_event_id::text FROM projection_checkpoints',
      [],
    ),
  );
  const checkpoints = noCheckpoints();
  for (const row of rows)
    if (row.projection in checkpoints)
      checkpoints[row.projection as Projection] = BigInt(row.last_event_id);
  return checkpoints;
}

/**
 * Moves the named projections to `lastEventId`. Each must still be below it: a checkpoint at
 * or past it means another writer folded the same events, so the caller rolls back (the count
 * of moved rows tells). The advisory lock makes that impossible; this is the second fence.
 */
export async function advanceCheckpoints(
  tx: TenantTx,
  tenantId: string,
  projections: readonly Projection[],
  lastEventId: bigint,
): Promise<number> {
  const result = await tx.query(
    prepared(
      'projections.advance',
      `INSERT INTO projection_checkpoints (tenant_id, projection, last_event_id, updated_at)
       SELECT $1, p, $2::bigint, now() FROM unnest($3::text[]) AS p
       ON CONFLICT (tenant_id, projection) DO UPDATE
          SET last_event_id = excluded.last_event_id, updated_at = excluded.updated_at
        WHERE projection_checkpoints.last_event_id < excluded.last_event_id`,
      [tenantId, String(lastEventId), projections],
    ),
  );
  return result.rowCount ?? 0;
}

/**
 * When the tenant's oldest event past its lowest checkpoint (a missing one counts as 0) was
 * appended; undefined when every projection has folded everything. One probe of the events'
 * primary key, whatever the backlog.
 */
export async function oldestUnfoldedEvent(tx: TenantTx): Promise<Date | undefined> {
  const { rows } = await tx.query<Pick<s.events.Selectable, 'recorded_at'>>(
    prepared(
      'projections.oldest_unfolded',
      `SELECT recorded_at FROM events
        WHERE id > (SELECT CASE WHEN count(*) = cardinality($1::text[])
                                THEN coalesce(min(last_event_id), 0) ELSE 0 END
                      FROM projection_checkpoints WHERE projection = ANY($1::text[]))
        ORDER BY id LIMIT 1`,
      [PROJECTION_NAMES],
    ),
  );
  return rows[0]?.recorded_at;
}

/** When the tenant's first event after `eventId` was appended (undefined: none yet). */
export async function nextEventAfter(tx: TenantTx, eventId: bigint): Promise<Date | undefined> {
  const { rows } = await tx.query<Pick<s.events.Selectable, 'recorded_at'>>(
    prepared(
      'projections.next_after',
      'SELECT recorded_at FROM events WHERE id > $1::bigint ORDER BY id LIMIT 1',
      [String(eventId)],
    ),
  );
  return rows[0]?.recorded_at;
}

/** Tenants with events past their lowest checkpoint, across the install (the projector's start). */
export async function tenantsWithUnfoldedEvents(tx: SystemTx): Promise<string[]> {
  const { rows } = await tx.query<Pick<Tenant, 'id'>>(
    `SELECT t.id FROM tenants t
      WHERE EXISTS (
        SELECT 1 FROM events e
         WHERE e.tenant_id = t.id
           AND e.id > (SELECT CASE WHEN count(*) = cardinality($1::text[])
                                   THEN coalesce(min(c.last_event_id), 0) ELSE 0 END
                         FROM projection_checkpoints c
                        WHERE c.tenant_id = t.id AND c.projection = ANY($1::text[])))
      ORDER BY t.id`,
    [PROJECTION_NAMES],
  );
  return rows.map((r) => r.id);
}

/** Every tenant row (install-scoped), by slug: what `svc projections rebuild` walks. */
export async function allTenants(tx: InstallTx): Promise<Tenant[]> {
  const { rows } = await tx.query<Tenant>('SELECT id, slug FROM tenants ORDER BY slug');
  return rows;
}

const registered: readonly AnyProjection[] = PROJECTIONS;

// The rebuild's delete, one statement for every `delete` projection and the checkpoints. Its
// table names come from the registry (typed as the schema's tables), never from input.
const CLEAR = `${registered
  .filter((p) => p.rebuild === 'delete')
  .map((p, i) => `${i === 0 ? 'WITH' : ','} d${i} AS (DELETE FROM ${p.table} WHERE tenant_id = $1)`)
  .join('\n')}
DELETE FROM projection_checkpoints WHERE tenant_id = $1`;

/**
 * A rebuild's first step: the tenant's derived rows and checkpoints go; rows of an `in-place`
 * projection (investigations) stay and are reset by their openings as the events are folded
 * again.
 */
export async function clearProjections(tx: TenantTx, tenantId: string): Promise<void> {
  await tx.query(CLEAR, [tenantId]);
}

/**
 * Writes one batch's changes, projection by projection in registry order, each projection's
 * statements in its own order; a statement whose row lists are all empty is skipped. All are
 * sent before any answer is awaited (in order on the connection: a pipelined one sends them
 * together, an unpipelined one queues them), so the batch costs one round trip.
 */
export async function writeChanges(
  tx: TenantTx,
  tenantId: string,
  changes: ProjectionChanges,
): Promise<void> {
  const sent: Promise<unknown>[] = [];
  for (const projection of registered) {
    for (const write of projection.writes) {
      const parts = write.rows(changes[projection.name]);
      if (parts.every((rows) => rows.length === 0)) continue;
      const values = [tenantId, ...parts.map((rows) => JSON.stringify(rows))];
      sent.push(tx.query(prepared(write.label, write.text, values)));
    }
  }
  await Promise.all(sent);
}
