import type * as s from 'zapatos/schema';
import { prepared } from '../../db/prepared.ts';
import type { Narrowed } from '../../db/rows.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import { type AlertGroup, type Checkpoint, type GroupKey, WAZUH } from './ingest-types.ts';

/**
 * The tenant's event-append lock, taken before anything is read: the same keys, in the same
 * order, as sql/0008's trigger takes before each insert into events (the install key shared,
 * then the tenant's key, hashed from the same setting). Advisory locks are re-entrant, so the
 * trigger's own take later in this transaction returns at once. Holding it from the first read
 * makes "which alerts are stored, which groups are open" true until commit: two batches of one
 * tenant run one after the other, batches of different tenants side by side.
 */
export async function lockTenantAppends(tx: TenantTx): Promise<void> {
  await tx.query(
    prepared(
      'ingest.lock',
      `SELECT pg_advisory_xact_lock_shared(727008, 0),
              pg_advisory_xact_lock(
                727009, hashtext(coalesce(current_setting('app.current_tenant_id', true), '')))`,
      [],
    ),
  );
}

/** Which of these streams already have their first event (one indexed probe per id). */
export async function existingStreams(tx: TenantTx, streamIds: string[]): Promise<Set<string>> {
  const { rows } = await tx.query<Pick<s.events.Selectable, 'stream_id'>>(
    prepared(
      'ingest.existing',
      'SELECT stream_id FROM events WHERE stream_id = ANY($1::uuid[]) AND stream_seq = 1',
      [streamIds],
    ),
  );
  return new Set(rows.map((r) => r.stream_id));
}

type GroupRow = Pick<
  s.alert_groups.Selectable,
  'investigation_id' | 'rule_id' | 'agent_id' | 'last_alert_at' | 'alert_count'
>;

/** The open group of each (rule, agent) pair given, where there is one. */
export async function openGroups(tx: TenantTx, keys: GroupKey[]): Promise<AlertGroup[]> {
  const { rows } = await tx.query<GroupRow>(
    prepared(
      'ingest.open_groups',
      `SELECT g.investigation_id, g.rule_id, g.agent_id, g.last_alert_at, g.alert_count
         FROM unnest($1::text[], $2::text[]) AS k (rule_id, agent_id)
         JOIN alert_groups g ON g.rule_id = k.rule_id AND g.agent_id = k.agent_id
        WHERE g.closed_at IS NULL`,
      [keys.map((k) => k.ruleId), keys.map((k) => k.agentId)],
    ),
  );
  return rows.map((r) => ({
    investigationId: r.investigation_id,
    ruleId: r.rule_id,
    agentId: r.agent_id,
    lastAlertAt: r.last_alert_at.getTime(),
    alertCount: Number(r.alert_count),
    closed: false,
  }));
}

/**
 * Writes the groups' new state in one statement: new groups are inserted, known ones updated.
 * Closed groups come first, so a pair's previous group is closed before its successor opens
 * (the unique index on open groups is checked row by row).
 */
export async function saveGroups(
  tx: TenantTx,
  tenantId: string,
  groups: AlertGroup[],
): Promise<void> {
  if (groups.length === 0) return;
  const ordered = [...groups.filter((g) => g.closed), ...groups.filter((g) => !g.closed)];
  await tx.query(
    prepared(
      'ingest.save_groups',
      `INSERT INTO alert_groups
         (tenant_id, investigation_id, rule_id, agent_id, last_alert_at, alert_count, closed_at)
       SELECT $1::uuid, g.investigation_id, g.rule_id, g.agent_id,
              to_timestamp(g.last_ms / 1000), g.alert_count,
              CASE WHEN g.closed THEN now() END
         FROM unnest($2::uuid[], $3::text[], $4::text[], $5::double precision[], $6::bigint[],
                     $7::boolean[])
              WITH ORDINALITY AS g (investigation_id, rule_id, agent_id, last_ms, alert_count,
                                    closed, n)
        ORDER BY g.n
       ON CONFLICT (tenant_id, investigation_id) DO UPDATE
         SET last_alert_at = excluded.last_alert_at,
             alert_count = excluded.alert_count,
             closed_at = coalesce(alert_groups.closed_at, excluded.closed_at)`,
      [
        tenantId,
        ordered.map((g) => g.investigationId),
        ordered.map((g) => g.ruleId),
        ordered.map((g) => g.agentId),
        ordered.map((g) => g.lastAlertAt),
        ordered.map((g) => g.alertCount),
        ordered.map((g) => g.closed),
      ],
    ),
  );
}

/** `position` holds what saveCheckpoint wrote: a Checkpoint. */
type CheckpointRow = Narrowed<
  Pick<s.ingest_checkpoints.Selectable, 'position' | 'alerts_total' | 'updated_at'>,
  { position: Checkpoint }
>;

/** Stores the source's position and counts the alerts that were new; returns the stored row. */
export async function saveCheckpoint(
  tx: TenantTx,
  tenantId: string,
  position: Checkpoint,
  accepted: number,
): Promise<{ position: Checkpoint; alertsTotal: number }> {
  const { rows } = await tx.query<Omit<CheckpointRow, 'updated_at'>>(
    prepared(
      'ingest.save_checkpoint',
      `INSERT INTO ingest_checkpoints (tenant_id, source, position, alerts_total, updated_at)
       VALUES ($1, $2, $3::jsonb, $4, now())
       ON CONFLICT (tenant_id, source) DO UPDATE
         SET position = excluded.position,
             alerts_total = ingest_checkpoints.alerts_total + excluded.alerts_total,
             updated_at = excluded.updated_at
       RETURNING position, alerts_total`,
      [tenantId, WAZUH, JSON.stringify(position), accepted],
    ),
  );
  const row = rows[0] as Omit<CheckpointRow, 'updated_at'>;
  return { position: row.position, alertsTotal: Number(row.alerts_total) };
}

/** The stored position and total, or undefined before the first batch. */
export async function findCheckpoint(
  tx: TenantTx,
): Promise<{ position: Checkpoint; alertsTotal: number; updatedAt: Date } | undefined> {
  const { rows } = await tx.query<CheckpointRow>(
    prepared(
      'ingest.checkpoint',
      'SELECT position, alerts_total, updated_at FROM ingest_checkpoints WHERE source = $1',
      [WAZUH],
    ),
  );
  const row = rows[0];
  return row
    ? { position: row.position, alertsTotal: Number(row.alerts_total), updatedAt: row.updated_at }
    : undefined;
}
