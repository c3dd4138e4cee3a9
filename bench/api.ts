/**
 * What does the API cost on top of its SQL, and does live fan-out hold up at fleet size
 * (10,000 streams over 1,000 tenants, on one or several svc serve replicas)?
 *
 * PostgreSQL is a scratch embedded server.
 *
 *   1. HTTP, once per data size (light: a few rows per tenant; realistic: a busy tenant's
 *      history), in this process: the real app (from src/app/compose.ts, on @hono/node-server
 *      at 127.0.0.1, ephemeral port), a bare Hono server beside it, and the load generator
 *      (node:http over keep-alive sockets). GET /api/tenant/overview with a customer_viewer's
 *      session cookie (session check, RLS, contract validation, all in one unit of work)
 *      against a bare route that runs the same SQL as svc_mssp with `WHERE tenant_id = $1`
 *      written in, no auth and no transaction around it. Same tenants in the same order, same
 *      concurrency, alternating rounds; ratio app/bare, and the queries each side sends
 *      PostgreSQL per request.
 *   2. SSE, on the last data size's tenants (or, with --data none, on --tenants bare tenants):
 *      --replicas svc serve processes (bench/api/sse-server.ts) on the one database, and
 *      --subscribers streams on GET /api/tenant/events over real HTTP from --sse-processes
 *      client processes (bench/api/sse-client-process.ts), each with a session of its own
 *      minted by createSession. This process appends 1 event/s per tenant with appendEvent
 *      inside withTenant, on a pool of --appender-connections (4: a worker's stand-in; it
 *      prints the rate it reached, which on 2 cores stays under the nominal one). Printed, each beside its goal: delivery latency from the append's
 *      commit to receipt (p50/p99 < 250 ms), deliveries per subscriber, cross-tenant deliveries
 *      (0), each replica's peak RSS (< 1 GiB), svc's CPU per delivered event per subscriber (and
 *      net of its idle cost with every stream open), a full credential-watch pass, the database
 *      backends (none per stream), and the machine's load.
 *
 * Exits 0 whatever the verdicts; non-zero only when the benchmark itself fails.
 *
 *   npm run bench:api -- --data both --tenants 50 --events 10000 --light-events 100 \
 *     --duration 20 --subscribers 1000
 *   npm run bench:api -- --data none --tenants 1000 --subscribers 10000 --replicas 3
 *   BENCH_DATA=… BENCH_TENANTS=… BENCH_EVENTS=… BENCH_DURATION=… BENCH_SSE_DURATION=… \
 *     BENCH_REPLICAS=… BENCH_SSE_PROCESSES=… npm run bench:api
 */
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { hash } from '@node-rs/argon2';
import type { ScratchDatabase } from '../src/db/scratch.ts';
import { startBare } from './api/bare.ts';
import { describeDataset, type HttpVerdict, httpPhase, PASSWORD, signIn } from './api/http.ts';
import type { LoadShape } from './api/load.ts';
import { seconds, verdict } from './api/report.ts';
import { type Dataset, seed, type Tenant, visibility } from './api/seed.ts';
import { BENCH_HASH, createClock, type Server, startApp } from './api/servers.ts';
import { APPENDER_POOL_SIZE, ssePhase } from './api/sse.ts';
import { runOnScratchDatabase } from './harness.ts';

interface Options {
  /** Run in this order; the SSE phase runs on the last one's tenants. */
  datasets: Dataset[];
  shape: LoadShape;
  /** 0 skips the SSE phase. */
  subscribers: number;
  sseSeconds: number;
  /** Tenants of the SSE phase when no HTTP data size runs (--data none). */
  tenants: number;
  replicas: number;
  sseProcesses: number;
  /** The appender's pool (a worker's stand-in); the default keeps earlier runs comparable. */
  appenderConnections: number;
}

const FLAGS = [
  'tenants',
  'events',
  'investigations',
  'reviews',
  'light-events',
  'light-investigations',
  'light-reviews',
  'concurrency',
  'duration',
  'rounds',
  'subscribers',
  'sse-duration',
  'replicas',
  'sse-processes',
  'appender-connections',
] as const;

/** Every flag also reads BENCH_<NAME> (dashes as underscores); the flag wins. */
function reader(values: Partial<Record<string, string>>) {
  const raw = (name: string) =>
    values[name] ?? process.env[`BENCH_${name.toUpperCase().replaceAll('-', '_')}`];
  const int = (name: (typeof FLAGS)[number], fallback: number, min: number, max: number) => {
    const text = raw(name);
    const value = text === undefined ? fallback : Number(text.replaceAll('_', ''));
    if (!Number.isInteger(value) || value < min || value > max)
      throw new Error(`--${name} must be an integer ${min}-${max}, got ${JSON.stringify(text)}`);
    return value;
  };
  return { raw, int };
}

/** light: the request path's own cost dominates; realistic: the SQL has real work to do. */
function datasets(read: ReturnType<typeof reader>): Dataset[] {
  const tenants = read.int('tenants', 50, 1, 1_000);
  const investigations = read.int('investigations', 2_000, 0, 100_000);
  const lightInvestigations = read.int('light-investigations', 20, 0, 100_000);
  const all: Dataset[] = [
    {
      name: 'light',
      tenants,
      events: read.int('light-events', 100, 0, 200_000),
      investigations: lightInvestigations,
      reviews: read.int('light-reviews', 5, 0, lightInvestigations),
      target: 0.6,
    },
    {
      name: 'realistic',
      tenants,
      events: read.int('events', 10_000, 0, 200_000),
      investigations,
      reviews: read.int('reviews', 200, 0, investigations),
      target: 0.8,
    },
  ];
  const data = read.raw('data') ?? 'both';
  if (!['both', 'light', 'realistic', 'none'].includes(data))
    throw new Error(`--data must be both, light, realistic or none, got ${JSON.stringify(data)}`);
  return all.filter((dataset) => data === 'both' || dataset.name === data);
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: Object.fromEntries(
      ['data', ...FLAGS].map((name) => [name, { type: 'string' as const }]),
    ),
  });
  const read = reader(values as Partial<Record<string, string>>);
  return {
    datasets: datasets(read),
    shape: {
      concurrency: read.int('concurrency', 16, 1, 256),
      durationMs: read.int('duration', 20, 1, 600) * 1000,
      rounds: read.int('rounds', 4, 1, 100),
    },
    subscribers: read.int('subscribers', 1_000, 0, 10_000),
    sseSeconds: read.int('sse-duration', 20, 1, 300),
    tenants: read.int('tenants', 50, 1, 1_000),
    replicas: read.int('replicas', 1, 1, 4),
    sseProcesses: read.int('sse-processes', 4, 1, 8),
    appenderConnections: read.int('appender-connections', APPENDER_POOL_SIZE, 1, 32),
  };
}

function printPlan(options: Options): void {
  const { shape } = options;
  console.log(
    `api bench: ${availableParallelism()} cores; concurrency ${shape.concurrency},` +
      ` ${seconds(shape.durationMs)} per side in ${shape.rounds} alternating rounds per data` +
      ` size; ${options.subscribers} SSE subscribers on ${options.replicas} replica(s)`,
  );
  for (const dataset of options.datasets)
    console.log(`  ${dataset.name}: ${describeDataset(dataset)}, target >= ${dataset.target}`);
}

/** Seeds one data size's tenants (beside the earlier ones) and signs each one's viewer in. */
async function prepare(
  scratch: ScratchDatabase,
  app: Awaited<ReturnType<typeof startApp>>,
  dataset: Dataset,
): Promise<{ tenants: Tenant[]; cookies: string[] }> {
  const started = performance.now();
  const tenants = await seed(scratch, dataset, new Date(), await app.hasher.hash(PASSWORD));
  const cookies = await signIn(app, tenants);
  console.log(
    `\n${dataset.name}: seeded and signed in ${tenants.length} sessions in` +
      ` ${seconds(performance.now() - started)}; all-visible pages: ${await visibility(scratch)}`,
  );
  return { tenants, cookies };
}

function printSummary(verdicts: HttpVerdict[], sse: string): void {
  const http = verdicts.map(
    ({ dataset, ratio, pass }) =>
      `http ${dataset.name} ${ratio.toFixed(2)} (>= ${dataset.target}) ${verdict(pass)}`,
  );
  console.log(`\nsummary: ${[...http, `sse ${sse}`].join(', ')}`);
}

/** The HTTP comparison on every data size; the app and the bare route stop after it. */
async function httpPhases(scratch: ScratchDatabase, options: Options) {
  const clock = createClock();
  const servers: Server[] = [];
  const verdicts: HttpVerdict[] = [];
  let last: Tenant[] | undefined;
  try {
    const app = await startApp(scratch.target, clock);
    servers.push(app);
    const bare = await startBare(scratch.target, clock);
    servers.push(bare);
    console.log(`  app ${app.url}, bare route ${bare.url}`);
    for (const dataset of options.datasets) {
      const prepared = await prepare(scratch, app, dataset);
      verdicts.push(
        await httpPhase({ dataset, shape: options.shape, app, bare, clock, ...prepared }),
      );
      last = prepared.tenants;
    }
  } finally {
    for (const server of servers.reverse()) await server.close();
  }
  return { verdicts, last };
}

/** --data none: tenants with a viewer each and no history, for the SSE phase alone. */
async function bareTenants(scratch: ScratchDatabase, tenants: number): Promise<Tenant[]> {
  const started = performance.now();
  const dataset: Dataset = {
    name: 'light',
    tenants,
    events: 0,
    investigations: 0,
    reviews: 0,
    target: 0,
  };
  const seeded = await seed(scratch, dataset, new Date(), await hash(PASSWORD, BENCH_HASH));
  console.log(`
seeded ${seeded.length} tenants in ${seconds(performance.now() - started)}`);
  return seeded;
}

async function benchmark(scratch: ScratchDatabase, options: Options): Promise<void> {
  printPlan(options);
  const { verdicts, last } =
    options.datasets.length > 0
      ? await httpPhases(scratch, options)
      : { verdicts: [], last: undefined };
  let sse = 'skipped';
  if (options.subscribers > 0) {
    const tenants = last ?? (await bareTenants(scratch, options.tenants));
    sse = verdict(
      await ssePhase({
        scratch,
        tenants,
        subscribers: options.subscribers,
        seconds: options.sseSeconds,
        replicas: options.replicas,
        clientProcesses: options.sseProcesses,
        appenderConnections: options.appenderConnections,
      }),
    );
  }
  printSummary(verdicts, sse);
}

runOnScratchDatabase((scratch) => benchmark(scratch, parseOptions()));
