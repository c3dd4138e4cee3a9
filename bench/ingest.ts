/**
 * How fast do alerts flow in end to end, and how soon does an alert show up in an incident?
 *
 * One process holds svc as `svc serve` runs it (composeCore + composeApi on 127.0.0.1 + the
 * projector on the API's event hub, against a scratch embedded PostgreSQL). Beside it run one
 * real OpenSearch node (a JVM, bench/ingest/opensearch.ts: each tenant its own index and index
 * pattern, the tenant chart's ingest pipeline and template applied) and 50 real `svc adapter`
 * OS processes, one per tenant, each bootstrapped with its tenant's credential as provisioning
 * leaves it and reading its pattern in ingest order, as in production.
 *
 *   1. Throughput: a backlog of N alerts per tenant is bulk-written with refresh off, then one
 *      refresh makes it searchable at once; the clock runs from that refresh until every alert
 *      is stored (ingest_checkpoints.alerts_total) and projected (the sum of
 *      investigations.alert_count; then every projection checkpoint is checked to have reached
 *      its tenant's last event).
 *   2. Latency: alerts bulk-written at a steady rate while the adapters run caught up, once per
 *      refresh mode (`--refresh`: an index refresh interval, or `true` for refresh=true
 *      writes); each one's latency runs from its bulk being sent to the first sample (svc_mssp,
 *      every 50 ms) whose projected count for its tenant includes it — refresh wait included.
 *   3. Memory: the bench process's VmHWM (app + projector + writer), the OpenSearch JVM's (a
 *      separate process), and every adapter's.
 *   4. Baseline: the same alert.received rows INSERTed plainly into `events` for fresh tenants,
 *      from one connection and from one connection per tenant; the faster one is the baseline.
 *
 * With `--adapters N` it runs the fleet run instead (issue 33, bench/ingest/fleet-run.ts): N
 * tenants, N real adapters against stand-in indexers, the enqueue rank's cost, then the other
 * tenants' latency and the projector's lag with and without one tenant's `--flood` backlog.
 *
 * Exits 0 whatever the verdicts; non-zero only when the benchmark itself fails.
 *
 *   npm run bench:ingest -- --tenants 50 --alerts 2000 --rate 2500 --latency-duration 20
 *   npm run bench:ingest -- --refresh 1s,200ms,true --shards 3   # refresh modes, shards
 *   BENCH_ALERTS=… BENCH_RATE=… npm run bench:ingest
 *   SVC_POLL_SECONDS=0.5 SVC_PROJECTOR_CONCURRENCY=4 npm run bench:ingest   # tuning
 *   npm run bench:ingest -- --adapters 100 --flood 100000   # the fleet run
 *   npm run bench:ingest -- --help
 */
import { rmSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import pg from 'pg';
import type { ScratchDatabase } from '../src/db/scratch.ts';
import { clientConfig } from '../src/db/target.ts';
import { mib, seconds, verdict } from './api/report.ts';
import { percentile, readKernelPeak, resetKernelPeak, runOnScratchDatabase } from './harness.ts';
import {
  type AdapterProcess,
  type Adapters,
  adapterWarnings,
  startAdapters,
} from './ingest/adapters.ts';
import { type BenchApp, type BenchTenant, createTenants, startApp } from './ingest/app.ts';
import { type BaselineResult, baselinePhase } from './ingest/baseline.ts';
import { type CpuSnapshot, cpuDelta, cpuSnapshot, postmasterPid } from './ingest/cpu.ts';
import { type FleetOptions, fleetBenchmark } from './ingest/fleet-run.ts';
import { describeRefresh, type LatencyResult, latencyPhase } from './ingest/latency.ts';
import { type BenchIndexer, type RefreshMode, startBenchIndexer } from './ingest/opensearch.ts';
import { type ThroughputResult, throughputPhase } from './ingest/throughput.ts';

const TARGET_RATE = 5_000;
const TARGET_RATIO = 0.5;
const TARGET_P99_MS = 2_000;
/** How long the idle adapters' polling cost is measured before the backlog. */
const IDLE_MS = 5_000;

interface Options {
  tenants: number;
  alerts: number;
  rate: number;
  latencyMs: number;
  sampleMs: number;
  batch: number;
  poolSize: number | undefined;
  timeoutMs: number;
  /** Latency phases, in order: each an index refresh interval or `true` (refresh=true writes). */
  refresh: RefreshMode[];
  shards: number;
  indexerHeapMb: number;
}

const FLAGS = [
  'tenants',
  'alerts',
  'rate',
  'latency-duration',
  'sample-ms',
  'baseline-batch',
  'pool',
  'timeout',
  'refresh',
  'shards',
  'indexer-heap',
  'adapters',
  'flood',
  'duration',
  'steady-rate',
  'enqueue-waiting',
  'enqueue-jobs',
  'settle',
  'flood-indexer',
] as const;

const USAGE = `npm run bench:ingest -- [options]   (each also as BENCH_<NAME>, e.g. BENCH_ALERTS)
  --tenants N            tenants, one adapter each (50)
  --alerts N             backlog alerts per tenant, throughput phase (2000)
  --rate N               alerts/s written in each latency phase (2500)
  --latency-duration S   seconds each latency phase writes (20)
  --refresh LIST         latency phases' refresh modes, comma-separated: an index
                         refresh_interval (1s, 200ms, …) or true (every _bulk with
                         refresh=true) (1s,200ms); the first one gives the p99 verdict
  --shards N             primary shards of each tenant's index (1)
  --indexer-heap MB      the OpenSearch JVM's heap (512)
  --sample-ms N          projected-count sample interval (50)
  --baseline-batch N     rows per INSERT in the baseline (500)
  --pool N               svc's database pool (svc's default)
  --timeout S            throughput phase limit (300)
Fleet run (issue 33: 100 adapters at once, stand-in indexers, one tenant flooded):
  --adapters N           tenants and real adapter processes; selects the fleet run
  --flood N              alerts appended at once to tenant 1's indexer (100000)
  --steady-rate N        alerts/s over the other tenants, each phase (500)
  --duration S           seconds each steady phase writes (30)
  --settle S             how long a phase waits for its alerts to be projected (300)
  --enqueue-waiting LIST jobs waiting for a tenant in the enqueue phase (0,1000,10000,100000)
  --enqueue-jobs LIST    jobs one batch enqueues there (12,500)
  --flood-indexer KIND   tenant 1's indexer: opensearch (a real node) or stand-in (opensearch)
Adapters: SVC_POLL_SECONDS, SVC_INGEST_BATCH, SVC_HEARTBEAT_SECONDS, SVC_LATE_WINDOW_SECONDS.
svc: SVC_PROJECTOR_*, SVC_INGEST_*.`;

/** A flag's text (or its BENCH_* variable) and a bounded integer flag. */
function optionReader(values: object) {
  const raw = (name: (typeof FLAGS)[number]) =>
    (values as Partial<Record<string, string>>)[name] ??
    process.env[`BENCH_${name.toUpperCase().replaceAll('-', '_')}`];
  const int = (name: (typeof FLAGS)[number], fallback: number, min: number, max: number) => {
    const text = raw(name);
    const value = text === undefined ? fallback : Number(text.replaceAll('_', ''));
    if (!Number.isInteger(value) || value < min || value > max)
      throw new Error(`--${name} must be an integer ${min}-${max}, got ${JSON.stringify(text)}`);
    return value;
  };
  return { raw, int };
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      ...Object.fromEntries(FLAGS.map((name) => [name, { type: 'string' as const }])),
      help: { type: 'boolean' as const },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const { raw, int } = optionReader(values);
  return {
    tenants: int('tenants', 50, 1, 200),
    alerts: int('alerts', 2_000, 1, 100_000),
    rate: int('rate', 2_500, 1, 100_000),
    latencyMs: int('latency-duration', 20, 1, 600) * 1000,
    sampleMs: int('sample-ms', 50, 10, 1_000),
    batch: int('baseline-batch', 500, 1, 4_000),
    poolSize: raw('pool') === undefined ? undefined : int('pool', 10, 1, 100),
    timeoutMs: int('timeout', 300, 10, 3_600) * 1000,
    refresh: refreshModes(raw('refresh') ?? '1s,200ms'),
    shards: int('shards', 1, 1, 16),
    indexerHeapMb: int('indexer-heap', 512, 256, 8_192),
  };
}

function refreshModes(text: string): RefreshMode[] {
  const modes = text.split(',').map((m) => m.trim());
  for (const mode of modes)
    if (!/^(true|[1-9]\d{0,5}(ms|s))$/.test(mode))
      throw new Error(
        `--refresh must list refresh intervals (1s, 200ms) or true, comma-separated, got ${JSON.stringify(text)}`,
      );
  return modes;
}

/** The adapter settings under test come from the environment, else the program's defaults. */
function adapterOverrides(): Record<string, string> {
  const names = [
    'SVC_POLL_SECONDS',
    'SVC_INGEST_BATCH',
    'SVC_HEARTBEAT_SECONDS',
    'SVC_LATE_WINDOW_SECONDS',
  ];
  return Object.fromEntries(
    names.flatMap((name) => (process.env[name] ? [[name, process.env[name] as string]] : [])),
  );
}

/** `gc()`, switched on at run time as bench/login.ts does: the heap that survives a full GC. */
function heapAfterGc(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed;
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

const perSecond = (count: number, ms: number) => (count / ms) * 1000;
const fmt = (n: number) => Math.round(n).toLocaleString('en');

function printThroughput(result: ThroughputResult): void {
  console.log(
    `  ${fmt(result.alerts)} alerts (${fmt(result.investigations)} investigations):` +
      ` stored in ${seconds(result.storedMs)} = ${fmt(perSecond(result.alerts, result.storedMs))}/s,` +
      ` stored and projected in ${seconds(result.projectedMs)} =` +
      ` ${fmt(perSecond(result.alerts, result.projectedMs))}/s` +
      ` (the publishing refresh itself took ${seconds(result.publishMs)})`,
  );
  for (const problem of result.problems.slice(0, 5)) console.log(`  PROBLEM ${problem}`);
}

function printLatency(result: LatencyResult): void {
  const p = (q: number) => `${percentile(result.latencies, q).toFixed(0)} ms`;
  const a = (q: number) => `${percentile(result.ackLatencies, q).toFixed(0)} ms`;
  console.log(
    `  ${fmt(result.appended)} written in ${fmt(result.bulks)} bulks (mean` +
      ` ${result.bulkMs.toFixed(0)} ms each; the indexer took them at` +
      ` ${fmt(result.writtenRate)}/s), ${fmt(result.latencies.length)} seen projected` +
      ` (${result.missing} missing); ${result.samples} samples, one per` +
      ` ${result.sampleIntervalMs.toFixed(0)} ms`,
  );
  console.log(
    `  alert due → visible incident: p50 ${p(50)}, p95 ${p(95)}, p99 ${p(99)},` +
      ` max ${(Math.max(...result.latencies) || 0).toFixed(0)} ms` +
      (result.refresh === 'true' ? '' : ` (includes up to ${result.refresh} of refresh wait)`),
  );
  console.log(
    `  bulk acknowledged → visible incident: p50 ${a(50)}, p95 ${a(95)}, p99 ${a(99)}` +
      ' (without the wait to be written: what svc and the adapter add to the refresh)',
  );
}

/** Where a phase's CPU went, in CPU-seconds and per 1,000 alerts. */
function printCpu(cpu: CpuSnapshot, alerts: number, wallMs: number): void {
  const per = (v: number) => `${((v / alerts) * 1000).toFixed(2)}`;
  const wall = wallMs / 1000;
  console.log(
    `  CPU over ${wall.toFixed(1)} s: machine ${cpu.machine.toFixed(1)} s` +
      ` (${((cpu.machine / wall / availableParallelism()) * 100).toFixed(0)}% of` +
      ` ${availableParallelism()} cores); svc process ${cpu.bench.toFixed(1)} s, PostgreSQL` +
      ` ${cpu.postgres.toFixed(1)} s, adapters ${cpu.adapters.toFixed(1)} s, OpenSearch` +
      ` ${cpu.indexer.toFixed(1)} s, other` +
      ` ${(cpu.machine - cpu.bench - cpu.postgres - cpu.adapters - cpu.indexer).toFixed(1)} s`,
  );
  console.log(
    `  CPU-s per 1,000 alerts: svc process ${per(cpu.bench)}, PostgreSQL ${per(cpu.postgres)},` +
      ` adapters ${per(cpu.adapters)}, OpenSearch ${per(cpu.indexer)}`,
  );
}

interface Memory {
  /** VmHWM over the throughput phase, and over the latency phase (reset in between). */
  benchPeak: number | undefined;
  latencyPeak: number | undefined;
  benchNow: number;
  /** V8 heap in use at the end of the latency phase, and after a full GC. */
  heapUsed: number;
  heapRetained: number;
  /** The OpenSearch JVM's VmHWM per phase (reset in between) and its resident set at the end. */
  indexerPeak: number | undefined;
  indexerLatencyPeak: number | undefined;
  indexerNow: number | undefined;
  adapters: ReturnType<Adapters['peakMemory']>;
}

function printSummary(
  options: Options,
  throughput: ThroughputResult,
  latencies: LatencyResult[],
  baseline: BaselineResult,
  memory: Memory,
  loads: string[],
): void {
  const e2e = perSecond(throughput.alerts, throughput.projectedMs);
  const base = perSecond(baseline.best.rows, baseline.best.ms);
  const ratio = e2e / base;
  const latency = latencies[0] as LatencyResult;
  const p99 = percentile(latency.latencies, 99);
  const latencyOk = latency.missing === 0 && p99 < TARGET_P99_MS;
  const correct = throughput.problems.length === 0;
  const maybe = (v: number | undefined) => (v === undefined ? 'n/a' : mib(v));
  console.log('\nsummary');
  console.log(
    `  indexer: one OpenSearch node, plain (no security plugin: its cost is per-request auth,` +
      ` not svc's), ${options.shards} shard(s) per tenant index, ${options.indexerHeapMb} MB heap`,
  );
  console.log(`  load average (1/5/15 min): ${loads.join(' → ')}`);
  console.log(
    `  end to end (stored + projected): ${fmt(e2e)} alerts/s (>= ${fmt(TARGET_RATE)})` +
      ` ${verdict(e2e >= TARGET_RATE && correct)}; stored only: ` +
      `${fmt(perSecond(throughput.alerts, throughput.storedMs))} alerts/s`,
  );
  console.log(
    `  baseline (${baseline.best.name}): ${fmt(base)} rows/s; ratio ${ratio.toFixed(2)}` +
      ` (>= ${TARGET_RATIO}) ${verdict(ratio >= TARGET_RATIO && correct)}`,
  );
  console.log(
    `  p99 alert due → visible incident at ${fmt(options.rate)}/s, ${describeRefresh(latency.refresh)}` +
      ` (the refresh wait is part of it): ${p99.toFixed(0)} ms (< ${TARGET_P99_MS} ms) ${verdict(latencyOk)}`,
  );
  console.log(
    `    of which after the indexer acknowledged the bulk: p99 ${percentile(latency.ackLatencies, 99).toFixed(0)} ms;` +
      ` the indexer took ${fmt(latency.writtenRate)} alerts/s of the ${fmt(options.rate)}/s due`,
  );
  for (const other of latencies.slice(1))
    console.log(
      `  p99 with ${describeRefresh(other.refresh)}: ${percentile(other.latencies, 99).toFixed(0)} ms` +
        ` (p50 ${percentile(other.latencies, 50).toFixed(0)} ms, ${other.missing} missing; after the` +
        ` ack p99 ${percentile(other.ackLatencies, 99).toFixed(0)} ms; written at ${fmt(other.writtenRate)}/s)`,
    );
  console.log(
    `  RSS: bench process (app + projector + writer) peak ${maybe(memory.benchPeak)} in the` +
      ` throughput phase, ${maybe(memory.latencyPeak)} in the latency phases (now` +
      ` ${mib(memory.benchNow)}, V8 heap in use ${mib(memory.heapUsed)},` +
      ` ${mib(memory.heapRetained)} after a full GC)`,
  );
  console.log(
    `  RSS: OpenSearch JVM (${options.indexerHeapMb} MB heap) peak ${maybe(memory.indexerPeak)}` +
      ` in the throughput phase (staging included), ${maybe(memory.indexerLatencyPeak)} in the` +
      ` latency phases, ${maybe(memory.indexerNow)} at the end; ${memory.adapters.read} adapters:` +
      ` Σ peak ${mib(memory.adapters.sum)}, max ${mib(memory.adapters.max)}`,
  );
  // Wall-clock ratios swing with whoever else uses the machine; CPU per alert much less so.
  const cpu = throughput.cpu;
  const e2eCpu = (cpu.bench + cpu.postgres + cpu.adapters) / throughput.alerts;
  const svcCpu = (cpu.bench + cpu.postgres) / throughput.alerts;
  const baseCpu =
    ((baseline.best.postgresCpu ?? Number.NaN) + (baseline.best.clientCpu ?? 0)) /
    baseline.best.rows;
  console.log(
    `  CPU per 1,000 alerts: end to end ${(e2eCpu * 1000).toFixed(3)} s (svc + PostgreSQL` +
      ` ${(svcCpu * 1000).toFixed(3)} s, adapters ${((cpu.adapters / throughput.alerts) * 1000).toFixed(3)} s);` +
      ` baseline ${(baseCpu * 1000).toFixed(3)} s; CPU ratio baseline/end to end` +
      ` ${(baseCpu / e2eCpu).toFixed(2)} (without the adapters ${(baseCpu / svcCpu).toFixed(2)});` +
      ` OpenSearch serving the reads ${((cpu.indexer / throughput.alerts) * 1000).toFixed(3)} s` +
      ' (not in end to end: a tenant indexer runs on its own cores)',
  );
  if (!correct) console.log(`  ${throughput.problems.length} tenants failed the checks above`);
}

async function benchmark(scratch: ScratchDatabase, options: Options): Promise<void> {
  const loads = [load()];
  const overrides = adapterOverrides();
  console.log(
    `ingest bench: ${availableParallelism()} cores, load average ${loads[0]};` +
      ` ${options.tenants} tenants × ${fmt(options.alerts)} alerts; latency at` +
      ` ${fmt(options.rate)}/s for ${seconds(options.latencyMs)} per refresh mode` +
      ` (${options.refresh.join(', ')}); adapter overrides ${JSON.stringify(overrides)}`,
  );
  let app: BenchApp | undefined;
  let indexer: BenchIndexer | undefined;
  let adapters: Adapters | undefined;
  const started: AdapterProcess[] = [];
  let tenants: BenchTenant[] = [];
  const killAll = () => {
    for (const p of started) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  };
  const removeMounts = () => {
    for (const t of tenants) rmSync(t.mounts.root, { recursive: true, force: true });
  };
  // The harness stops the database on a signal; the adapters and the mounts are ours (the
  // OpenSearch JVM dies with this process: testcluster/opensearch/node.ts).
  const onSignal = () => {
    killAll();
    removeMounts();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', killAll);
  const mssp = new pg.Pool({ ...clientConfig(scratch.target, 'mssp'), max: 2 });
  try {
    app = await startApp(scratch.target, options.poolSize);
    console.log(
      `  svc at ${app.url}: projector concurrency ${app.config.projector.concurrency},` +
        ` sweep ${app.config.projector.sweepMs} ms, ingest rate ${fmt(app.config.ingest.rate)}/s` +
        ` burst ${fmt(app.config.ingest.burst)} per tenant, pool ${options.poolSize ?? 'default'}`,
    );
    const indexerStarted = performance.now();
    indexer = await startBenchIndexer({
      tenants: options.tenants,
      shards: options.shards,
      heapMb: options.indexerHeapMb,
    });
    console.log(
      `  OpenSearch at ${indexer.url} (pid ${indexer.node.pid}, plain: no security plugin),` +
        ` ${options.tenants} indices × ${options.shards} shard(s), the chart's ingest pipeline` +
        ` and template applied, ready after ${seconds(performance.now() - indexerStarted)}`,
    );
    tenants = await createTenants(app.db, options.tenants, 'ingest-bench');
    const spawnStarted = performance.now();
    adapters = await startAdapters({
      tenants,
      apiUrl: app.url,
      indexerOf: (t) => ({
        url: (indexer as BenchIndexer).url,
        index: (indexer as BenchIndexer).patternFor(t.n),
      }),
      extra: overrides,
      track: (a) => started.push(a),
    });
    console.log(
      `  ${adapters.processes.length} adapters running and caught up (empty indexer) after` +
        ` ${seconds(performance.now() - spawnStarted)}`,
    );

    const postmaster = postmasterPid(`${scratch.dir}/pg`);
    const pids = adapters.pids();
    const jvm = indexer.node.pid;
    const snapshot = () => cpuSnapshot(pids, postmaster, jvm);
    // What the caught-up adapters' polling costs with nothing to read: searches and window
    // checks answered by the node, on the same cores as everything below.
    const idleFrom = snapshot();
    const searchesFrom = await indexer.searches();
    await sleep(IDLE_MS);
    const idle = cpuDelta(idleFrom, snapshot());
    const idleSearches = (await indexer.searches()) - searchesFrom;
    console.log(
      `  idle (${seconds(IDLE_MS)}, nothing to read): ${fmt(perSecond(idleSearches, IDLE_MS))}` +
        ` searches/s answered; CPU per second: OpenSearch ${(idle.indexer / (IDLE_MS / 1000)).toFixed(2)},` +
        ` adapters ${(idle.adapters / (IDLE_MS / 1000)).toFixed(2)}, svc process` +
        ` ${(idle.bench / (IDLE_MS / 1000)).toFixed(2)}, PostgreSQL ${(idle.postgres / (IDLE_MS / 1000)).toFixed(2)}`,
    );
    await resetKernelPeak();
    indexer.resetPeak();
    const throughput = await throughputPhase({
      mssp,
      tenants,
      indexer,
      perTenant: options.alerts,
      timeoutMs: options.timeoutMs,
      cpu: snapshot,
    });
    printThroughput(throughput);
    printCpu(throughput.cpu, throughput.alerts, throughput.projectedMs);
    loads.push(load());
    const benchPeak = await readKernelPeak();
    const indexerPeak = indexer.memory().peak;
    await resetKernelPeak();
    indexer.resetPeak();

    const latencies: LatencyResult[] = [];
    let already = tenants.map(() => options.alerts);
    for (const refresh of options.refresh) {
      const cpu = snapshot();
      const latencyStarted = performance.now();
      const latency = await latencyPhase({
        mssp,
        tenants,
        indexer,
        refresh,
        already,
        rate: options.rate,
        durationMs: options.latencyMs,
        sampleMs: options.sampleMs,
        settleMs: 30_000,
      });
      already = latency.perTenant;
      latencies.push(latency);
      printLatency(latency);
      printCpu(cpuDelta(cpu, snapshot()), latency.appended, performance.now() - latencyStarted);
      loads.push(load());
    }

    // Before the baseline, which holds every row in this process too.
    const memory: Memory = {
      benchPeak,
      latencyPeak: await readKernelPeak(),
      benchNow: process.memoryUsage().rss,
      heapUsed: process.memoryUsage().heapUsed,
      heapRetained: heapAfterGc(),
      indexerPeak,
      indexerLatencyPeak: indexer.memory().peak,
      indexerNow: indexer.memory().rss,
      adapters: adapters.peakMemory(),
    };
    const warnings = adapterWarnings(adapters);
    console.log(
      `\n  adapter warnings: ${warnings.length}${warnings.length ? ` (first: ${warnings[0]})` : ''};` +
        ` searches answered by the indexer (query phases, one per shard): ${fmt(await indexer.searches())}`,
    );
    // Nothing else may run while the baseline is timed: no adapters polling, no projector
    // folding the baseline's tenants, no JVM.
    await adapters.stop();
    await app.stopProjector();
    await indexer.stop();
    indexer = undefined;

    const baseline = await baselinePhase({
      scratch,
      tenantIds: tenants.map((t) => t.id),
      lastEventId: throughput.lastEventId,
      batch: options.batch,
      cpu: snapshot,
    });
    loads.push(load());
    printSummary(options, throughput, latencies, baseline, memory, loads);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await adapters?.stop().catch(() => undefined);
    killAll();
    await indexer?.stop();
    await app?.close();
    await mssp.end();
    removeMounts();
  }
}

function numbers(name: string, text: string, max: number): number[] {
  const list = text.split(',').map((v) => Number(v.trim().replaceAll('_', '')));
  if (list.some((v) => !Number.isInteger(v) || v < 0 || v > max))
    throw new Error(`--${name} must list integers 0-${max}, got ${JSON.stringify(text)}`);
  return list;
}

function floodIndexer(text: string): FleetOptions['floodIndexer'] {
  if (text !== 'opensearch' && text !== 'stand-in')
    throw new Error(`--flood-indexer must be opensearch or stand-in, got ${JSON.stringify(text)}`);
  return text;
}

function parseFleetOptions(): FleetOptions | undefined {
  const { values } = parseArgs({
    options: Object.fromEntries(FLAGS.map((name) => [name, { type: 'string' as const }])),
    strict: false,
  });
  const { raw, int } = optionReader(values);
  if (raw('adapters') === undefined) return undefined;
  return {
    adapters: int('adapters', 100, 2, 200),
    flood: int('flood', 100_000, 0, 1_000_000),
    rate: int('steady-rate', 500, 1, 100_000),
    durationMs: int('duration', 30, 1, 600) * 1000,
    sampleMs: int('sample-ms', 100, 10, 1_000),
    settleMs: int('settle', 300, 10, 3_600) * 1000,
    poolSize: raw('pool') === undefined ? undefined : int('pool', 10, 1, 100),
    enqueueWaiting: numbers(
      'enqueue-waiting',
      raw('enqueue-waiting') ?? '0,1000,10000,100000',
      1_000_000,
    ),
    enqueueJobs: numbers('enqueue-jobs', raw('enqueue-jobs') ?? '12,500', 5_000).filter(
      (k) => k > 0,
    ),
    adapterEnv: adapterOverrides(),
    floodIndexer: floodIndexer(raw('flood-indexer') ?? 'opensearch'),
    indexerHeapMb: int('indexer-heap', 512, 256, 8_192),
  };
}

// Options first: --help and a bad flag answer before a database is started.
const options = parseOptions();
const fleet = parseFleetOptions();
runOnScratchDatabase((scratch) =>
  fleet ? fleetBenchmark(scratch, fleet) : benchmark(scratch, options),
);
