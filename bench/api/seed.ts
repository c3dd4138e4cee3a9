import pg from 'pg';
import type { ScratchDatabase } from '../../src/db/scratch.ts';

/** One data size the HTTP comparison runs on, and the ratio it has to reach there. */
export interface Dataset {
  name: 'light' | 'realistic';
  tenants: number;
  /** Per tenant. */
  events: number;
  investigations: number;
  reviews: number;
  target: number;
}

export interface Tenant {
  id: string;
  email: string;
}

const TENANTS_SQL = `
  INSERT INTO tenants (slug, display_name, state)
  SELECT slug, 'API bench ' || slug, 'active' FROM unnest($1::text[]) AS slug
  RETURNING id, slug`;

const USERS_SQL = `
  WITH u AS (
    INSERT INTO users (tenant_id, email, role)
    SELECT * FROM unnest($1::uuid[], $2::text[]) AS x, LATERAL (SELECT 'customer_viewer')
    RETURNING id
  )
  INSERT INTO password_credentials (user_id, password_hash) SELECT id, $3 FROM u`;

/** Statuses and severities spread so every part of the overview has something to count. */
const INVESTIGATIONS_SQL = `
  WITH g AS (
    SELECT t.id AS tenant_id, i, random() AS r, random() AS r2,
           $2::timestamptz - random() * interval '30 days' AS opened_at
      FROM unnest($3::uuid[]) AS t(id), generate_series(1, $1::int) AS i
  ), timed AS (
    SELECT *, CASE WHEN r >= 0.55 THEN opened_at + r2 * ($2::timestamptz - opened_at) END AS done
      FROM g
  )
  INSERT INTO investigations (tenant_id, title, status, severity, opened_at, updated_at,
                              resolved_at, closed_at)
  SELECT tenant_id, 'Bench investigation ' || i,
         CASE WHEN r < 0.30 THEN 'open' WHEN r < 0.45 THEN 'triaging'
              WHEN r < 0.55 THEN 'awaiting_review' WHEN r < 0.80 THEN 'resolved'
              ELSE 'closed' END,
         (ARRAY['info', 'low', 'medium', 'high', 'critical'])[1 + i % 5],
         opened_at, coalesce(done, opened_at), done,
         CASE WHEN r >= 0.80 THEN done END
    FROM timed`;

/** About 40% undecided and unexpired, the rest decided or expired: the filter has work. */
const REVIEWS_SQL = `
  WITH picked AS (
    SELECT tenant_id, id, random() AS r,
           row_number() OVER (PARTITION BY tenant_id ORDER BY opened_at) AS n
      FROM investigations WHERE tenant_id = ANY($3::uuid[])
  )
  INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, rationale, risk,
                               requested_by, requested_at, expires_at, decision, decided_at)
  SELECT tenant_id, id, 'isolate_host', 'bench', (ARRAY['low', 'medium', 'high'])[1 + n % 3],
         'Worker', $2::timestamptz - r * interval '1 day',
         CASE WHEN r < 0.2 THEN NULL WHEN r < 0.4 THEN $2::timestamptz - interval '1 hour'
              ELSE $2::timestamptz + interval '7 days' END,
         CASE WHEN r > 0.6 THEN 'approved' END,
         CASE WHEN r > 0.6 THEN $2::timestamptz END
    FROM picked WHERE n <= $1::int`;

/**
 * A week of history, in time order as an event store appends it: ~1/7 is in the last 24 h.
 * Generated once into a temporary table, then appended in two parts around the VACUUM (the
 * part older than $1, then the rest): see `UNVACUUMED_FRACTION`.
 */
const EVENTS_GENERATE_SQL = `
  CREATE TEMPORARY TABLE bench_events AS
  SELECT t.id AS tenant_id, g, random() AS r,
         $2::timestamptz - random() * interval '7 days' AS occurred_at
    FROM unnest($3::uuid[]) AS t(id), generate_series(0, $1::int - 1) AS g`;

const EVENTS_APPEND_SQL = `
  INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor,
                      occurred_at)
  SELECT tenant_id, 'investigation', md5(tenant_id::text || (g / 8))::uuid, g % 8 + 1,
         CASE WHEN r < 0.5 THEN 'alert.created' WHEN r < 0.8 THEN 'alert.triaged'
              ELSE 'investigation.updated' END,
         jsonb_build_object('severity', g % 5 + 1), 'Adapter', occurred_at
    FROM bench_events
   WHERE occurred_at >= $1::timestamptz AND occurred_at < $2::timestamptz
   ORDER BY occurred_at`;

/**
 * The share of each table's most recent writes that autovacuum has not visited yet. Autovacuum
 * visits a table once its inserted or updated rows since the last visit pass 20% of the table
 * (the default scale factors), so on average the newest ~10% of the writes are unvisited: their
 * pages are not all-visible, and reading them costs heap fetches. The seed reproduces that state
 * deterministically: everything older is loaded and VACUUMed (after a synchronous commit, so the
 * VACUUM can mark every page, docs/benchmarks.md API "Session 26"), then the newest tenth of the
 * events is appended and the newest tenth of the investigations and reviews is updated (as a
 * status change would), and the tables are ANALYZEd, not vacuumed.
 */
export const UNVACUUMED_FRACTION = 0.1;

/** The window each table's rows were written in, for the cut-off of its newest tenth. */
const WRITE_WINDOWS_DAYS = { events: 7, investigations: 30, reviews: 1 };

/** Rewrites (as an update does) the rows last changed at or after $1, without changing them. */
const TOUCH_RECENT_SQL = {
  investigations: 'UPDATE investigations SET updated_at = updated_at WHERE updated_at >= $1',
  reviews: 'UPDATE pending_reviews SET requested_at = requested_at WHERE requested_at >= $1',
};

/** The dataset's tenants in order, each with a customer_viewer whose password has that hash. */
async function insertTenants(
  client: pg.Client,
  dataset: Dataset,
  passwordHash: string,
): Promise<Tenant[]> {
  const slugs = Array.from(
    { length: dataset.tenants },
    (_, i) => `api-bench-${dataset.name}-${i + 1}`,
  );
  const { rows } = await client.query<{ id: string; slug: string }>(TENANTS_SQL, [slugs]);
  const ids = new Map(rows.map((row) => [row.slug, row.id]));
  const tenants = slugs.map((slug) => ({
    id: ids.get(slug) ?? '',
    email: `viewer@${slug}.example`,
  }));
  await client.query(USERS_SQL, [
    tenants.map((t) => t.id),
    tenants.map((t) => t.email),
    passwordHash,
  ]);
  return tenants;
}

/**
 * As the superuser, set-based, one dataset's tenants at a time (earlier datasets' rows stay).
 * session_replication_role = replica skips the events triggers (per-tenant append lock and one
 * NOTIFY per row nobody listens to yet) and the foreign-key checks; the generated rows are
 * consistent by construction.
 */
export async function seed(
  scratch: ScratchDatabase,
  dataset: Dataset,
  anchor: Date,
  passwordHash: string,
): Promise<Tenant[]> {
  const client = new pg.Client({ ...scratch.superuser, database: scratch.target.database });
  await client.connect();
  try {
    await client.query('SET synchronous_commit = off');
    await client.query(`SET work_mem = '256MB'`);
    await client.query('SET session_replication_role = replica');
    const tenants = await insertTenants(client, dataset, passwordHash);
    const ids = tenants.map((t) => t.id);
    await client.query(INVESTIGATIONS_SQL, [dataset.investigations, anchor, ids]);
    await client.query(REVIEWS_SQL, [dataset.reviews, anchor, ids]);
    const cutoff = (days: number) =>
      new Date(anchor.getTime() - UNVACUUMED_FRACTION * days * 86_400_000);
    const recentEvents = cutoff(WRITE_WINDOWS_DAYS.events);
    await client.query(EVENTS_GENERATE_SQL, [dataset.events, anchor, ids]);
    await client.query(EVENTS_APPEND_SQL, [new Date(0), recentEvents]);
    // A synchronous commit flushes the WAL of every asynchronous one before it: the VACUUM
    // then finds every loaded row's commit durable and marks every page all-visible.
    await client.query('SET synchronous_commit = on');
    await client.query('SELECT pg_catalog.txid_current()');
    await client.query('VACUUM ANALYZE tenants, users, investigations, pending_reviews, events');
    // What autovacuum has not visited yet: the newest writes of each table.
    await client.query(EVENTS_APPEND_SQL, [recentEvents, new Date(anchor.getTime() + 1)]);
    await client.query('DROP TABLE bench_events');
    await client.query(TOUCH_RECENT_SQL.investigations, [
      cutoff(WRITE_WINDOWS_DAYS.investigations),
    ]);
    await client.query(TOUCH_RECENT_SQL.reviews, [cutoff(WRITE_WINDOWS_DAYS.reviews)]);
    await client.query('ANALYZE tenants, users, investigations, pending_reviews, events');
    return tenants;
  } finally {
    await client.end();
  }
}

/**
 * How much of each table the overview reads is all-visible: with `UNVACUUMED_FRACTION` of the
 * newest writes unvisited, about nine events pages in ten, and no investigations or reviews
 * pages (their updates land on every page). Printed so every run says which state it
 * measured (the state moves the shared statement's cost, and so the ratio: docs/benchmarks.md,
 * API, sessions 25 and 26).
 */
export async function visibility(scratch: ScratchDatabase): Promise<string> {
  const client = new pg.Client({ ...scratch.superuser, database: scratch.target.database });
  await client.connect();
  try {
    const { rows } = await client.query<{ relname: string; visible: number; pages: number }>(
      `SELECT relname, relallvisible AS visible, relpages AS pages FROM pg_class
        WHERE relname IN ('events', 'investigations', 'pending_reviews') ORDER BY relname`,
    );
    return rows.map((r) => `${r.relname} ${r.visible}/${r.pages}`).join(', ');
  } finally {
    await client.end();
  }
}
