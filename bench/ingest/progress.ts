import { performance } from 'node:perf_hooks';
import type pg from 'pg';

/**
 * Ground truth read through svc_mssp (BYPASSRLS), never through the app: what is stored
 * (`ingest_checkpoints.alerts_total`, written in each batch's transaction) and what the
 * projector has made visible (`investigations.alert_count`), per tenant.
 */
const COUNTS_SQL = `
  SELECT t.id AS tenant_id,
         coalesce((SELECT sum(alerts_total) FROM ingest_checkpoints c WHERE c.tenant_id = t.id), 0)::int
           AS stored,
         coalesce((SELECT sum(alert_count) FROM investigations i WHERE i.tenant_id = t.id), 0)::int
           AS projected
    FROM unnest($1::uuid[]) AS t(id)`;

export interface Counts {
  /** performance.now() when the answer arrived: the snapshot is at most this old. */
  at: number;
  stored: Map<string, number>;
  projected: Map<string, number>;
  storedTotal: number;
  projectedTotal: number;
}

export async function readCounts(pool: pg.Pool, tenantIds: string[]): Promise<Counts> {
  const { rows } = await pool.query<{ tenant_id: string; stored: number; projected: number }>({
    name: 'bench.ingest.counts',
    text: COUNTS_SQL,
    values: [tenantIds],
  });
  const at = performance.now();
  const stored = new Map(rows.map((r) => [r.tenant_id, r.stored]));
  const projected = new Map(rows.map((r) => [r.tenant_id, r.projected]));
  const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  return { at, stored, projected, storedTotal: sum(stored), projectedTotal: sum(projected) };
}

/**
 * Per tenant after a phase: alert events stored, investigations, alert_count summed, and
 * whether every projection's checkpoint reached the tenant's last event.
 */
export interface TenantCheck {
  tenant_id: string;
  alerts: number;
  investigations: number;
  alert_count: number;
  last_event_id: string;
  lowest_checkpoint: string;
  projections: number;
}

export async function checkTenants(pool: pg.Pool, tenantIds: string[]): Promise<TenantCheck[]> {
  const { rows } = await pool.query<TenantCheck>(
    `SELECT t.id AS tenant_id,
            (SELECT count(*) FROM events e WHERE e.tenant_id = t.id AND e.type = 'alert.received')::int
              AS alerts,
            (SELECT count(*) FROM investigations i WHERE i.tenant_id = t.id)::int AS investigations,
            (SELECT coalesce(sum(alert_count), 0) FROM investigations i WHERE i.tenant_id = t.id)::int
              AS alert_count,
            (SELECT coalesce(max(id), 0) FROM events e WHERE e.tenant_id = t.id)::text AS last_event_id,
            (SELECT coalesce(min(last_event_id), 0) FROM projection_checkpoints p
              WHERE p.tenant_id = t.id)::text AS lowest_checkpoint,
            (SELECT count(*) FROM projection_checkpoints p WHERE p.tenant_id = t.id)::int
              AS projections
       FROM unnest($1::uuid[]) AS t(id)`,
    [tenantIds],
  );
  return rows;
}
