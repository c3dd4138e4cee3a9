import { prepared } from '../../db/prepared.ts';
import type { InstallTx, SystemTx, TenantTx } from '../../db/tenant-context.ts';
import {
  type Checkpoints,
  PROJECTIONS,
  type Projection,
  type ProjectionChanges,
} from './projection-types.ts';

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
  const { rows } = await tx.query<{ projection: string; last_event_id: string }>(
    prepared(
      'projections.checkpoints',
      'SELECT projection, last_event_id::text FROM projection_checkpoints',
      [],
    ),
  );
  const checkpoints = Object.fromEntries(PROJECTIONS.map((p) => [p, 0n])) as Checkpoints;
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

/** Whether the tenant has events past the lowest checkpoint (a missing one counts as 0). */
export async function hasUnfoldedEvents(tx: TenantTx): Promise<boolean> {
  const { rows } = await tx.query<{ behind: boolean }>(
    prepared(
      'projections.behind',
      `SELECT coalesce((SELECT max(id) FROM events), 0) >
              (SELECT CASE WHEN count(*) = cardinality($1::text[])
                           THEN coalesce(min(last_event_id), 0) ELSE 0 END
                 FROM projection_checkpoints WHERE projection = ANY($1::text[])) AS behind`,
      [PROJECTIONS],
    ),
  );
  return rows[0]?.behind === true;
}

/** Tenants with events past their lowest checkpoint, across the install (the projector's start). */
export async function tenantsWithUnfoldedEvents(tx: SystemTx): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    `SELECT t.id FROM tenants t
      WHERE EXISTS (
        SELECT 1 FROM events e
         WHERE e.tenant_id = t.id
           AND e.id > (SELECT CASE WHEN count(*) = cardinality($1::text[])
                                   THEN coalesce(min(c.last_event_id), 0) ELSE 0 END
                         FROM projection_checkpoints c
                        WHERE c.tenant_id = t.id AND c.projection = ANY($1::text[])))
      ORDER BY t.id`,
    [PROJECTIONS],
  );
  return rows.map((r) => r.id);
}

/** Every tenant row (install-scoped), by slug: what `svc projections rebuild` walks. */
export async function allTenants(tx: InstallTx): Promise<{ id: string; slug: string }[]> {
  const { rows } = await tx.query<{ id: string; slug: string }>(
    'SELECT id, slug FROM tenants ORDER BY slug',
  );
  return rows;
}

/**
 * A rebuild's first step: the tenant's derived rows and checkpoints go; investigations stay and
 * are reset by their openings as the events are folded again (OPEN below).
 */
export async function clearProjections(tx: TenantTx, tenantId: string): Promise<void> {
  await tx.query(
    `WITH m AS (DELETE FROM metrics_hourly WHERE tenant_id = $1),
          r AS (DELETE FROM rule_stats WHERE tenant_id = $1),
          i AS (DELETE FROM ioc_stats WHERE tenant_id = $1),
          a AS (DELETE FROM analyzer_stats WHERE tenant_id = $1)
     DELETE FROM projection_checkpoints WHERE tenant_id = $1`,
    [tenantId],
  );
}

// Each statement takes one batch's changes as a JSON array (jsonb_to_recordset), so a batch
// of up to 1,000 events costs one statement per table, whatever it holds.

// An opening (re)starts every event-derived column, the workflow ones (status, verdict,
// summary, resolved/closed) included, so a rebuild in place refolds them from the store. The
// assignee is no event's: it is left alone.
const OPEN = `
  INSERT INTO investigations AS i (tenant_id, id, title, severity, status, source, source_ref,
                                   opened_at, updated_at, alert_count, last_alert_at, last_event_id)
  SELECT $1, r.id, r.title, r.severity, 'open', r.source, r.source_ref,
         r.opened_at, r.opened_at, 0, NULL, r.last_event_id
    FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, title text, severity text, source text,
         source_ref text, opened_at timestamptz, last_event_id bigint)
  ON CONFLICT (tenant_id, id) DO UPDATE
     SET title = excluded.title, severity = excluded.severity, source = excluded.source,
         source_ref = excluded.source_ref, opened_at = excluded.opened_at,
         updated_at = excluded.updated_at, alert_count = 0, last_alert_at = NULL,
         status = 'open', verdict = NULL, summary = NULL, resolved_at = NULL, closed_at = NULL,
         last_event_id = excluded.last_event_id`;

// What alerts ($2) and pipeline events ($3) did to investigations, joined per id into one
// statement. A status move reads the row's status before it (r.outcomes -> i.status): every
// SET expression sees the old row. Where a side has no entry its columns are NULL and keep the
// row's value (greatest() ignores NULL; so does the severity comparison).
const INVESTIGATIONS = `
  UPDATE investigations AS i
     SET alert_count = i.alert_count + coalesce(r.alerts, 0),
         severity = CASE
           WHEN array_position('{info,low,medium,high,critical}'::text[], r.severity)
              > array_position('{info,low,medium,high,critical}'::text[], i.severity)
           THEN r.severity ELSE i.severity END,
         last_alert_at = greatest(i.last_alert_at, r.last_alert_at),
         status = coalesce((r.outcomes -> i.status) ->> 'status', i.status),
         closed_at = CASE WHEN (r.outcomes -> i.status) ? 'closed_at'
           THEN ((r.outcomes -> i.status) ->> 'closed_at')::timestamptz ELSE i.closed_at END,
         resolved_at = CASE WHEN (r.outcomes -> i.status) ? 'resolved_at'
           THEN ((r.outcomes -> i.status) ->> 'resolved_at')::timestamptz ELSE i.resolved_at END,
         verdict = coalesce(r.verdict, i.verdict),
         summary = coalesce(r.summary, i.summary),
         updated_at = greatest(i.updated_at, r.last_alert_at, r.updated_at),
         last_event_id = greatest(i.last_event_id, r.alert_event_id, r.workflow_event_id)
    FROM (SELECT id, a.alerts, a.severity, a.last_alert_at, a.last_event_id AS alert_event_id,
                 w.outcomes, w.verdict, w.summary, w.updated_at,
                 w.last_event_id AS workflow_event_id
            FROM jsonb_to_recordset($2::jsonb) AS a(id uuid, alerts integer, severity text,
                 last_alert_at timestamptz, last_event_id bigint)
            FULL JOIN jsonb_to_recordset($3::jsonb) AS w(id uuid, outcomes jsonb, verdict text,
                 summary text, updated_at timestamptz, last_event_id bigint) USING (id)) AS r
   WHERE i.tenant_id = $1 AND i.id = r.id`;

const METRICS = `
  INSERT INTO metrics_hourly AS m (tenant_id, bucket, metric, value)
  SELECT $1, r.bucket, r.metric, r.value
    FROM jsonb_to_recordset($2::jsonb) AS r(bucket timestamptz, metric text, value double precision)
  ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = m.value + excluded.value`;

const RULES = `
  INSERT INTO rule_stats AS s (tenant_id, rule_id, rule_name, fired, last_fired_at)
  SELECT $1, r.rule_id, r.rule_name, r.fired, r.last_fired_at
    FROM jsonb_to_recordset($2::jsonb) AS r(rule_id text, rule_name text, fired bigint,
         last_fired_at timestamptz)
  ON CONFLICT (tenant_id, rule_id) DO UPDATE
     SET fired = s.fired + excluded.fired,
         rule_name = coalesce(excluded.rule_name, s.rule_name),
         last_fired_at = greatest(s.last_fired_at, excluded.last_fired_at)`;

const IOCS = `
  INSERT INTO ioc_stats AS s (tenant_id, ioc_type, ioc_value, hits, first_seen_at, last_seen_at)
  SELECT $1, r.ioc_type, r.ioc_value, r.hits, r.first_seen_at, r.last_seen_at
    FROM jsonb_to_recordset($2::jsonb) AS r(ioc_type text, ioc_value text, hits bigint,
         first_seen_at timestamptz, last_seen_at timestamptz)
  ON CONFLICT (tenant_id, ioc_type, ioc_value) DO UPDATE
     SET hits = s.hits + excluded.hits,
         first_seen_at = least(s.first_seen_at, excluded.first_seen_at),
         last_seen_at = greatest(s.last_seen_at, excluded.last_seen_at)`;

const ANALYZERS = `
  INSERT INTO analyzer_stats AS s (tenant_id, analyzer, runs, failures, total_duration_ms,
                                   last_run_at)
  SELECT $1, r.analyzer, r.runs, r.failures, r.total_duration_ms, r.last_run_at
    FROM jsonb_to_recordset($2::jsonb) AS r(analyzer text, runs bigint, failures bigint,
         total_duration_ms bigint, last_run_at timestamptz)
  ON CONFLICT (tenant_id, analyzer) DO UPDATE
     SET runs = s.runs + excluded.runs, failures = s.failures + excluded.failures,
         total_duration_ms = s.total_duration_ms + excluded.total_duration_ms,
         last_run_at = greatest(s.last_run_at, excluded.last_run_at)`;

/**
 * Writes one batch's changes: openings before the alerts and pipeline events that follow them;
 * a statement whose parts are all empty is skipped.
 */
export async function writeChanges(
  tx: TenantTx,
  tenantId: string,
  changes: ProjectionChanges,
): Promise<void> {
  const steps: [string, string, unknown[][]][] = [
    ['projections.open', OPEN, [changes.opened]],
    ['projections.investigations', INVESTIGATIONS, [changes.alerts, changes.workflow]],
    ['projections.metrics', METRICS, [changes.metrics]],
    ['projections.rules', RULES, [changes.rules]],
    ['projections.iocs', IOCS, [changes.iocs]],
    ['projections.analyzers', ANALYZERS, [changes.analyzers]],
  ];
  for (const [label, text, parts] of steps) {
    if (parts.every((rows) => rows.length === 0)) continue;
    const values = [tenantId, ...parts.map((rows) => JSON.stringify(rows))];
    await tx.query(prepared(label, text, values));
  }
}
