import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import type { AppDatabase } from '../../src/db/pools.ts';
import type { IngestService } from '../../src/domains/ingest/ingest-service.ts';
import { type WazuhAlert, wazuhAlert } from '../../test/support/wazuh-alerts.ts';

/** Active tenants on the install defaults (no stored LLM settings, the default triage policy). */
export async function createTenants(db: AppDatabase, count: number): Promise<string[]> {
  const slugs = Array.from({ length: count }, (_, n) => `pipeline-bench-${n + 1}`);
  const { rows } = await db.pool.query<{ id: string }>(
    `INSERT INTO tenants (slug, display_name, state)
     SELECT s, 'Pipeline bench ' || s, 'active' FROM unnest($1::text[]) WITH ORDINALITY AS u(s, n)
     ORDER BY n RETURNING id`,
    [slugs],
  );
  return rows.map((r) => r.id);
}

/**
 * The n-th investigation's one alert: a real sshd brute-force rule (level 10: above the
 * default policy's auto-close level, in no escalate group, so the model decides) on a host of
 * its own, so every alert opens its own investigation and every prompt differs (no cache hits).
 */
function alertFor(n: number): WazuhAlert {
  const alert = wazuhAlert(n, { kind: 0 });
  return {
    ...alert,
    agent: {
      id: `b${n}`,
      name: `host-${n}`,
      ip: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
    },
  };
}

/** When each investigation's opening committed, by the agent that makes it unique. */
export type Openings = Map<string, number>;

/**
 * Opens investigations `from` … `from + count - 1` for one tenant in one ingest batch (one
 * transaction, as an adapter's batch), returning the commit time of each.
 */
export async function openInvestigations(
  ingest: IngestService,
  tenantId: string,
  from: number,
  count: number,
): Promise<Openings> {
  const alerts = Array.from({ length: count }, (_, i) => alertFor(from + i));
  const outcome = await ingest.ingest(tenantId, {
    alerts,
    checkpoint: { search_after: [from + count], index: 'wazuh-alerts-*' },
  });
  const committed = performance.now();
  if (outcome.opened !== count) {
    throw new Error(`ingest opened ${outcome.opened} investigations, expected ${count}`);
  }
  return new Map(alerts.map((a) => [a.agent.id, committed]));
}

/** Investigation id → when its opening committed (read once, after the phase). */
export async function investigationsOf(
  mssp: pg.Pool,
  openings: Openings,
): Promise<Map<string, number>> {
  const { rows } = await mssp.query<{ id: string; agent: string }>(
    `SELECT stream_id AS id, payload->>'agent_id' AS agent FROM events
      WHERE type = 'investigation.opened' AND payload->>'agent_id' = ANY($1::text[])`,
    [[...openings.keys()]],
  );
  return new Map(rows.map((r) => [r.id, openings.get(r.agent) ?? Number.NaN]));
}

/** How many of these investigations have their decision.made event, and of which kind. */
export async function decisionsOf(
  mssp: pg.Pool,
  ids: string[],
): Promise<{ decided: number; closed: number; reviews: number }> {
  const { rows } = await mssp.query<{ decided: string; closed: string; reviews: string }>(
    `SELECT count(*) FILTER (WHERE type = 'decision.made') AS decided,
            count(*) FILTER (WHERE type = 'investigation.closed') AS closed,
            count(*) FILTER (WHERE type = 'review.requested') AS reviews
       FROM events WHERE stream_type = 'investigation' AND stream_id = ANY($1::uuid[])`,
    [ids],
  );
  const row = rows[0];
  return {
    decided: Number(row?.decided ?? 0),
    closed: Number(row?.closed ?? 0),
    reviews: Number(row?.reviews ?? 0),
  };
}
