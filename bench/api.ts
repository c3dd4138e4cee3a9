/**
 * What does the API cost on top of its SQL, and does live fan-out hold up at 1,000 streams?
 *
 * One process holds everything but PostgreSQL (a scratch embedded server): the real app
 * (createApp + @hono/node-server on 127.0.0.1, ephemeral port), a bare Hono server beside it,
 * and the load generator (node:http over keep-alive sockets). RSS is therefore the app's plus
 * the load generator's, which only makes the memory figures more conservative.
 *
 *   1. HTTP: GET /api/tenant/overview with a customer_viewer's session cookie (session lookup,
 *      withTenant, RLS, contract validation) against a bare route that runs the same SQL as
 *      svc_mssp with `WHERE tenant_id = $1` written in, no auth and no transaction around it.
 *      Same tenants in the same order, same concurrency, alternating rounds; ratio app/bare.
 *   2. SSE: many subscribers on GET /api/tenant/events over real HTTP, 1 event/s per tenant
 *      appended with appendEvent inside withTenant; delivery latency from the append's commit
 *      to receipt, deliveries per subscriber, cross-tenant deliveries (must be 0), RSS, and
 *      the database connections in use (the hub needs none per subscriber).
 *
 * Exits 0 whatever the verdicts; non-zero only when the benchmark itself fails.
 *
 *   npm run bench:api -- --tenants 50 --events 10000 --duration 20 --subscribers 1000
 *   BENCH_TENANTS=… BENCH_EVENTS=… BENCH_DURATION=… BENCH_SSE_DURATION=… npm run bench:api
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { type ServerType, serve } from '@hono/node-server';
import { Hono } from 'hono';
import pg from 'pg';
import type { Static } from 'typebox';
import type { Overview } from '../contracts/tenant.ts';
import { createOriginPolicy } from '../src/auth/csrf.ts';
import { createPasswordHasher, type HashParams } from '../src/auth/passwords.ts';
import { type AuthConfig, loadConfig } from '../src/config/index.ts';
import { type AppDatabase, createAppDatabase } from '../src/db/pools.ts';
import type { ScratchDatabase } from '../src/db/scratch.ts';
import type { SystemGate } from '../src/db/system-gate.ts';
import { clientConfig, type DatabaseTarget } from '../src/db/target.ts';
import { appendEvent, createEventHub, type EventHub } from '../src/domains/events/index.ts';
import { createAuthService } from '../src/domains/sessions/session-service.ts';
import { createApp } from '../src/http/app.ts';
import { createLogger } from '../src/log/index.ts';
import { createTokenService, signingKeyFromPem } from '../src/tokens/index.ts';
import { percentile, readKernelPeak, resetKernelPeak, runOnScratchDatabase } from './harness.ts';

const TARGET_RATIO = 0.6;
const MIB = 1024 * 1024;
/** svc serve's pool size (createAppDatabase's default); the bare route gets as many. */
const POOL_SIZE = 10;
/** The appender stands in for a worker process with a small pool of its own. */
const APPENDER_POOL_SIZE = 4;
/** Hard caps so a broken server cannot keep the benchmark running. */
const MAX_REQUESTS_PER_PHASE = 1_000_000;
const REQUEST_TIMEOUT_MS = 30_000;
const WARMUP_MS = 2_000;
/** SSE connections opened at once; a thousand at the same instant only measures accept(). */
const CONNECT_PARALLELISM = 32;
const DRAIN_TIMEOUT_MS = 15_000;
const RSS_SAMPLE_MS = 100;
/** Sign-in is not measured here; cheap hashes keep minting 50 real sessions fast. */
const BENCH_HASH: HashParams = { memoryCost: 1024, timeCost: 1, parallelism: 1, outputLen: 32 };
const PASSWORD = 'api-bench-password-1';

interface Options {
  tenants: number;
  /** Per tenant. */
  events: number;
  investigations: number;
  reviews: number;
  concurrency: number;
  /** Per side, split over the rounds. */
  durationMs: number;
  rounds: number;
  subscribers: number;
  /** How long each tenant gets one event per second. */
  sseSeconds: number;
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      tenants: { type: 'string' },
      events: { type: 'string' },
      investigations: { type: 'string' },
      reviews: { type: 'string' },
      concurrency: { type: 'string' },
      duration: { type: 'string' },
      rounds: { type: 'string' },
      subscribers: { type: 'string' },
      'sse-duration': { type: 'string' },
    },
  });
  const pick = (name: keyof typeof values, fallback: number, min: number, max: number) => {
    const raw = values[name] ?? process.env[`BENCH_${name.toUpperCase().replaceAll('-', '_')}`];
    const value = raw === undefined ? fallback : Number(raw.replaceAll('_', ''));
    if (!Number.isInteger(value) || value < min || value > max)
      throw new Error(`--${name} must be an integer ${min}-${max}, got ${JSON.stringify(raw)}`);
    return value;
  };
  const investigations = pick('investigations', 2_000, 0, 100_000);
  return {
    tenants: pick('tenants', 50, 1, 1_000),
    events: pick('events', 10_000, 0, 200_000),
    investigations,
    reviews: pick('reviews', 200, 0, investigations),
    concurrency: pick('concurrency', 16, 1, 256),
    durationMs: pick('duration', 20, 1, 600) * 1000,
    rounds: pick('rounds', 4, 1, 100),
    subscribers: pick('subscribers', 1_000, 0, 10_000),
    sseSeconds: pick('sse-duration', 20, 1, 300),
  };
}

// --- The overview query ----------------------------------------------------------------

/**
 * The statement of src/http/tenant/overview.ts with the tenant written into every scan
 * instead of supplied by RLS. The run fails when the two endpoints answer differently for any
 * tenant, so a change to the app's query cannot go unnoticed here.
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

type OverviewBody = Static<typeof Overview>;
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

// --- Data -------------------------------------------------------------------------------

interface Tenant {
  id: string;
  email: string;
}

/** Statuses and severities spread so every part of the overview has something to count. */
const INVESTIGATIONS_SQL = `
  WITH g AS (
    SELECT t.id AS tenant_id, i, random() AS r, random() AS r2,
           $2::timestamptz - random() * interval '30 days' AS opened_at
      FROM tenants t, generate_series(1, $1::int) AS i
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
      FROM investigations
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

/** A week of history, in time order as an event store appends it: ~1/7 is in the last 24 h. */
const EVENTS_SQL = `
  WITH generated AS (
    SELECT t.id AS tenant_id, g, random() AS r,
           $2::timestamptz - random() * interval '7 days' AS occurred_at
      FROM tenants t, generate_series(0, $1::int - 1) AS g
  )
  INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor,
                      occurred_at)
  SELECT tenant_id, 'investigation', md5(tenant_id::text || (g / 8))::uuid, g % 8 + 1,
         CASE WHEN r < 0.5 THEN 'alert.created' WHEN r < 0.8 THEN 'alert.triaged'
              ELSE 'investigation.updated' END,
         jsonb_build_object('severity', g % 5 + 1), 'Adapter', occurred_at
    FROM generated
   ORDER BY occurred_at`;

/**
 * As the superuser, set-based. session_replication_role = replica skips the events triggers
 * (per-tenant append lock and one NOTIFY per row nobody listens to yet) and the foreign-key
 * checks; the generated rows are consistent by construction.
 */
async function seed(
  scratch: ScratchDatabase,
  options: Options,
  anchor: Date,
  passwordHash: string,
): Promise<Tenant[]> {
  const client = new pg.Client({ ...scratch.superuser, database: scratch.target.database });
  await client.connect();
  try {
    await client.query('SET synchronous_commit = off');
    await client.query(`SET work_mem = '256MB'`);
    await client.query('SET session_replication_role = replica');
    const { rows } = await client.query<{ id: string; i: number }>(
      `INSERT INTO tenants (slug, display_name, state)
       SELECT 'api-bench-' || i, 'API bench tenant ' || i, 'active'
         FROM generate_series(1, $1::int) AS i
       RETURNING id, substr(slug, 11)::int AS i`,
      [options.tenants],
    );
    const tenants = rows
      .sort((a, b) => a.i - b.i)
      .map((row) => ({ id: row.id, email: `viewer-${row.i}@api-bench.example` }));
    await client.query(
      `WITH u AS (
         INSERT INTO users (tenant_id, email, role)
         SELECT * FROM unnest($1::uuid[], $2::text[]) AS x, LATERAL (SELECT 'customer_viewer')
         RETURNING id
       )
       INSERT INTO password_credentials (user_id, password_hash) SELECT id, $3 FROM u`,
      [tenants.map((t) => t.id), tenants.map((t) => t.email), passwordHash],
    );
    await client.query(INVESTIGATIONS_SQL, [options.investigations, anchor]);
    await client.query(REVIEWS_SQL, [options.reviews, anchor]);
    await client.query(EVENTS_SQL, [options.events, anchor]);
    await client.query('VACUUM ANALYZE tenants, users, investigations, pending_reviews, events');
    return tenants;
  } finally {
    await client.end();
  }
}

// --- Servers ----------------------------------------------------------------------------

interface Server {
  url: string;
  close(): Promise<void>;
}

/** Both sides read the same clock, so the answer check can pin it to one instant. */
interface Clock {
  now(): Date;
  freeze(at: Date | undefined): void;
}

function createClock(): Clock {
  let frozen: Date | undefined;
  return {
    now: () => frozen ?? new Date(),
    freeze: (at) => {
      frozen = at;
    },
  };
}

async function listen(fetch: (request: Request) => Response | Promise<Response>) {
  const server: ServerType = serve({ fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((resolve) => {
      if ('closeAllConnections' in server) server.closeAllConnections();
      server.close(() => resolve());
    });
  return { url: `http://127.0.0.1:${port}`, close };
}

/**
 * The overview is a customer read under RLS; it must never need the bypass role, so the app
 * gets a gate that throws instead of a svc_mssp pool.
 */
const NO_SYSTEM_GATE: SystemGate = {
  withSystem: () => Promise.reject(new Error('the API benchmark provides no system gate')),
  close: async () => undefined,
};

function benchAuthConfig(): AuthConfig {
  return {
    ...loadConfig({}).auth,
    loginRateLimitPerIp: 1e9,
    loginRateLimitPerEmail: 1e9,
  };
}

function throwawayKey(): string {
  return generateKeyPairSync('ed25519')
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
}

/** The same wiring as `svc serve`, with the loopback origin policy of an embedded install. */
async function startApp(
  target: DatabaseTarget,
  db: AppDatabase,
  clock: Clock,
): Promise<Server & { events: EventHub }> {
  const hasher = createPasswordHasher({ concurrency: 2, queue: 64, params: BENCH_HASH });
  const events = await createEventHub({ target, db });
  const app = createApp({
    authMode: 'internal',
    trustedProxyCidrs: [],
    logger: createLogger('silent'),
    databaseReady: db.ping,
    api: {
      auth: benchAuthConfig(),
      db,
      system: NO_SYSTEM_GATE,
      hasher,
      origins: createOriginPolicy({
        msspHostname: undefined,
        customerHostname: undefined,
        allowLoopback: true,
      }),
      now: clock.now,
      tokens: createTokenService({
        key: await signingKeyFromPem(throwawayKey()),
        now: clock.now,
      }),
      events,
      service: createAuthService({ db, hasher, now: clock.now, authMode: 'internal' }),
    },
  });
  const server = await listen(app.fetch);
  return {
    url: server.url,
    events,
    close: async () => {
      await server.close();
      await events.close();
    },
  };
}

/** The same SQL with the tenant in the path: no session, no transaction, no RLS context. */
async function startBaseline(target: DatabaseTarget, clock: Clock): Promise<Server> {
  const pool = new pg.Pool({ ...clientConfig(target, 'mssp'), max: POOL_SIZE });
  pool.on('error', () => undefined);
  const app = new Hono();
  app.get('/overview/:tenantId', async (c) => {
    const now = clock.now();
    const { rows } = await pool.query<OverviewRow>(BASELINE_SQL, [c.req.param('tenantId'), now]);
    const row = rows[0];
    if (!row) return c.json({ code: 'tenant_not_found' }, 404);
    c.header('Cache-Control', 'no-store');
    return c.json(toBody(row, now));
  });
  const server = await listen(app.fetch);
  return {
    url: server.url,
    close: async () => {
      await server.close();
      await pool.end();
    },
  };
}

/**
 * Counts the app's transactions without changing them, as test/support/api.ts does: the
 * difference between the two sides is mostly these round trips.
 */
function counting(db: AppDatabase): { db: AppDatabase; transactions: () => number } {
  let n = 0;
  const counted = <T>(run: () => Promise<T>) => {
    n++;
    return run();
  };
  return {
    db: {
      ...db,
      withTenant: (id, fn) => counted(() => db.withTenant(id, fn)),
      withoutTenant: (fn) => counted(() => db.withoutTenant(fn)),
      withScope: (id, fn) => counted(() => db.withScope(id, fn)),
    },
    transactions: () => n,
  };
}

// --- HTTP client ------------------------------------------------------------------------

interface HttpResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function send(
  agent: http.Agent,
  url: string,
  init: { method?: string; headers?: http.OutgoingHttpHeaders; body?: string } = {},
): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { agent, method: init.method ?? 'GET', headers: init.headers ?? {} },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    request.setTimeout(REQUEST_TIMEOUT_MS, () =>
      request.destroy(new Error(`no answer in ${REQUEST_TIMEOUT_MS} ms: ${url}`)),
    );
    request.on('error', reject);
    request.end(init.body);
  });
}

/** Real sessions, minted by POST /api/auth/login as a browser on the app's origin would. */
async function signIn(agent: http.Agent, app: Server, tenants: Tenant[]): Promise<string[]> {
  const cookies: string[] = [];
  for (const tenant of tenants) {
    const result = await send(agent, `${app.url}/api/auth/login`, {
      method: 'POST',
      headers: { origin: app.url, 'content-type': 'application/json' },
      body: JSON.stringify({ email: tenant.email, password: PASSWORD }),
    });
    const cookie = result.headers['set-cookie']?.[0]?.split(';')[0];
    if (result.status !== 200 || !cookie)
      throw new Error(`login of ${tenant.email} failed: ${result.status} ${result.body}`);
    cookies.push(cookie);
  }
  return cookies;
}

// --- HTTP load --------------------------------------------------------------------------

type Side = 'app' | 'bare';

interface LoadResult {
  elapsedMs: number;
  /** HTTP status -> how many. */
  counts: Map<string, number>;
  /** Of the 200s only. */
  latencies: number[];
  roundRates: number[];
}

const EMPTY: LoadResult = { elapsedMs: 0, counts: new Map(), latencies: [], roundRates: [] };

const ok = (result: LoadResult) => result.counts.get('200') ?? 0;
const sum = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);
const rate = (result: LoadResult) => ok(result) / (result.elapsedMs / 1000);

/**
 * `concurrency` workers each start a request while the deadline has not passed; requests in
 * flight at the deadline are awaited and the clock runs until the last one ends, so
 * count / elapsed stays honest for both sides.
 */
async function runLoad(
  concurrency: number,
  durationMs: number,
  request: (index: number) => Promise<number>,
): Promise<LoadResult> {
  const counts = new Map<string, number>();
  const latencies: number[] = [];
  const started = performance.now();
  const deadline = started + durationMs;
  let issued = 0;
  const worker = async () => {
    while (performance.now() < deadline && issued < MAX_REQUESTS_PER_PHASE) {
      const begin = performance.now();
      const status = await request(issued++);
      if (status === 200) latencies.push(performance.now() - begin);
      counts.set(String(status), (counts.get(String(status)) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsedMs = performance.now() - started;
  return { elapsedMs, counts, latencies, roundRates: [] };
}

function merge(total: LoadResult, round: LoadResult): LoadResult {
  const counts = new Map(total.counts);
  for (const [status, n] of round.counts) counts.set(status, (counts.get(status) ?? 0) + n);
  return {
    elapsedMs: total.elapsedMs + round.elapsedMs,
    counts,
    latencies: total.latencies.concat(round.latencies),
    roundRates: [...total.roundRates, rate(round)],
  };
}

/**
 * The sides take turns, and which one goes first alternates, so a burst of load from other
 * work on the shared machine is less likely to land on one side only.
 */
async function alternate(
  options: Options,
  requests: Record<Side, (index: number) => Promise<number>>,
): Promise<Record<Side, LoadResult>> {
  const turnMs = options.durationMs / options.rounds;
  const totals: Record<Side, LoadResult> = { app: EMPTY, bare: EMPTY };
  for (let round = 0; round < options.rounds; round++) {
    const order: Side[] = round % 2 === 0 ? ['app', 'bare'] : ['bare', 'app'];
    for (const side of order) {
      const result = await runLoad(options.concurrency, turnMs, requests[side]);
      totals[side] = merge(totals[side], result);
    }
  }
  return totals;
}

/**
 * Both endpoints must give the same answer for every tenant at one pinned instant: if the app
 * failed to see its rows, or the copied SQL drifted, the ratio would compare different work.
 */
async function checkSameAnswers(
  agent: http.Agent,
  urls: Record<Side, (tenant: number) => string>,
  headers: (tenant: number) => http.OutgoingHttpHeaders,
  tenants: number,
  clock: Clock,
): Promise<OverviewBody> {
  clock.freeze(new Date());
  try {
    let first: OverviewBody | undefined;
    for (let tenant = 0; tenant < tenants; tenant++) {
      const app = await send(agent, urls.app(tenant), { headers: headers(tenant) });
      const bare = await send(agent, urls.bare(tenant));
      if (app.status !== 200 || bare.status !== 200)
        throw new Error(`overview answered ${app.status} (app) / ${bare.status} (bare route)`);
      const body = JSON.parse(app.body) as OverviewBody;
      if (!isDeepStrictEqual(body, JSON.parse(bare.body)))
        throw new Error(
          `app and bare route disagree for tenant ${tenant}:\n${app.body}\n${bare.body}`,
        );
      first ??= body;
    }
    if (!first) throw new Error('no tenants');
    return first;
  } finally {
    clock.freeze(undefined);
  }
}

// --- SSE --------------------------------------------------------------------------------

interface Delivery {
  id: string;
  /** The tenant id the event's payload names. */
  payloadTenant: string | undefined;
  at: number;
}

interface SseClient {
  tenant: number;
  tenantId: string;
  request: http.ClientRequest;
  buffer: string;
  deliveries: Delivery[];
}

interface Commit {
  tenant: number;
  at: number;
}

/** The `data:` of one stream event: its id and the payload the appender wrote. */
function readDelivery(data: string, at: number): Delivery | undefined {
  const value: unknown = JSON.parse(data);
  if (typeof value !== 'object' || value === null) return undefined;
  const { id, payload } = value as { id?: unknown; payload?: unknown };
  if (typeof id !== 'string') return undefined;
  const tenant =
    typeof payload === 'object' && payload !== null
      ? (payload as { tenant_id?: unknown }).tenant_id
      : undefined;
  return { id, payloadTenant: typeof tenant === 'string' ? tenant : undefined, at };
}

/** Frames end with a blank line; comments (`: heartbeat`) carry no data and are skipped. */
function consume(client: SseClient, chunk: string, at: number): void {
  client.buffer += chunk;
  for (let end = client.buffer.indexOf('\n\n'); end !== -1; end = client.buffer.indexOf('\n\n')) {
    const frame = client.buffer.slice(0, end);
    client.buffer = client.buffer.slice(end + 2);
    const data = frame
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n');
    const delivery = data === '' ? undefined : readDelivery(data, at);
    if (delivery) client.deliveries.push(delivery);
  }
}

/** Resolves once the stream's headers arrived, i.e. once the hub has positioned it. */
function subscribe(
  agent: http.Agent,
  url: string,
  cookie: string,
  tenant: number,
  tenantId: string,
): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, {
      agent,
      headers: { cookie, accept: 'text/event-stream' },
    });
    const client: SseClient = { tenant, tenantId, request, buffer: '', deliveries: [] };
    const timer = setTimeout(
      () => request.destroy(new Error('SSE subscribe timed out')),
      REQUEST_TIMEOUT_MS,
    );
    request.on('response', (response) => {
      clearTimeout(timer);
      if (response.statusCode !== 200) {
        request.destroy();
        reject(new Error(`SSE subscribe answered ${response.statusCode}`));
        return;
      }
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => consume(client, chunk, performance.now()));
      // Teardown destroys the request on purpose; errors after that are expected.
      response.on('error', () => undefined);
      resolve(client);
    });
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    request.end();
  });
}

async function connectAll(
  agent: http.Agent,
  app: Server,
  cookies: string[],
  tenants: Tenant[],
  count: number,
  clients: SseClient[],
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      const tenant = index % tenants.length;
      const cookie = cookies[tenant];
      const tenantId = tenants[tenant]?.id;
      if (cookie === undefined || tenantId === undefined) throw new Error('no session');
      clients.push(
        await subscribe(agent, `${app.url}/api/tenant/events`, cookie, tenant, tenantId),
      );
    }
  };
  await Promise.all(Array.from({ length: CONNECT_PARALLELISM }, worker));
}

interface AppendResult {
  commits: Map<string, Commit>;
  perTenant: number[];
  /** BEGIN … COMMIT of each append, as the writer sees it. */
  latencies: number[];
  /** How far behind schedule each append started (a busy machine or a blocked loop shows). */
  lags: number[];
}

/**
 * One event per second per tenant, the tenants' ticks spread evenly over each second. Each
 * tenant appends to its own stream, one append at a time (the stream position must advance).
 * The commit time is taken when COMMIT has returned: that is when a reader can see the row.
 */
async function appendTicks(
  db: AppDatabase,
  tenants: Tenant[],
  seconds: number,
): Promise<AppendResult> {
  const result: AppendResult = {
    commits: new Map(),
    perTenant: tenants.map(() => 0),
    latencies: [],
    lags: [],
  };
  const start = performance.now() + 100;
  const tick = async (tenant: Tenant, index: number) => {
    const streamId = randomUUID();
    for (let seq = 1; seq <= seconds; seq++) {
      const due = start + (index * 1000) / tenants.length + (seq - 1) * 1000;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      result.lags.push(Math.max(0, performance.now() - due));
      const begin = performance.now();
      const event = await db.withTenant(tenant.id, (tx) =>
        appendEvent(tx, {
          tenantId: tenant.id,
          streamType: 'bench',
          streamId,
          streamSeq: seq,
          type: 'bench.tick',
          payload: { tenant_id: tenant.id, seq },
          actor: 'Worker',
        }),
      );
      const at = performance.now();
      result.latencies.push(at - begin);
      result.commits.set(event.id, { tenant: index, at });
      result.perTenant[index] = (result.perTenant[index] ?? 0) + 1;
    }
  };
  await Promise.all(tenants.map(tick));
  return result;
}

async function drain(clients: SseClient[], perTenant: number[]): Promise<number> {
  const started = performance.now();
  const done = () =>
    clients.every((client) => client.deliveries.length >= (perTenant[client.tenant] ?? 0));
  while (!done() && performance.now() - started < DRAIN_TIMEOUT_MS) await sleep(50);
  return performance.now() - started;
}

interface DeliveryStats {
  latencies: number[];
  foreign: number;
  unknown: number;
  duplicates: number;
  /** Of this subscriber's own tenant, distinct events received. */
  perSubscriber: number[];
  missing: number;
}

/**
 * A delivery is foreign when its payload names another tenant or its id was appended for
 * another tenant; both are checked so a bug in either the payload or the routing shows.
 */
function analyse(clients: SseClient[], appended: AppendResult): DeliveryStats {
  const stats: DeliveryStats = {
    latencies: [],
    foreign: 0,
    unknown: 0,
    duplicates: 0,
    perSubscriber: [],
    missing: 0,
  };
  for (const client of clients) {
    const seen = new Set<string>();
    for (const delivery of client.deliveries) {
      const commit = appended.commits.get(delivery.id);
      if (commit === undefined) stats.unknown++;
      if (delivery.payloadTenant !== client.tenantId || (commit && commit.tenant !== client.tenant))
        stats.foreign++;
      else if (seen.has(delivery.id)) stats.duplicates++;
      else if (commit) {
        seen.add(delivery.id);
        stats.latencies.push(Math.max(0, delivery.at - commit.at));
      }
    }
    stats.perSubscriber.push(seen.size);
    stats.missing += (appended.perTenant[client.tenant] ?? 0) - seen.size;
  }
  return stats;
}

interface ConnectionCount {
  usename: string;
  application_name: string;
  n: number;
}

/** Every backend on the database, by role and pool, as the superuser sees them. */
async function databaseConnections(scratch: ScratchDatabase): Promise<ConnectionCount[]> {
  const client = new pg.Client({ ...scratch.superuser, database: 'postgres' });
  await client.connect();
  try {
    const { rows } = await client.query<ConnectionCount>(
      `SELECT usename, application_name, count(*)::int AS n FROM pg_stat_activity
        WHERE datname = $1 AND backend_type = 'client backend'
        GROUP BY 1, 2 ORDER BY 1, 2`,
      [scratch.target.database],
    );
    return rows;
  } finally {
    await client.end();
  }
}

// --- Memory -----------------------------------------------------------------------------

function sampleRss(): { peak(): number; stop(): void } {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, RSS_SAMPLE_MS);
  return { peak: () => peak, stop: () => clearInterval(timer) };
}

// --- Report -----------------------------------------------------------------------------

/** Nearest-rank percentile. */
const mib = (bytes: number) => `${(bytes / MIB).toFixed(0)} MiB`;
const ms = (value: number) => `${value.toFixed(2)} ms`;
const seconds = (value: number) => `${(value / 1000).toFixed(1)} s`;
const verdict = (pass: boolean) => (pass ? 'PASS' : 'FAIL');

function describeCounts(counts: Map<string, number>): string {
  const parts = [...counts]
    .filter(([status]) => status !== '200')
    .map(([status, n]) => `${status} x${n}`);
  return parts.length === 0 ? 'none' : parts.join(', ');
}

function printSide(title: string, result: LoadResult): void {
  console.log(`\n[${title}]`);
  console.log(
    `  ${ok(result)} x 200 in ${seconds(result.elapsedMs)} = ${rate(result).toFixed(1)} req/s` +
      ` (rounds: ${result.roundRates.map((r) => r.toFixed(0)).join(', ')})`,
  );
  console.log(
    `  latency p50 ${ms(percentile(result.latencies, 50))},` +
      ` p99 ${ms(percentile(result.latencies, 99))};` +
      ` non-200: ${describeCounts(result.counts)}`,
  );
}

// --- Phases -----------------------------------------------------------------------------

interface Context {
  scratch: ScratchDatabase;
  options: Options;
  tenants: Tenant[];
  cookies: string[];
  app: Server & { events: EventHub };
  bare: Server;
  clock: Clock;
  /** Transactions the app has opened through svc_app so far. */
  transactions: () => number;
}

async function httpPhase(ctx: Context): Promise<boolean> {
  const { options, tenants, cookies, app, bare, clock } = ctx;
  const agents = {
    app: new http.Agent({ keepAlive: true, maxSockets: options.concurrency }),
    bare: new http.Agent({ keepAlive: true, maxSockets: options.concurrency }),
  };
  const urls = {
    app: () => `${app.url}/api/tenant/overview`,
    bare: (tenant: number) => `${bare.url}/overview/${tenants[tenant]?.id}`,
  };
  const headers = (tenant: number) => ({ cookie: cookies[tenant] ?? '' });
  try {
    const sample = await checkSameAnswers(agents.app, urls, headers, tenants.length, clock);
    console.log(`  answers: identical for all ${tenants.length} tenants; tenant 1 sees`);
    console.log(`    ${JSON.stringify({ ...sample, tenant: undefined, as_of: undefined })}`);
    const requests = {
      app: async (i: number) => {
        const tenant = i % tenants.length;
        return (await send(agents.app, urls.app(), { headers: headers(tenant) })).status;
      },
      bare: async (i: number) => (await send(agents.bare, urls.bare(i % tenants.length))).status,
    };
    await runLoad(options.concurrency, WARMUP_MS, requests.app);
    await runLoad(options.concurrency, WARMUP_MS, requests.bare);
    const before = ctx.transactions();
    const result = await alternate(options, requests);
    const perRequest = (ctx.transactions() - before) / Math.max(1, sum(result.app.counts));
    printSide('app: GET /api/tenant/overview, session cookie, withTenant + RLS', result.app);
    console.log(
      `  ${perRequest.toFixed(2)} svc_app transactions per request (bare route: 1 query)`,
    );
    printSide('bare: same SQL as svc_mssp, WHERE tenant_id = $1, no auth', result.bare);
    const ratio = rate(result.bare) === 0 ? 0 : rate(result.app) / rate(result.bare);
    const p50 = (side: Side) => percentile(result[side].latencies, 50);
    const pass = ratio >= TARGET_RATIO;
    console.log(
      `\n[ratio] app/bare throughput = ${ratio.toFixed(3)} (target >= ${TARGET_RATIO}) -> ` +
        `${verdict(pass)}; p50 latency app/bare = ` +
        `${(p50('app') / p50('bare')).toFixed(2)}x`,
    );
    return pass;
  } finally {
    agents.app.destroy();
    agents.bare.destroy();
  }
}

function printConnections(rows: ConnectionCount[], appRole: string, subscribers: number): boolean {
  const app = rows.filter((row) => row.usename === appRole);
  const total = app.reduce((sum, row) => sum + row.n, 0);
  console.log(`  database backends with ${subscribers} streams open:`);
  for (const row of rows) console.log(`    ${row.usename} ${row.application_name}: ${row.n}`);
  // Server pool + its one LISTEN connection + the appender's pool: none of it per stream.
  const bound = POOL_SIZE + 1 + APPENDER_POOL_SIZE;
  const pass = total <= bound;
  console.log(`  svc_app backends ${total} <= ${bound} (pools + LISTEN) -> ${verdict(pass)}`);
  return pass;
}

async function ssePhase(ctx: Context): Promise<boolean> {
  const { scratch, options, tenants, cookies, app } = ctx;
  const count = options.subscribers;
  console.log(
    `\n[sse] ${count} subscribers on GET /api/tenant/events over ${tenants.length} tenants,` +
      ` 1 event/s per tenant for ${options.sseSeconds} s (appendEvent in withTenant)`,
  );
  const agent = new http.Agent({ keepAlive: false, maxSockets: count + 1 });
  const appender = createAppDatabase(scratch.target, APPENDER_POOL_SIZE);
  const clients: SseClient[] = [];
  const rssBefore = process.memoryUsage.rss();
  const kernelReset = await resetKernelPeak();
  const rss = sampleRss();
  try {
    const connectStart = performance.now();
    await connectAll(agent, app, cookies, tenants, count, clients);
    const status = app.events.status();
    const rssConnected = process.memoryUsage.rss();
    const perStream = (rssConnected - rssBefore) / Math.max(1, count) / 1024;
    console.log(
      `  connected in ${seconds(performance.now() - connectStart)}; hub: ${status.subscribers}` +
        ` subscribers, ${status.tenants} tenants; RSS ${mib(rssBefore)} before ->` +
        ` ${mib(rssConnected)} (${perStream.toFixed(0)} KiB per stream, both ends)`,
    );
    if (status.subscribers !== count) throw new Error(`hub has ${status.subscribers} subscribers`);
    const [appended, connections] = await Promise.all([
      appendTicks(appender, tenants, options.sseSeconds),
      sleep(options.sseSeconds * 500).then(() => databaseConnections(scratch)),
    ]);
    const drained = await drain(clients, appended.perTenant);
    rss.stop();
    const kernelPeak = kernelReset ? await readKernelPeak() : undefined;
    const pooled = printConnections(connections, scratch.target.credentials.app.user, count);
    const delivered = reportSse(clients, appended, drained, {
      before: rssBefore,
      connected: rssConnected,
      peak: Math.max(rss.peak(), kernelPeak ?? 0),
    });
    return pooled && delivered;
  } finally {
    rss.stop();
    for (const client of clients) client.request.destroy();
    agent.destroy();
    await appender.close();
    await waitForHubToEmpty(app.events);
  }
}

function reportSse(
  clients: SseClient[],
  appended: AppendResult,
  drainedMs: number,
  rss: { before: number; connected: number; peak: number },
): boolean {
  const stats = analyse(clients, appended);
  const total = appended.perTenant.reduce((sum, n) => sum + n, 0);
  const expected = clients.reduce((sum, c) => sum + (appended.perTenant[c.tenant] ?? 0), 0);
  console.log(
    `  appended ${total} events; append txn p50 ${ms(percentile(appended.latencies, 50))},` +
      ` p99 ${ms(percentile(appended.latencies, 99))}; start lag behind schedule` +
      ` p99 ${ms(percentile(appended.lags, 99))}, max ${ms(Math.max(...appended.lags))}`,
  );
  console.log(
    `  deliveries ${stats.latencies.length} of ${expected} expected` +
      ` (drained ${seconds(drainedMs)} after the last append); per subscriber` +
      ` min ${Math.min(...stats.perSubscriber)}, median ${percentile(stats.perSubscriber, 50)},` +
      ` max ${Math.max(...stats.perSubscriber)}; missing ${stats.missing},` +
      ` duplicates ${stats.duplicates}, unknown ids ${stats.unknown}`,
  );
  console.log(
    `  delivery latency (commit -> receipt) p50 ${ms(percentile(stats.latencies, 50))},` +
      ` p99 ${ms(percentile(stats.latencies, 99))}, max ${ms(Math.max(...stats.latencies))}`,
  );
  const isolated = stats.foreign === 0 && stats.unknown === 0;
  console.log(`  cross-tenant deliveries: ${stats.foreign} -> ${verdict(isolated)}`);
  const complete = stats.missing === 0 && stats.duplicates === 0;
  console.log(`  every subscriber got every event of its tenant once -> ${verdict(complete)}`);
  console.log(
    `  RSS (app + ${clients.length} client sockets): ${mib(rss.before)} before,` +
      ` ${mib(rss.connected)} connected, peak ${mib(rss.peak)}`,
  );
  return isolated && complete;
}

/** Closing the streams must release every subscription; a leak would show as a count here. */
async function waitForHubToEmpty(hub: EventHub): Promise<void> {
  for (let attempt = 0; attempt < 100 && hub.status().subscribers > 0; attempt++) await sleep(50);
  const left = hub.status().subscribers;
  console.log(`  after disconnect: ${left} subscribers left in the hub -> ${verdict(left === 0)}`);
}

// --- Main -------------------------------------------------------------------------------

async function benchmark(scratch: ScratchDatabase, options: Options): Promise<void> {
  console.log(
    `api bench: ${availableParallelism()} cores; ${options.tenants} tenants x (` +
      `${options.events} events, ${options.investigations} investigations, ${options.reviews}` +
      ` reviews); concurrency ${options.concurrency}, ${seconds(options.durationMs)} per side in` +
      ` ${options.rounds} alternating rounds; ${options.subscribers} SSE subscribers`,
  );
  const hasher = createPasswordHasher({ concurrency: 2, queue: 4, params: BENCH_HASH });
  const loadStart = performance.now();
  const tenants = await seed(scratch, options, new Date(), await hasher.hash(PASSWORD));
  console.log(`  seeded in ${seconds(performance.now() - loadStart)}`);

  const clock = createClock();
  const { db, transactions } = counting(createAppDatabase(scratch.target, POOL_SIZE));
  const servers: Server[] = [];
  try {
    const app = await startApp(scratch.target, db, clock);
    servers.push(app);
    const bare = await startBaseline(scratch.target, clock);
    servers.push(bare);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const cookies = await signIn(agent, app, tenants).finally(() => agent.destroy());
    console.log(`  app ${app.url}, bare route ${bare.url}; ${cookies.length} sessions`);
    const ctx: Context = { scratch, options, tenants, cookies, app, bare, clock, transactions };
    const httpPass = await httpPhase(ctx);
    const ssePass = options.subscribers === 0 ? true : await ssePhase(ctx);
    console.log(`\nsummary: http ${verdict(httpPass)}, sse ${verdict(ssePass)}`);
  } finally {
    for (const server of servers.reverse()) await server.close();
    await db.close();
  }
}

runOnScratchDatabase((scratch) => benchmark(scratch, parseOptions()));
