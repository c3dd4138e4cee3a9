import { generateKeyPairSync } from 'node:crypto';
/**
 * How close does a full sign-in come to raw argon2id throughput, and does a burst of sign-ins
 * stay inside the memory the hash limit promises?
 *
 * One process holds everything but PostgreSQL (a scratch embedded server): the real app (from
 * src/app/compose.ts, on @hono/node-server at 127.0.0.1, ephemeral port) and the load
 * generator (fetch over keep-alive sockets). Keeping the server in this process means its RSS
 * is simply process.memoryUsage().rss; the load generator's own memory is counted too, which
 * only makes the memory figure more conservative.
 *
 *   1. a burst of concurrent logins while RSS is sampled (run first, on a process that has not
 *      yet done hundreds of hashes, so earlier phases cannot inflate the baseline)
 *   2. raw @node-rs/argon2 verify of a production-parameter hash at a fixed concurrency, and
 *   3. POST /api/auth/login at the same concurrency for the same total time (200s only),
 *      taking turns with 2. so noise from other work on the machine hits both
 *   4. the ratio login/raw
 *   5. a flood of sign-in attempts from one address, each naming a new email, against a
 *      second server with the production rate limits: heap growth over the flood, and the
 *      median latency of the attempts and of /healthz in its last tenth as ratios against
 *      its first tenth (after warm-up), all in this run
 *
 * Phases 1-3 stand for many users: each sign-in comes from its own client address
 * (X-Forwarded-For from a trusted loopback proxy), as one address may hold only two places
 * in the hasher.
 *
 * Exits 0 whatever the verdicts; non-zero only when the benchmark itself fails.
 *
 *   npm run bench:login -- --duration 10 --concurrency 16 --burst 200 --users 16 --rounds 2 \
 *     --flood 120000
 *   BENCH_DURATION=… BENCH_CONCURRENCY=… BENCH_BURST=… BENCH_USERS=… BENCH_ROUNDS=… BENCH_FLOOD=…
 */
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { serve } from '@hono/node-server';
import { verify as argon2Verify } from '@node-rs/argon2';
import { composeApi, composeCore } from '../src/app/compose.ts';
import { generatePassword, PASSWORD_PARAMS, type PasswordHasher } from '../src/auth/passwords.ts';
import { type AuthConfig, type Config, loadConfig } from '../src/config/index.ts';
import type { AppDatabase } from '../src/db/pools.ts';
import type { ScratchDatabase } from '../src/db/scratch.ts';
import type { SystemGate } from '../src/db/system-gate.ts';
import type { DatabaseTarget } from '../src/db/target.ts';
import { setPassword } from '../src/domains/users/user-repository.ts';
import { createLogger } from '../src/log/index.ts';
import { percentile, readKernelPeak, resetKernelPeak, runOnScratchDatabase } from './harness.ts';

const TARGET_RATIO = 0.85;
const MIB = 1024 * 1024;
const RSS_LIMIT = 1024 * MIB;
const RSS_SAMPLE_MS = 10;
/** The production default (SVC_HASH_CONCURRENCY); matches the 2 cores this was written for. */
const HASH_CONCURRENCY = 2;
/** Deep enough that the throughput phase (16 in flight) never sees a 503. */
const HASH_QUEUE = 64;
/** Hard caps so a broken server cannot keep the benchmark running. */
const MAX_OPERATIONS_PER_PHASE = 100_000;
const REQUEST_TIMEOUT_MS = 60_000;
/** The flood's attempts in flight at once, all from one address. */
const FLOOD_CONCURRENCY = 4;
/** Flood targets: what stays of the limiter after the flood, and how much slower it got. */
const FLOOD_HEAP_LIMIT = 32 * MIB;
const FLOOD_SLOWDOWN_LIMIT = 2;

interface Options {
  durationMs: number;
  concurrency: number;
  burst: number;
  users: number;
  /** Raw and login take turns this many times, each turn durationMs / rounds long. */
  rounds: number;
  /** Sign-in attempts from one address in phase 5; 0 skips it. */
  flood: number;
}

interface Credentials {
  email: string;
  password: string;
}

interface Server {
  url: string;
  close(): Promise<void>;
}

interface LoadResult {
  elapsedMs: number;
  /** Outcome (HTTP status or verify result) -> how many. */
  counts: Map<string, number>;
  /** Successes per second of each round, to show how noisy the machine was. */
  roundRates: number[];
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string' },
      concurrency: { type: 'string' },
      burst: { type: 'string' },
      users: { type: 'string' },
      rounds: { type: 'string' },
      flood: { type: 'string' },
    },
  });
  const pick = (name: keyof typeof values, fallback: number, min: number, max: number) => {
    const raw = values[name] ?? process.env[`BENCH_${name.toUpperCase()}`];
    const value = raw === undefined ? fallback : Number(raw);
    if (!Number.isInteger(value) || value < min || value > max)
      throw new Error(`--${name} must be an integer ${min}-${max}, got ${JSON.stringify(raw)}`);
    return value;
  };
  return {
    durationMs: pick('duration', 10, 1, 600) * 1000,
    concurrency: pick('concurrency', 16, 1, 1000),
    burst: pick('burst', 200, 1, 5000),
    users: pick('users', 16, 1, 1000),
    rounds: pick('rounds', 2, 1, 100),
    flood: pick('flood', 120_000, 0, 10_000_000),
  };
}

// --- Setup ------------------------------------------------------------------------------

/**
 * Rate limits out of the way (they would otherwise be what is measured); hashing bounded as
 * in production.
 */
function benchAuthConfig(): AuthConfig {
  return {
    ...loadConfig({}).auth,
    loginRateLimitPerIp: 1e9,
    loginRateLimitPerEmail: 1e9,
    hashConcurrency: HASH_CONCURRENCY,
    hashQueue: HASH_QUEUE,
  };
}

/**
 * Login never needs to bypass RLS, so the benchmark opens no svc_mssp pool at all; if the
 * login path ever started using the gate, this would fail loudly instead of silently
 * measuring something else.
 */
const NO_SYSTEM_GATE: SystemGate = {
  withSystem: () => Promise.reject(new Error('the login benchmark provides no system gate')),
  close: async () => undefined,
};

function throwawayKey(): string {
  return generateKeyPairSync('ed25519')
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
}

/** `svc serve`'s configuration with these sign-in settings. */
function benchConfig(auth: AuthConfig): Config {
  return {
    ...loadConfig({}),
    authMode: 'internal',
    // The load generator is the loopback proxy that names each simulated client.
    trustedProxyCidrs: ['127.0.0.0/8'],
    // Login mints no token; a throwaway key keeps the wiring identical to `svc serve`.
    tokenKey: { kind: 'pem', pem: throwawayKey() },
    auth,
  };
}

/**
 * The app from the composition root, with the loopback origin policy of an embedded install.
 * A second server borrows the first one's pool (`db`), which then stays the first one's to close.
 */
async function startServer(target: DatabaseTarget, auth: AuthConfig, db?: AppDatabase) {
  const core = await composeCore({
    config: benchConfig(auth),
    logger: createLogger('silent'),
    target,
    ...(db ? { db } : {}),
  });
  const api = await composeApi({ ...core, system: NO_SYSTEM_GATE }, { embedded: true });
  const server = serve({ fetch: api.app.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    db: core.db,
    hasher: core.hasher,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await api.close();
      await core.close();
    },
  };
}

/** MSSP analysts (no tenant), each with its own random password hashed at production cost. */
async function seedUsers(db: AppDatabase, hasher: PasswordHasher, count: number) {
  const users: Credentials[] = Array.from({ length: count }, (_, i) => ({
    email: `bench-${i}@example.com`,
    password: generatePassword(),
  }));
  const hashes = await Promise.all(users.map((user) => hasher.hash(user.password)));
  await db.withoutTenant(async (tx) => {
    for (const [i, user] of users.entries()) {
      const { rows } = await tx.query<{ id: string }>(
        `INSERT INTO users (tenant_id, email, role) VALUES (NULL, $1, 'analyst') RETURNING id`,
        [user.email],
      );
      const id = rows[0]?.id;
      const hash = hashes[i];
      if (id === undefined || hash === undefined) throw new Error('seeding a user failed');
      await setPassword(tx, id, hash, false, new Date());
    }
  });
  return { users, sampleHash: hashes[0] ?? '' };
}

// --- Load -------------------------------------------------------------------------------

function rate(result: LoadResult, success: string): number {
  return (result.counts.get(success) ?? 0) / (result.elapsedMs / 1000);
}

/**
 * `concurrency` workers each start a new operation as long as the deadline has not passed.
 * Operations still in flight at the deadline are awaited and counted, and the elapsed time
 * runs until the last one ends, so rate = count / elapsed stays honest for both phases.
 */
async function runLoad(
  concurrency: number,
  durationMs: number,
  operation: (index: number) => Promise<string>,
): Promise<LoadResult> {
  const counts = new Map<string, number>();
  const started = performance.now();
  const deadline = started + durationMs;
  let issued = 0;
  const worker = async () => {
    while (performance.now() < deadline && issued < MAX_OPERATIONS_PER_PHASE) {
      const outcome = await operation(issued++);
      counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { elapsedMs: performance.now() - started, counts, roundRates: [] };
}

function merge(total: LoadResult, round: LoadResult, success: string): LoadResult {
  const counts = new Map(total.counts);
  for (const [outcome, n] of round.counts) counts.set(outcome, (counts.get(outcome) ?? 0) + n);
  return {
    elapsedMs: total.elapsedMs + round.elapsedMs,
    counts,
    roundRates: [...total.roundRates, rate(round, success)],
  };
}

/**
 * Raw and login take turns instead of running once each, so a burst of load from other work
 * on the shared machine is less likely to land on only one side of the ratio.
 */
async function alternate(
  options: Options,
  operations: Record<'raw' | 'login', (index: number) => Promise<string>>,
): Promise<Record<'raw' | 'login', LoadResult>> {
  const turnMs = options.durationMs / options.rounds;
  let raw: LoadResult = { elapsedMs: 0, counts: new Map(), roundRates: [] };
  let signIns = raw;
  for (let round = 0; round < options.rounds; round++) {
    raw = merge(raw, await runLoad(options.concurrency, turnMs, operations.raw), 'ok');
    signIns = merge(signIns, await runLoad(options.concurrency, turnMs, operations.login), '200');
  }
  return { raw, login: signIns };
}

/** A distinct address per index, from the benchmarking range 198.18.0.0/15 (RFC 2544). */
function clientOf(index: number): string {
  return `198.${18 + ((index >> 16) & 1)}.${(index >> 8) & 255}.${index & 255}`;
}

/**
 * One sign-in as a browser on the app's own origin would send it, from `client` (or from the
 * loopback peer itself); returns the status.
 */
async function login(server: Server, user: Credentials, client?: string): Promise<string> {
  const response = await fetch(`${server.url}/api/auth/login`, {
    method: 'POST',
    headers: {
      origin: server.url,
      'content-type': 'application/json',
      ...(client === undefined ? {} : { 'x-forwarded-for': client }),
    },
    body: JSON.stringify(user),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  // Reading the body to the end lets the keep-alive socket be reused by the next request.
  await response.arrayBuffer();
  return String(response.status);
}

function pickUser(users: Credentials[], index: number): Credentials {
  const user = users[index % users.length];
  if (!user) throw new Error('no users seeded');
  return user;
}

// --- Memory -----------------------------------------------------------------------------

interface BurstResult {
  baseline: number;
  sampledPeak: number;
  kernelPeak: number | undefined;
  counts: Map<string, number>;
}

/** All `count` sign-ins start at once; RSS is sampled until the last one has answered. */
async function burst(server: Server, users: Credentials[], count: number): Promise<BurstResult> {
  const baseline = process.memoryUsage().rss;
  const kernelReset = await resetKernelPeak();
  let sampledPeak = baseline;
  const sample = () => {
    sampledPeak = Math.max(sampledPeak, process.memoryUsage().rss);
  };
  const timer = setInterval(sample, RSS_SAMPLE_MS);
  const counts = new Map<string, number>();
  try {
    const statuses = await Promise.all(
      Array.from({ length: count }, (_, i) => login(server, pickUser(users, i), clientOf(i))),
    );
    for (const status of statuses) counts.set(status, (counts.get(status) ?? 0) + 1);
  } finally {
    clearInterval(timer);
  }
  sample();
  const kernelPeak = kernelReset ? await readKernelPeak() : undefined;
  return { baseline, sampledPeak, kernelPeak, counts };
}

// --- Flood ------------------------------------------------------------------------------

/** `gc()`, switched on at run time so `npm run bench:login` needs no node flag. */
function garbageCollector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

interface FloodResult {
  /** Heap used after a full collection, before and after the flood. */
  heapBefore: number;
  heapAfter: number;
  /** Latency (ms) of each attempt, by attempt index. */
  latencies: Float64Array;
  /** /healthz latencies, each with how many attempts had been answered when it was sent. */
  health: { answered: number; ms: number }[];
  counts: Map<string, number>;
  elapsedMs: number;
}

/**
 * `attempts` sign-ins from the loopback address itself, each naming a new email (what grew
 * the limiter without bound), FLOOD_CONCURRENCY at a time, while /healthz is asked in a loop.
 */
async function flood(server: Server, attempts: number): Promise<FloodResult> {
  const gc = garbageCollector();
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const latencies = new Float64Array(attempts);
  const counts = new Map<string, number>();
  const health: FloodResult['health'] = [];
  let issued = 0;
  let answered = 0;
  const started = performance.now();
  const attacker = async () => {
    while (issued < attempts) {
      const i = issued++;
      const sent = performance.now();
      const status = await login(server, {
        email: `flood-${i}@example.com`,
        password: 'not the right password',
      });
      latencies[i] = performance.now() - sent;
      counts.set(status, (counts.get(status) ?? 0) + 1);
      answered++;
    }
  };
  const probe = async () => {
    while (answered < attempts) {
      const at = answered;
      const sent = performance.now();
      const response = await fetch(`${server.url}/healthz`, {
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      await response.arrayBuffer();
      health.push({ answered: at, ms: performance.now() - sent });
    }
  };
  await Promise.all([...Array.from({ length: FLOOD_CONCURRENCY }, attacker), probe()]);
  const elapsedMs = performance.now() - started;
  gc();
  const heapAfter = process.memoryUsage().heapUsed;
  return { heapBefore, heapAfter, latencies, health, counts, elapsedMs };
}

// --- Report -----------------------------------------------------------------------------

const mib = (bytes: number) => `${(bytes / MIB).toFixed(0)} MiB`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const verdict = (pass: boolean) => (pass ? 'PASS' : 'FAIL');

function describeCounts(counts: Map<string, number>, except?: string): string {
  const parts = [...counts]
    .filter(([outcome]) => outcome !== except)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([outcome, n]) => `${outcome} x${n}`);
  return parts.length === 0 ? 'none' : parts.join(', ');
}

const describeRounds = (result: LoadResult) =>
  result.roundRates.map((value) => value.toFixed(2)).join(', ');

function printBurst(result: BurstResult, count: number): boolean {
  const { baseline, sampledPeak, kernelPeak, counts } = result;
  const peak = Math.max(sampledPeak, kernelPeak ?? 0);
  const argonBound = HASH_CONCURRENCY * (PASSWORD_PARAMS.memoryCost / 1024);
  console.log(`\n[memory] burst of ${count} concurrent logins (server in this process)`);
  console.log(
    `  hash limit: ${HASH_CONCURRENCY} computing x ${PASSWORD_PARAMS.memoryCost / 1024} MiB` +
      ` = ${argonBound} MiB of argon2 memory at once, ${HASH_QUEUE} more may wait`,
  );
  const kernel = kernelPeak === undefined ? 'unavailable' : mib(kernelPeak);
  console.log(
    `  RSS baseline ${mib(baseline)}, peak ${mib(sampledPeak)} sampled every ${RSS_SAMPLE_MS} ms,` +
      ` ${kernel} by the kernel (VmHWM); growth ${mib(peak - baseline)}`,
  );
  const status = (code: string) => counts.get(code) ?? 0;
  const other = [...counts].filter(([code]) => !['200', '503', '429'].includes(code));
  console.log(
    `  statuses: 200 x${status('200')}, 503 x${status('503')}, 429 x${status('429')}` +
      (other.length === 0 ? '' : `, other: ${other.map(([c, n]) => `${c} x${n}`).join(', ')}`),
  );
  const pass = peak < RSS_LIMIT;
  console.log(`  target: peak RSS < ${mib(RSS_LIMIT)} -> ${verdict(pass)}`);
  return pass;
}

function printRaw(result: LoadResult, concurrency: number): number {
  const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  const perSecond = rate(result, 'ok');
  console.log(`\n[raw] @node-rs/argon2 verify, production hash`);
  console.log(
    `  ${concurrency} in flight; at most ${Math.min(concurrency, threads)} compute at once` +
      ` (libuv threadpool, UV_THREADPOOL_SIZE=${threads}) on ${availableParallelism()} cores`,
  );
  console.log(
    `  ${result.counts.get('ok') ?? 0} verifies in ${seconds(result.elapsedMs)}` +
      ` = ${perSecond.toFixed(2)} verifies/s (rounds: ${describeRounds(result)})`,
  );
  return perSecond;
}

function printLogin(result: LoadResult, concurrency: number): number {
  const perSecond = rate(result, '200');
  console.log(`\n[login] POST /api/auth/login, correct credentials`);
  console.log(
    `  ${concurrency} in flight; at most ${HASH_CONCURRENCY} hash at once (hashConcurrency),` +
      ` the rest wait in the hasher queue (hashQueue=${HASH_QUEUE})`,
  );
  console.log(
    `  ${result.counts.get('200') ?? 0} x 200 in ${seconds(result.elapsedMs)}` +
      ` = ${perSecond.toFixed(2)} logins/s (rounds: ${describeRounds(result)})`,
  );
  console.log(`  non-200: ${describeCounts(result.counts, '200')}`);
  return perSecond;
}

/**
 * The flood's second tenth (warm-up and the attempts that still reach the hasher are in the
 * first) is the baseline; its last tenth is where an unbounded limiter is largest.
 */
function printFlood(result: FloodResult, attempts: number, auth: AuthConfig): boolean {
  const tenth = Math.max(1, Math.floor(attempts / 10));
  const early = [tenth, 2 * tenth] as const;
  const late = [attempts - tenth, attempts] as const;
  const median = (values: ArrayLike<number>) => percentile(Array.from(values), 50);
  const attemptMedian = (range: readonly [number, number]) =>
    median(result.latencies.subarray(range[0], range[1]));
  const healthMedian = (range: readonly [number, number]) =>
    median(
      result.health.filter((h) => h.answered >= range[0] && h.answered < range[1]).map((h) => h.ms),
    );
  const ms = (value: number) => `${value.toFixed(2)} ms`;
  const growth = result.heapAfter - result.heapBefore;
  console.log(
    `\n[flood] ${attempts} sign-in attempts from one address, each naming a new email,` +
      ` ${FLOOD_CONCURRENCY} in flight; production limits (${auth.loginRateLimitPerIp} per IP,` +
      ` ${auth.loginRateLimitPerEmail} per email in 15 min)`,
  );
  console.log(
    `  ${seconds(result.elapsedMs)}; statuses: ${describeCounts(result.counts)};` +
      ` ${result.health.length} /healthz probes`,
  );
  console.log(
    `  heap after GC: ${mib(result.heapBefore)} before, ${mib(result.heapAfter)} after,` +
      ` growth ${(growth / MIB).toFixed(1)} MiB (target < ${mib(FLOOD_HEAP_LIMIT)})`,
  );
  const ratios = [
    ['attempt', attemptMedian(early), attemptMedian(late)],
    ['/healthz', healthMedian(early), healthMedian(late)],
  ] as const;
  let slowdownPass = true;
  for (const [what, first, last] of ratios) {
    const ratio = last / first;
    slowdownPass &&= ratio <= FLOOD_SLOWDOWN_LIMIT;
    console.log(
      `  median ${what} latency: ${ms(first)} in attempts ${early[0]}-${early[1] - 1},` +
        ` ${ms(last)} in ${late[0]}-${late[1] - 1}: ratio ${ratio.toFixed(2)}` +
        ` (target <= ${FLOOD_SLOWDOWN_LIMIT})`,
    );
  }
  const pass = growth < FLOOD_HEAP_LIMIT && slowdownPass;
  console.log(`  -> ${verdict(pass)}`);
  return pass;
}

// --- Main -------------------------------------------------------------------------------

async function benchmark(scratch: ScratchDatabase, options: Options): Promise<void> {
  const { durationMs, concurrency } = options;
  const auth = benchAuthConfig();
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    server = await startServer(scratch.target, auth);
    const { users, sampleHash } = await seedUsers(server.db, server.hasher, options.users);
    console.log(
      `login bench: ${availableParallelism()} cores, ${seconds(durationMs)} per side in` +
        ` ${options.rounds} alternating rounds, concurrency ${concurrency},` +
        ` burst ${options.burst}, ${options.users} users`,
    );
    console.log(
      `  server ${server.url} in this process; hash ${sampleHash.split('$', 4).join('$')}`,
    );

    const memoryPass = printBurst(await burst(server, users, options.burst), options.burst);

    const sample = pickUser(users, 0);
    const live = server;
    const { raw, login: signIns } = await alternate(options, {
      raw: async () => ((await argon2Verify(sampleHash, sample.password)) ? 'ok' : 'mismatch'),
      login: (i) => login(live, pickUser(users, i), clientOf(i)),
    });
    if (raw.counts.has('mismatch')) throw new Error('raw verify rejected a correct password');
    const rawRate = printRaw(raw, concurrency);
    const loginRate = printLogin(signIns, concurrency);

    const ratio = rawRate === 0 ? 0 : loginRate / rawRate;
    const ratioPass = ratio >= TARGET_RATIO;
    console.log(`\n[ratio] login/raw = ${ratio.toFixed(3)} (target >= ${TARGET_RATIO})`);

    let floodVerdict = 'skipped';
    if (options.flood > 0) {
      const production = {
        ...loadConfig({}).auth,
        hashConcurrency: HASH_CONCURRENCY,
        hashQueue: HASH_QUEUE,
      };
      const limited = await startServer(scratch.target, production, server.db);
      try {
        floodVerdict = verdict(
          printFlood(await flood(limited, options.flood), options.flood, production),
        );
      } finally {
        await limited.close();
      }
    }
    console.log(
      `\nsummary: throughput ${verdict(ratioPass)}, memory ${verdict(memoryPass)},` +
        ` flood ${floodVerdict}`,
    );
  } finally {
    await server?.close();
  }
}

runOnScratchDatabase((scratch) => benchmark(scratch, parseOptions()));
