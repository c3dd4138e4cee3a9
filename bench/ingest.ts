/**
 * How fast do alerts flow in end to end, and how soon does an alert show up in an incident?
 *
 * One process holds svc as `svc serve` runs it (composeCore + composeApi on 127.0.0.1 + the
 * projector on the API's event hub, against a scratch embedded PostgreSQL) and one stand-in
 * Wazuh indexer serving every tenant under its own path (bench/ingest/indexer.ts). Beside it run
 * 50 real `svc adapter` OS processes, one per tenant, each bootstrapped with its tenant's
 * credential as provisioning leaves it.
 *
 *   1. Throughput: a backlog of N alerts per tenant appears in the indexer at once; the clock
 *      runs until every alert is stored (ingest_checkpoints.alerts_total) and projected (the
 *      sum of investigations.alert_count; then every projection checkpoint is checked to have
 *      reached its tenant's last event).
 *   2. Latency: alerts appended at a steady rate while the adapters run caught up; each one's
 *      latency runs from its append to the first sample (svc_mssp, every 50 ms) whose projected
 *      count for its tenant includes it.
 *   3. Memory: the bench process's VmHWM (app + projector + indexer) and every adapter's.
 *   4. Baseline: the same alert.received rows INSERTed plainly into `events` for fresh tenants,
 *      from one connection and from one connection per tenant; the faster one is the baseline.
 *
 * Exits 0 whatever the verdicts; non-zero only when the benchmark itself fails.
 *
 *   npm run bench:ingest -- --tenants 50 --alerts 2000 --rate 2500 --latency-duration 20
 *   BENCH_ALERTS=… BENCH_RATE=… npm run bench:ingest
 *   SVC_POLL_SECONDS=0.5 SVC_PROJECTOR_CONCURRENCY=4 npm run bench:ingest   # tuning
 */
import { rmSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
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
import { type BenchIndexer, startBenchIndexer } from './ingest/indexer.ts';
import { type LatencyResult, latencyPhase } from './ingest/latency.ts';
import { type ThroughputResult, throughputPhase } from './ingest/throughput.ts';

const TARGET_RATE = 5_000;
const TARGET_RATIO = 0.5;
const TARGET_P99_MS = 2_000;

interface Options {
  tenants: number;
  alerts: number;
  rate: number;
  latencyMs: number;
  sampleMs: number;
  batch: number;
  poolSize: number | undefined;
  timeoutMs: number;
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
] as const;

function parseOptions(): Options {
  const { values } = parseArgs({
    options: Object.fromEntries(FLAGS.map((name) => [name, { type: 'string' as const }])),
  });
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
  return {
    tenants: int('tenants', 50, 1, 200),
    alerts: int('alerts', 2_000, 1, 100_000),
    rate: int('rate', 2_500, 1, 100_000),
    latencyMs: int('latency-duration', 20, 1, 600) * 1000,
    sampleMs: int('sample-ms', 50, 10, 1_000),
    batch: int('baseline-batch', 500, 1, 4_000),
    poolSize: raw('pool') === undefined ? undefined : int('pool', 10, 1, 100),
    timeoutMs: int('timeout', 300, 10, 3_600) * 1000,
  };
}

/** The adapter settings under test come from the environment, else the program's defaults. */
function adapterOverrides(): Record<string, string> {
  const names = ['SVC_POLL_SECONDS', 'SVC_INGEST_BATCH', 'SVC_HEARTBEAT_SECONDS'];
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
      ` ${fmt(perSecond(result.alerts, result.projectedMs))}/s`,
  );
  for (const problem of result.problems.slice(0, 5)) console.log(`  PROBLEM ${problem}`);
}

function printLatency(result: LatencyResult): void {
  const p = (q: number) => `${percentile(result.latencies, q).toFixed(0)} ms`;
  console.log(
    `  ${fmt(result.appended)} appended, ${fmt(result.latencies.length)} seen projected` +
      ` (${result.missing} missing); ${result.samples} samples, one per` +
      ` ${result.sampleIntervalMs.toFixed(0)} ms`,
  );
  console.log(
    `  indexer → visible incident: p50 ${p(50)}, p95 ${p(95)}, p99 ${p(99)},` +
      ` max ${(Math.max(...result.latencies) || 0).toFixed(0)} ms`,
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
      ` ${cpu.postgres.toFixed(1)} s, adapters ${cpu.adapters.toFixed(1)} s, other` +
      ` ${(cpu.machine - cpu.bench - cpu.postgres - cpu.adapters).toFixed(1)} s`,
  );
  console.log(
    `  CPU-s per 1,000 alerts: svc process ${per(cpu.bench)}, PostgreSQL ${per(cpu.postgres)},` +
      ` adapters ${per(cpu.adapters)}`,
  );
}

interface Memory {
  /** VmHWM over the throughput phase, and over the latency phase (reset in between). */
  benchPeak: number | undefined;
  latencyPeak: number | undefined;
  benchNow: number;
  /** V8 heap in use at the end of the latency phase, after a full GC, and the indexer's hits. */
  heapUsed: number;
  heapRetained: number;
  indexerChars: number;
  adapters: ReturnType<Adapters['peakMemory']>;
}

function printSummary(
  options: Options,
  throughput: ThroughputResult,
  latency: LatencyResult,
  baseline: BaselineResult,
  memory: Memory,
  loads: string[],
): void {
  const e2e = perSecond(throughput.alerts, throughput.projectedMs);
  const base = perSecond(baseline.best.rows, baseline.best.ms);
  const ratio = e2e / base;
  const p99 = percentile(latency.latencies, 99);
  const latencyOk = latency.missing === 0 && p99 < TARGET_P99_MS;
  const correct = throughput.problems.length === 0;
  console.log('\nsummary');
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
    `  p99 indexer → visible incident at ${fmt(options.rate)}/s: ${p99.toFixed(0)} ms` +
      ` (< ${TARGET_P99_MS} ms) ${verdict(latencyOk)}`,
  );
  console.log(
    `  RSS: bench process (app + projector + indexer) peak ${
      memory.benchPeak === undefined ? 'n/a' : mib(memory.benchPeak)
    } in the throughput phase, ${
      memory.latencyPeak === undefined ? 'n/a' : mib(memory.latencyPeak)
    } in the latency phase (now ${mib(memory.benchNow)}, V8 heap in use ${mib(memory.heapUsed)}, ${mib(memory.heapRetained)} after a full GC,` +
      ` of which the indexer's ${fmt(memory.indexerChars / 1e6)} M characters of hits);` +
      ` ${memory.adapters.read} adapters: Σ peak` +
      ` ${mib(memory.adapters.sum)}, max ${mib(memory.adapters.max)}`,
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
      ` ${(baseCpu / e2eCpu).toFixed(2)} (without the adapters ${(baseCpu / svcCpu).toFixed(2)})`,
  );
  if (!correct) console.log(`  ${throughput.problems.length} tenants failed the checks above`);
}

async function benchmark(scratch: ScratchDatabase, options: Options): Promise<void> {
  const loads = [load()];
  const overrides = adapterOverrides();
  console.log(
    `ingest bench: ${availableParallelism()} cores, load average ${loads[0]};` +
      ` ${options.tenants} tenants × ${fmt(options.alerts)} alerts; latency at` +
      ` ${fmt(options.rate)}/s for ${seconds(options.latencyMs)}` +
      `; adapter overrides ${JSON.stringify(overrides)}`,
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
  // The harness stops the database on a signal; the adapters and the mounts are ours.
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
    indexer = await startBenchIndexer(options.tenants);
    tenants = await createTenants(app.db, options.tenants, 'ingest-bench');
    const spawnStarted = performance.now();
    adapters = await startAdapters({
      tenants,
      apiUrl: app.url,
      indexer,
      extra: overrides,
      track: (a) => started.push(a),
    });
    console.log(
      `  ${adapters.processes.length} adapters running and caught up (empty indexer) after` +
        ` ${seconds(performance.now() - spawnStarted)}`,
    );

    const postmaster = postmasterPid(`${scratch.dir}/pg`);
    const pids = adapters.pids();
    await resetKernelPeak();
    const throughput = await throughputPhase({
      mssp,
      tenants,
      indexer,
      perTenant: options.alerts,
      timeoutMs: options.timeoutMs,
      cpu: () => cpuSnapshot(pids, postmaster),
    });
    printThroughput(throughput);
    printCpu(throughput.cpu, throughput.alerts, throughput.projectedMs);
    loads.push(load());
    const benchPeak = await readKernelPeak();
    await resetKernelPeak();
    const cpu = cpuSnapshot(pids, postmaster);
    const latencyStarted = performance.now();

    const latency = await latencyPhase({
      mssp,
      tenants,
      indexer,
      already: options.alerts,
      rate: options.rate,
      durationMs: options.latencyMs,
      sampleMs: options.sampleMs,
      settleMs: 30_000,
    });
    printLatency(latency);
    printCpu(
      cpuDelta(cpu, cpuSnapshot(pids, postmaster)),
      latency.appended,
      performance.now() - latencyStarted,
    );
    loads.push(load());

    // Before the baseline, which holds every row in this process too.
    const memory: Memory = {
      benchPeak,
      latencyPeak: await readKernelPeak(),
      benchNow: process.memoryUsage().rss,
      heapUsed: process.memoryUsage().heapUsed,
      heapRetained: heapAfterGc(),
      indexerChars: indexer.bytes(),
      adapters: adapters.peakMemory(),
    };
    const warnings = adapterWarnings(adapters);
    console.log(
      `\n  adapter warnings: ${warnings.length}${warnings.length ? ` (first: ${warnings[0]})` : ''};` +
        ` indexer searches answered: ${fmt(indexer.searches())}`,
    );
    // Nothing else may run while the baseline is timed: no adapters polling, no projector
    // folding the baseline's tenants.
    await adapters.stop();
    await app.stopProjector();

    const baseline = await baselinePhase({
      scratch,
      tenantIds: tenants.map((t) => t.id),
      lastEventId: throughput.lastEventId,
      batch: options.batch,
      cpu: () => cpuSnapshot(pids, postmaster),
    });
    loads.push(load());
    printSummary(options, throughput, latency, baseline, memory, loads);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await adapters?.stop().catch(() => undefined);
    killAll();
    await indexer?.close();
    await app?.close();
    await mssp.end();
    removeMounts();
  }
}

runOnScratchDatabase((scratch) => benchmark(scratch, parseOptions()));
