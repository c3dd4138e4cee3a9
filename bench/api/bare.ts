import { Hono } from 'hono';
import pg from 'pg';
import type { Static } from 'typebox';
import type { Overview } from '../../contracts/tenant.ts';
import { clientConfig, type DatabaseTarget } from '../../src/db/target.ts';
import { countRoundTrips } from './round-trips.ts';
import { type Clock, listen, POOL_SIZE, type Server } from './servers.ts';

/**
 * The app's overview statement (readOverview: the tenant written into every scan, RLS beside
 * it) without RLS: svc_mssp, no tenant context, no session, no transaction. The run fails when
 * the two endpoints answer differently for any tenant, so a change to the app's query cannot go
 * unnoticed here.
 */
const BASELINE_SQL = `
  WITH open_counts AS (
    SELECT severity, status, count(*)::int AS n
      FROM investigations
     WHERE tenant_id = $1 AND status IN ('open', 'triaging', 'awaiting_review')
     GROUP BY severity, status
  )
  SELECT t.id, t.display_name, t.state,
         (SELECT coalesce(jsonb_agg(o), '[]') FROM open_counts o) AS open_counts,
         (SELECT count(*)::int FROM pending_reviews
           WHERE tenant_id = $1 AND decision IS NULL
             AND (expires_at IS NULL OR expires_at > $2)) AS pending_reviews,
         (SELECT count(*)::int FROM events
           WHERE tenant_id = $1
             AND occurred_at > $2::timestamptz - interval '24 hours') AS events_last_24h,
         (SELECT count(*)::int FROM investigations
           WHERE tenant_id = $1
             AND resolved_at > $2::timestamptz - interval '7 days') AS resolved_last_7d
    FROM tenants t
   WHERE t.id = $1::uuid`;

export type OverviewBody = Static<typeof Overview>;
type Breakdown = OverviewBody['open_investigations'];

interface OverviewRow {
  id: string;
  display_name: string;
  state: OverviewBody['tenant']['state'];
  open_counts: {
    severity: keyof Breakdown['by_severity'];
    status: keyof Breakdown['by_status'];
    n: number;
  }[];
  pending_reviews: number;
  events_last_24h: number;
  resolved_last_7d: number;
}

/** The handler's row-to-body mapping, so the bare route sends the same bytes' worth of JSON. */
function toBody(row: OverviewRow, now: Date): OverviewBody {
  const open: Breakdown = {
    total: 0,
    by_severity: { info: 0, low: 0, medium: 0, high: 0, critical: 0 },
    by_status: { open: 0, triaging: 0, awaiting_review: 0 },
  };
  for (const { severity, status, n } of row.open_counts) {
    open.total += n;
    open.by_severity[severity] += n;
    open.by_status[status] += n;
  }
  return {
    tenant: { id: row.id, display_name: row.display_name, state: row.state },
    open_investigations: open,
    pending_reviews: row.pending_reviews,
    events_last_24h: row.events_last_24h,
    resolved_last_7d: row.resolved_last_7d,
    as_of: now.toISOString(),
  };
}

/** The same SQL with the tenant in the path: no session, no transaction, no RLS context. */
export async function startBare(target: DatabaseTarget, clock: Clock): Promise<Server> {
  const pool = new pg.Pool({ ...clientConfig(target, 'mssp'), max: POOL_SIZE });
  pool.on('error', () => undefined);
  const roundTrips = countRoundTrips(pool);
  const app = new Hono();
  app.get('/overview/:tenantId', async (c) => {
    const now = clock.now();
    const { rows } = await pool.query<OverviewRow>({
      name: 'bare.overview',
      text: BASELINE_SQL,
      values: [c.req.param('tenantId'), now],
    });
    const row = rows[0];
    if (!row) return c.json({ code: 'tenant_not_found' }, 404);
    c.header('Cache-Control', 'no-store');
    return c.json(toBody(row, now));
  });
  const server = await listen(app.fetch);
  return {
    url: server.url,
    roundTrips,
    close: async () => {
      await server.close();
      await pool.end();
    },
  };
}
