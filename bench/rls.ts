/**
 * What does row-level security cost on the hottest tenant-scoped reads?
 *
 * Loads a scratch database with many tenants' events, then runs each query two ways over the
 * same tenants in one run: as svc_app with the tenant supplied by RLS (policy
 * `tenant_isolation`), and as svc_mssp (BYPASSRLS) with the same tenant written into the SQL.
 * Everything else (transaction shape, set_config call, prepared statements, one dedicated
 * connection per variant) is identical, so the ratio RLS/baseline is the price of the policy.
 *
 *   npm run bench:rls -- --tenants 1000 --events 1000000 --iterations 2000
 *   BENCH_TENANTS=… BENCH_EVENTS=… BENCH_ITERATIONS=… npm run bench:rls
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { ScratchDatabase } from '../src/db/scratch.ts';
import { clientConfig } from '../src/db/target.ts';
import { percentile, runOnScratchDatabase } from './harness.ts';

const TARGET_P50_RATIO = 1.1;
const DAY_MS = 86_400_000;
/** Events spread over this many days back from the load's anchor time. */
const HISTORY_DAYS = 30;

interface Options {
  tenants: number;
  events: number;
  iterations: number;
  warmup: number;
  seed: number;
}

type Variant = 'rls' | 'baseline';

/** One query of the benchmark, in its RLS and its explicit-filter form. */
interface BenchQuery {
  id: string;
  title: string;
  /** Parameters that both variants share; the baseline gets the tenant id prepended as $1. */
  params(tenantId: string, random: () => number, anchor: Date): unknown[];
  sql: Record<Variant, string>;
}

interface Sample {
  /** BEGIN … COMMIT, what a handler in withTenant() waits for. */
  txn: number;
  /** The query statement alone: the part RLS can actually change. */
  stmt: number;
}

const Q1_COLUMNS = 'id, stream_type, stream_id, stream_seq, type, payload, actor, occurred_at';

const QUERIES: readonly BenchQuery[] = [
  {
    id: 'q1',
    title: 'Q1 latest 50 events of a tenant',
    params: () => [],
    sql: {
      rls: `SELECT ${Q1_COLUMNS} FROM events ORDER BY occurred_at DESC LIMIT 50`,
      baseline: `SELECT ${Q1_COLUMNS} FROM events WHERE tenant_id = $1
                  ORDER BY occurred_at DESC LIMIT 50`,
    },
  },
  {
    id: 'q2',
    title: 'Q2 count by type over one day',
    params: (_tenantId, random, anchor) => {
      const day = Math.floor(random() * HISTORY_DAYS);
      const from = new Date(anchor.getTime() - (day + 1) * DAY_MS);
      return [from, new Date(from.getTime() + DAY_MS)];
    },
    sql: {
      rls: `SELECT type, count(*) FROM events
             WHERE occurred_at >= $1 AND occurred_at < $2 GROUP BY type`,
      baseline: `SELECT type, count(*) FROM events
                  WHERE tenant_id = $1 AND occurred_at >= $2 AND occurred_at < $3 GROUP BY type`,
    },
  },
];

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      tenants: { type: 'string' },
      events: { type: 'string' },
      iterations: { type: 'string' },
      warmup: { type: 'string' },
      seed: { type: 'string' },
    },
  });
  const pick = (name: keyof typeof values, fallback: number, min: number): number => {
    const raw = values[name] ?? process.env[`BENCH_${name.toUpperCase()}`];
    const value = raw === undefined ? fallback : Number(raw.replaceAll('_', ''));
    if (!Number.isInteger(value) || value < min)
      throw new Error(`--${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
    return value;
  };
  const tenants = pick('tenants', 1000, 1);
  const iterations = pick('iterations', 2000, 1);
  return {
    tenants,
    events: pick('events', 1_000_000, tenants),
    iterations,
    warmup: pick('warmup', Math.max(50, Math.floor(iterations / 10)), 0),
    seed: pick('seed', 42, 0),
  };
}

/** Seeded PRNG (mulberry32) so two runs measure the same tenants and days. */
function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const result = await fn();
  return [result, performance.now() - start];
}

async function connect(config: pg.ClientConfig): Promise<pg.Client> {
  const client = new pg.Client(config);
  await client.connect();
  return client;
}

// --- Load -------------------------------------------------------------------------------

/**
 * Tenants, then events in one set-based statement. Volume per tenant follows a Zipf-like
 * curve (rank^-0.8: the largest tenant holds ~6% of all rows, the smallest a few hundred)
 * because real MSSP customers differ by orders of magnitude, and a planner that guesses
 * "average tenant" for RLS would be wrong exactly there. ceil() guarantees every tenant has
 * rows and the total reaches the requested count. Rows are inserted in time order, as a live
 * event store appends them, so one tenant's events are spread over many heap pages.
 */
const LOAD_EVENTS_SQL = `
  WITH ranked AS (
    SELECT id, power(row_number() OVER (ORDER BY random()), -0.8) AS weight FROM tenants
  ), sized AS (
    SELECT id, ceil(weight / sum(weight) OVER () * $1::int)::int AS n FROM ranked
  ), generated AS (
    SELECT s.id AS tenant_id, g, random() AS r,
           $2::timestamptz - random() * interval '${HISTORY_DAYS} days' AS occurred_at
      FROM sized s, generate_series(0, s.n - 1) AS g
  )
  INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor,
                      occurred_at)
  SELECT tenant_id,
         'investigation',
         md5(tenant_id::text || (g / 8))::uuid,
         g % 8 + 1,
         CASE WHEN r < 0.45 THEN 'alert.created'
              WHEN r < 0.70 THEN 'alert.triaged'
              WHEN r < 0.82 THEN 'investigation.opened'
              WHEN r < 0.92 THEN 'investigation.updated'
              WHEN r < 0.97 THEN 'action.proposed'
              ELSE 'action.approved' END,
         jsonb_build_object('rule_id', 'rule-' || (g % 500), 'severity', (g % 5) + 1),
         CASE WHEN r < 0.70 THEN 'Adapter' ELSE 'Worker' END,
         occurred_at
    FROM generated
   ORDER BY occurred_at`;

interface LoadResult {
  tenantIds: string[];
  /** The largest tenant: where a tenant-blind plan estimate would be furthest off. */
  largestTenant: { id: string; rows: number };
  eventRows: number;
  timings: Record<'tenants' | 'events' | 'vacuum', number>;
}

/** As the superuser, which bypasses RLS and owns no pool the benchmark measures. */
async function loadData(
  scratch: ScratchDatabase,
  options: Options,
  anchor: Date,
): Promise<LoadResult> {
  const client = await connect({ ...scratch.superuser, database: scratch.target.database });
  try {
    // Durability is irrelevant for throwaway data, and the time-ordering sort fits in memory.
    await client.query('SET synchronous_commit = off');
    await client.query(`SET work_mem = '256MB'`);
    await client.query('SELECT setseed($1)', [(options.seed % 1000) / 1000]);
    const [, tenants] = await timed(() =>
      client.query(
        `INSERT INTO tenants (slug, display_name, state)
         SELECT 'bench-' || i, 'Bench tenant ' || i, 'active' FROM generate_series(1, $1) AS i`,
        [options.tenants],
      ),
    );
    const [inserted, events] = await timed(() =>
      client.query(LOAD_EVENTS_SQL, [options.events, anchor]),
    );
    const [, vacuum] = await timed(() => client.query('VACUUM ANALYZE tenants, events'));
    // Ordered by slug, not by the random uuid, so a seed picks the same tenants every run.
    const { rows } = await client.query<{ id: string; n: number }>(
      `SELECT t.id, count(e.*)::int AS n FROM tenants t LEFT JOIN events e ON e.tenant_id = t.id
        GROUP BY t.id, t.slug ORDER BY length(t.slug), t.slug`,
    );
    if (rows.some((row) => row.n === 0)) throw new Error('a tenant has no events');
    const largest = rows.reduce((a, b) => (b.n > a.n ? b : a), { id: '', n: 0 });
    return {
      tenantIds: rows.map((row) => row.id),
      largestTenant: { id: largest.id, rows: largest.n },
      eventRows: inserted.rowCount ?? 0,
      timings: { tenants, events, vacuum },
    };
  } finally {
    await client.end();
  }
}

// --- Measure ----------------------------------------------------------------------------

/**
 * One request the way withTenant() issues it. The baseline runs the very same transaction
 * shape, set_config included, so only the policy differs. Statements are named so both
 * variants are prepared once per connection and reuse a cached plan, like a busy server.
 */
async function runOnce(
  client: pg.Client,
  variant: Variant,
  query: BenchQuery,
  tenantId: string,
  params: unknown[],
): Promise<{ sample: Sample; rows: unknown[] }> {
  const start = performance.now();
  await client.query('BEGIN');
  await client.query({
    name: 'set_tenant',
    text: `SELECT set_config('app.current_tenant_id', $1, true)`,
    values: [tenantId],
  });
  const [result, stmt] = await timed(() =>
    client.query({
      name: `${query.id}_${variant}`,
      text: query.sql[variant],
      values: variant === 'rls' ? params : [tenantId, ...params],
    }),
  );
  await client.query('COMMIT');
  return { sample: { txn: performance.now() - start, stmt }, rows: result.rows };
}

/** Row order of a GROUP BY is unspecified, so compare as sorted JSON. */
function sameRows(a: unknown[], b: unknown[]): boolean {
  const canonical = (rows: unknown[]) =>
    rows
      .map((row) => JSON.stringify(row))
      .sort()
      .join('\n');
  return canonical(a) === canonical(b);
}

/**
 * Each iteration runs both variants for the same tenant and parameters, alternating which
 * goes first so neither always finds the pages the other just read, and so a burst of noise
 * from the shared machine lands on both. Results must match: an RLS query that silently saw
 * no rows would look very fast.
 */
async function measure(
  clients: Record<Variant, pg.Client>,
  query: BenchQuery,
  tenants: string[],
  random: () => number,
  anchor: Date,
): Promise<Record<Variant, Sample[]>> {
  const samples: Record<Variant, Sample[]> = { rls: [], baseline: [] };
  for (const [index, tenantId] of tenants.entries()) {
    const params = query.params(tenantId, random, anchor);
    const order: Variant[] = index % 2 === 0 ? ['rls', 'baseline'] : ['baseline', 'rls'];
    const rows: Partial<Record<Variant, unknown[]>> = {};
    for (const variant of order) {
      const run = await runOnce(clients[variant], variant, query, tenantId, params);
      samples[variant].push(run.sample);
      rows[variant] = run.rows;
    }
    if (!sameRows(rows.rls ?? [], rows.baseline ?? []))
      throw new Error(`${query.id}: RLS and baseline disagree for tenant ${tenantId}`);
  }
  return samples;
}

function sampleTenants(tenantIds: string[], count: number, random: () => number): string[] {
  return Array.from({ length: count }, () => {
    const id = tenantIds[Math.floor(random() * tenantIds.length)];
    if (id === undefined) throw new Error('no tenants to sample');
    return id;
  });
}

// --- Report -----------------------------------------------------------------------------

/** Nearest-rank percentile. */
const ms = (value: number) => `${value.toFixed(3)} ms`.padStart(11);
const ratio = (value: number) => `${value.toFixed(3)}x`;

function summarise(samples: Record<Variant, Sample[]>, field: keyof Sample) {
  const pick = (variant: Variant) => samples[variant].map((sample) => sample[field]);
  const [rls, baseline] = [pick('rls'), pick('baseline')];
  const p50 = { rls: percentile(rls, 50), baseline: percentile(baseline, 50) };
  const p99 = { rls: percentile(rls, 99), baseline: percentile(baseline, 99) };
  return { p50, p99, p50Ratio: p50.rls / p50.baseline, p99Ratio: p99.rls / p99.baseline };
}

function printResult(query: BenchQuery, samples: Record<Variant, Sample[]>): void {
  console.log(`\n${query.title}  (n=${samples.rls.length} per variant)`);
  console.log('                      p50 RLS   p50 base   ratio     p99 RLS   p99 base   ratio');
  for (const [field, label] of [
    ['txn', 'transaction'],
    ['stmt', 'statement only'],
  ] as const) {
    const s = summarise(samples, field);
    console.log(
      `  ${label.padEnd(15)}${ms(s.p50.rls)}${ms(s.p50.baseline)}  ${ratio(s.p50Ratio)}` +
        `  ${ms(s.p99.rls)}${ms(s.p99.baseline)}  ${ratio(s.p99Ratio)}`,
    );
  }
  const verdict = summarise(samples, 'txn').p50Ratio <= TARGET_P50_RATIO ? 'PASS' : 'FAIL';
  console.log(`  target: transaction p50 RLS <= ${TARGET_P50_RATIO}x baseline -> ${verdict}`);
}

/** Whether the measured statements ran on a per-tenant (custom) or a generic cached plan. */
async function printPlanCacheUse(clients: Record<Variant, pg.Client>): Promise<void> {
  console.log('\nPlan cache use during the run (pg_prepared_statements):');
  for (const [variant, client] of Object.entries(clients)) {
    const { rows } = await client.query<{ name: string; generic: number; custom: number }>(
      `SELECT name, generic_plans AS generic, custom_plans AS custom
         FROM pg_prepared_statements WHERE name LIKE 'q%' ORDER BY name`,
    );
    for (const row of rows)
      console.log(
        `  ${variant.padEnd(8)} ${row.name.padEnd(12)} generic=${row.generic} custom=${row.custom}`,
      );
  }
}

type PlanMode = 'force_generic_plan' | 'force_custom_plan';

/**
 * EXPLAIN (ANALYZE, BUFFERS) of one variant inside the same kind of transaction as the
 * benchmark. It goes through a SQL-level PREPARE so the plan cache mode can be pinned: the
 * run's named statements settle on generic plans (see the plan cache counts), and a generic
 * plan is what shows how each variant is really executed.
 */
async function explain(
  client: pg.Client,
  variant: Variant,
  query: BenchQuery,
  tenantId: string,
  params: unknown[],
  mode: PlanMode,
): Promise<string[]> {
  // EXECUTE's arguments cannot be bound parameters of the outer EXPLAIN, so they are literals.
  const values = variant === 'rls' ? params : [tenantId, ...params];
  const literals = values.map((value) =>
    client.escapeLiteral(value instanceof Date ? value.toISOString() : String(value)),
  );
  const args = literals.length === 0 ? '' : `(${literals.join(', ')})`;
  let prepared = false;
  await client.query('BEGIN');
  try {
    await client.query(`SELECT set_config('app.current_tenant_id', $1, true)`, [tenantId]);
    await client.query(`SET LOCAL plan_cache_mode = ${mode}`);
    await client.query(`PREPARE explain_me AS ${query.sql[variant]}`);
    prepared = true;
    // The first execution in a backend pays one-off costs (cold pages, catalog caches) that
    // made single-shot timings differ up to 2x between otherwise identical plans; keep the second.
    const sql = `EXPLAIN (ANALYZE, BUFFERS) EXECUTE explain_me${args}`;
    await client.query(sql);
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(sql);
    return rows.map((row) => row['QUERY PLAN']);
  } finally {
    // Prepared statements outlive ROLLBACK; the next EXPLAIN reuses the name.
    await client.query('ROLLBACK');
    if (prepared) await client.query('DEALLOCATE explain_me');
  }
}

/**
 * Per query: both variants as the benchmark ran them (generic plans), then the baseline's
 * custom plan, i.e. what the planner does when it may look at this tenant's own statistics.
 * RLS can never get that last kind: the tenant comes from the policy's sub-select, which the
 * planner turns into an InitPlan evaluated at execution, so its row estimate is always the
 * average tenant's (rows / n_distinct(tenant_id)).
 */
async function printPlans(
  clients: Record<Variant, pg.Client>,
  tenant: { id: string; rows: number },
  anchor: Date,
): Promise<void> {
  console.log(`\nPlans for the largest tenant ${tenant.id} (${tenant.rows} rows):`);
  const random = createRandom(7);
  const cases = [
    ['rls', 'force_generic_plan'],
    ['baseline', 'force_generic_plan'],
    ['baseline', 'force_custom_plan'],
  ] as const;
  for (const query of QUERIES) {
    const params = query.params(tenant.id, random, anchor);
    for (const [variant, mode] of cases) {
      const plan = await explain(clients[variant], variant, query, tenant.id, params, mode);
      const kind = mode === 'force_generic_plan' ? 'generic plan, as run' : 'custom plan';
      console.log(`\n--- ${query.title}: ${variant} (${kind})`);
      for (const line of plan) console.log(`  ${line}`);
    }
  }
}

// --- Main -------------------------------------------------------------------------------

async function benchmark(scratch: ScratchDatabase, options: Options): Promise<void> {
  // Whole hours keep the day windows of Q2 readable in plans and logs.
  const anchor = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000);
  console.log(
    `rls bench: ${options.tenants} tenants, ${options.events} events, ` +
      `${options.iterations} iterations (+${options.warmup} warmup), seed ${options.seed}`,
  );
  const loaded = await loadData(scratch, options, anchor);
  const { tenants, events, vacuum } = loaded.timings;
  console.log(
    `load: tenants ${(tenants / 1000).toFixed(1)} s, ${loaded.eventRows} events ` +
      `${(events / 1000).toFixed(1)} s, VACUUM ANALYZE ${(vacuum / 1000).toFixed(1)} s, ` +
      `total ${((tenants + events + vacuum) / 1000).toFixed(1)} s`,
  );

  const clients = {
    rls: await connect(clientConfig(scratch.target, 'app')),
    baseline: await connect(clientConfig(scratch.target, 'mssp')),
  };
  try {
    const random = createRandom(options.seed);
    const warmup = sampleTenants(loaded.tenantIds, options.warmup, random);
    const sample = sampleTenants(loaded.tenantIds, options.iterations, random);
    for (const query of QUERIES) {
      await measure(clients, query, warmup, random, anchor);
      printResult(query, await measure(clients, query, sample, random, anchor));
    }
    await printPlanCacheUse(clients);
    await printPlans(clients, loaded.largestTenant, anchor);
  } finally {
    await Promise.all([clients.rls.end(), clients.baseline.end()]);
  }
}

runOnScratchDatabase((scratch) => benchmark(scratch, parseOptions()));
