/**
 * bench:ingest --adapters N: the fleet run (issue 33 "100 adapters at once").
 *
 * svc as `svc serve` runs it (bench/ingest/app.ts) with N active tenants, each with its own
 * real `svc adapter` OS process reading its own stand-in indexer (bench/ingest/stand-in-fleet.ts;
 * the flooded tenant's stand-in in a process of its own). Phases:
 *
 *   0. enqueue: what the job queue's per-tenant rank costs a batch's enqueue, with 0 to 100,000
 *      jobs waiting for the tenant, against add_jobs without a rank (machine otherwise idle);
 *   1. baseline: `rate` alerts/s round-robin over tenants 2..N for `duration`; each alert's
 *      latency from searchable in its indexer to counted in its investigation (projected);
 *   2. flood: the same steady load while tenant 1's indexer receives `flood` alerts at once;
 *      the others' latency against phase 1's (goal: p99 ≤ 2×), the projector's lag (max and
 *      p99 over tenants, read from the database every second), and the aggregate rate until
 *      the flood and everything else is projected.
 */
import { rmSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { ScratchDatabase } from '../../src/db/scratch.ts';
import { clientConfig } from '../../src/db/target.ts';
import { seconds, verdict } from '../api/report.ts';
import { percentile } from '../harness.ts';
import { type AdapterProcess, type Adapters, adapterWarnings, startAdapters } from './adapters.ts';
import { type BenchApp, type BenchTenant, createTenants, startApp } from './app.ts';
import { cpuDelta, cpuSnapshot, postmasterPid } from './cpu.ts';
import { type EnqueueCell, enqueuePhase } from './enqueue.ts';
import {
  appendInChunks,
  floodAlerts,
  type Placement,
  type SteadyResult,
  steadyPhase,
} from './fleet.ts';
import { type BenchIndexer, startBenchIndexer } from './opensearch.ts';
import { readCounts } from './progress.ts';
import { type StandInFleet, startStandInFleet } from './stand-in-fleet.ts';

export interface FleetOptions {
  adapters: number;
  flood: number;
  rate: number;
  durationMs: number;
  sampleMs: number;
  settleMs: number;
  poolSize: number | undefined;
  enqueueWaiting: number[];
  enqueueJobs: number[];
  adapterEnv: Record<string, string>;
  /** The flooded tenant's indexer: a real OpenSearch node (default) or a stand-in. */
  floodIndexer: 'opensearch' | 'stand-in';
  indexerHeapMb: number;
}

const FAIRNESS_RATIO = 2;
/** The single-install ingest goal of docs/benchmarks.md "Ingest". */
const TARGET_RATE = 5_000;

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const fmt = (n: number) => Math.round(n).toLocaleString('en');
const ms = (v: number) => `${Number.isFinite(v) ? v.toFixed(0) : 'n/a'} ms`;

function printEnqueue(cells: EnqueueCell[]): void {
  console.log('\nenqueue: one batch enqueues k triage jobs while the tenant has W jobs waiting');
  for (const c of cells)
    console.log(
      `  W ${fmt(c.waiting).padStart(7)}, k ${String(c.jobs).padStart(3)}: enqueueJobs` +
        ` ${c.ranked.toFixed(1)} ms, add_jobs without rank ${c.plain.toFixed(1)} ms` +
        ` (ratio ${(c.ranked / c.plain).toFixed(1)}×)`,
    );
}

function printSteady(name: string, r: SteadyResult, folds: number): void {
  const p = (q: number) => ms(percentile(r.latencies, q));
  console.log(
    `  ${name}: ${fmt(r.appended)} alerts over the steady tenants, ${fmt(r.latencies.length)} seen` +
      ` projected (${r.missing} missing), ${r.samples} samples; searchable → projected: p50 ${p(50)},` +
      ` p95 ${p(95)}, p99 ${p(99)}, max ${ms(Math.max(0, ...r.latencies))}`,
  );
  const lagMax = Math.max(0, ...r.lags.map((l) => l.max));
  const lagP99 = Math.max(0, ...r.lags.map((l) => l.p99));
  console.log(
    `  projector lag over ${r.lags.length} samples (s, age of the oldest unfolded event): peak` +
      ` max-over-tenants ${lagMax.toFixed(1)}, peak p99-over-tenants ${lagP99.toFixed(1)};` +
      ` svc_projection_lag_seconds peak ${Math.max(0, ...r.lags.map((l) => l.reported)).toFixed(1)}`,
  );
  console.log(
    `  projector: ${fmt(folds)} folds in ${seconds(r.wallMs)} (${fmt((folds / r.wallMs) * 1000)}/s)`,
  );
}

export async function fleetBenchmark(scratch: ScratchDatabase, o: FleetOptions): Promise<void> {
  const loads = [load()];
  console.log(
    `ingest bench, fleet: ${availableParallelism()} cores, load average ${loads[0]};` +
      ` ${o.adapters} tenants, one real \`svc adapter\` process each, stand-in indexers;` +
      ` ${fmt(o.rate)} alerts/s over tenants 2..${o.adapters} for ${seconds(o.durationMs)}` +
      ` per phase; flood ${fmt(o.flood)} alerts to tenant 1; adapter env ${JSON.stringify(o.adapterEnv)}`,
  );
  let app: BenchApp | undefined;
  let indexer: BenchIndexer | undefined;
  const fleets: StandInFleet[] = [];
  let adapters: Adapters | undefined;
  const started: AdapterProcess[] = [];
  let tenants: BenchTenant[] = [];
  const killAll = () => {
    for (const p of started) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  };
  process.on('exit', killAll);
  const mssp = new pg.Pool({ ...clientConfig(scratch.target, 'mssp'), max: 3 });
  try {
    app = await startApp(scratch.target, o.poolSize);
    console.log(
      `  svc at ${app.url}: projector concurrency ${app.config.projector.concurrency},` +
        ` sweep ${app.config.projector.sweepMs} ms, ingest rate ${fmt(app.config.ingest.rate)}/s` +
        ` burst ${fmt(app.config.ingest.burst)} per tenant, pool ${o.poolSize ?? 'default'}`,
    );

    const [queueTenant] = await createTenants(app.db, 1, 'enqueue-bench');
    const cells = await enqueuePhase(
      app.db,
      (queueTenant as BenchTenant).id,
      o.enqueueWaiting,
      o.enqueueJobs,
    );
    printEnqueue(cells);

    tenants = await createTenants(app.db, o.adapters, 'fleet');
    const flooded = tenants[0] as BenchTenant;
    const steady = tenants.slice(1);
    // The flooded tenant's indexer holds 100,000 documents: the stand-in scans all of them per
    // search (its CPU, not svc's, would bound the flood), so it gets a real OpenSearch node.
    const floodFleet = o.floodIndexer === 'stand-in' ? await startStandInFleet(1) : undefined;
    if (floodFleet) fleets.push(floodFleet);
    if (!floodFleet) {
      const startedAt = performance.now();
      indexer = await startBenchIndexer({ tenants: 1, shards: 1, heapMb: o.indexerHeapMb });
      console.log(
        `  tenant 1's indexer: OpenSearch at ${indexer.url} (pid ${indexer.node.pid}, plain node,` +
          ` ${o.indexerHeapMb} MB heap), ready after ${seconds(performance.now() - startedAt)}`,
      );
    }
    const restFleet = await startStandInFleet(steady.length);
    fleets.push(restFleet);
    const place = (t: BenchTenant): Placement =>
      t.n === 0 && floodFleet ? { fleet: floodFleet, k: 0 } : { fleet: restFleet, k: t.n - 1 };
    const spawnStarted = performance.now();
    adapters = await startAdapters({
      tenants,
      apiUrl: app.url,
      indexerOf: (t) => {
        if (t.n === 0 && indexer) return { url: indexer.url, index: indexer.patternFor(0) };
        const { fleet, k } = place(t);
        return { url: fleet.urls[k] as string, index: 'wazuh-alerts-*' };
      },
      extra: o.adapterEnv,
      track: (a) => started.push(a),
    });
    console.log(
      `  ${adapters.processes.length} adapters running and caught up after` +
        ` ${seconds(performance.now() - spawnStarted)}; load ${load()}`,
    );
    const postmaster = postmasterPid(`${scratch.dir}/pg`);
    const snapshot = () =>
      cpuSnapshot(
        [...(adapters as Adapters).pids(), ...fleets.map((f) => f.pid)],
        postmaster,
        indexer?.node.pid,
      );
    const written = new Map<string, number>();
    const ids = tenants.map((t) => t.id);
    const common = {
      mssp,
      steady,
      all: tenants,
      place,
      written,
      rate: o.rate,
      durationMs: o.durationMs,
      sampleMs: o.sampleMs,
      settleMs: o.settleMs,
      reportedLag: () => (app as BenchApp).projector.lag(0).maxSeconds,
    };

    // Warm-up: JIT, prepared statements and pool connections, not measured.
    const warm = await steadyPhase({
      ...common,
      already: (await readCounts(mssp, ids)).projected,
      durationMs: Math.min(5_000, o.durationMs),
    });
    console.log(`\nwarm-up: ${fmt(warm.appended)} alerts (not measured)`);

    loads.push(load());
    const folds = () => (app as BenchApp).projector.status().folds;
    const folds1 = folds();
    const cpu1 = snapshot();
    const baseline = await steadyPhase({
      ...common,
      already: (await readCounts(mssp, ids)).projected,
    });
    const cpuBase = cpuDelta(cpu1, snapshot());
    console.log(`\nbaseline (no flood), load ${load()}`);
    printSteady('baseline', baseline, folds() - folds1);

    // The backlog is written before the phase (not timed) and released at its start.
    const backlog = floodAlerts(flooded, 0, o.flood);
    const staging = performance.now();
    const floodIndex = indexer;
    let release: () => Promise<void>;
    if (floodIndex) {
      await floodIndex.stage(0, backlog);
      release = () => floodIndex.publish();
    } else {
      release = () => appendInChunks(place(flooded), backlog);
    }
    console.log(
      `\nflood: ${fmt(o.flood)} alerts for tenant 1 written to its indexer in` +
        ` ${seconds(performance.now() - staging)} (not searchable yet, not timed)`,
    );
    loads.push(load());
    const folds2 = folds();
    const cpu2 = snapshot();
    const flood = await steadyPhase({
      ...common,
      already: (await readCounts(mssp, ids)).projected,
      flood: { tenant: flooded, alerts: o.flood, release },
    });
    const cpuFlood = cpuDelta(cpu2, snapshot());
    loads.push(load());
    console.log(`\nflood (${fmt(o.flood)} alerts to tenant 1 at the start), load ${load()}`);
    printSteady('flood', flood, folds() - folds2);
    const searches = (await Promise.all(fleets.map((f) => f.searches()))).reduce(
      (a, b) => a + b,
      0,
    );
    const warnings = adapterWarnings(adapters);

    const baseP99 = percentile(baseline.latencies, 99);
    const floodP99 = percentile(flood.latencies, 99);
    const ratio = floodP99 / baseP99;
    const total = flood.appended + o.flood;
    const aggregate = flood.floodProjectedMs ? (total / flood.wallMs) * 1000 : Number.NaN;
    const perTenantP99 = flood.perTenant.map((l) => percentile(l, 99)).filter(Number.isFinite);
    const basePerTenantP99 = baseline.perTenant
      .map((l) => percentile(l, 99))
      .filter(Number.isFinite);
    const lagMax = Math.max(0, ...flood.lags.map((l) => l.max));
    const lagP99 = Math.max(0, ...flood.lags.map((l) => l.p99));
    const othersLag = Math.max(0, ...flood.lags.map((l) => (l.behind > 0 ? l.p99 : 0)));
    const cpuLine = (name: string, c: ReturnType<typeof cpuDelta>, wall: number) =>
      `  CPU ${name} over ${seconds(wall)}: machine ${c.machine.toFixed(1)} s` +
      ` (${((c.machine / (wall / 1000) / availableParallelism()) * 100).toFixed(0)}% of the cores);` +
      ` svc process ${c.bench.toFixed(1)} s, PostgreSQL ${c.postgres.toFixed(1)} s, adapters +` +
      ` stand-ins ${c.adapters.toFixed(1)} s, OpenSearch ${c.indexer.toFixed(1)} s, other` +
      ` ${(c.machine - c.bench - c.postgres - c.adapters - c.indexer).toFixed(1)} s`;

    console.log('\nsummary');
    console.log(
      `  ${o.adapters} real svc adapter processes (one tenant each) against stand-in indexers` +
        ` (testcluster/stand-ins/indexer.ts in a child process; tenant 1: ${indexer ? 'a real OpenSearch node' : 'a stand-in of its own'}),` +
        ` ${fmt(searches)} stand-in searches answered;` +
        ` adapter warnings ${warnings.length}${warnings.length ? ` (first: ${warnings[0]})` : ''}`,
    );
    console.log(`  load average (1/5/15 min): ${loads.join(' → ')}`);
    console.log(cpuLine('baseline', cpuBase, baseline.wallMs));
    console.log(cpuLine('flood', cpuFlood, flood.wallMs));
    console.log(
      `  aggregate during the flood: ${fmt(total)} alerts stored and projected in` +
        ` ${seconds(flood.wallMs)} = ${fmt(aggregate)} alerts/s (>= ${fmt(TARGET_RATE)})` +
        ` ${verdict(aggregate >= TARGET_RATE)}; the flood appended in` +
        ` ${seconds(flood.floodAppendMs ?? Number.NaN)}, projected ${seconds(flood.floodProjectedMs ?? Number.NaN)}` +
        ` after the phase began (${fmt((o.flood / (flood.floodProjectedMs ?? Number.NaN)) * 1000)} alerts/s for tenant 1)`,
    );
    console.log(
      `  fairness: the other ${steady.length} tenants' p99 searchable → projected` +
        ` ${ms(floodP99)} during the flood vs ${ms(baseP99)} without (same run): ratio` +
        ` ${ratio.toFixed(2)} (<= ${FAIRNESS_RATIO}) ${verdict(ratio <= FAIRNESS_RATIO && flood.missing === 0)};` +
        ` worst tenant's p99 ${ms(Math.max(0, ...perTenantP99))} vs ${ms(Math.max(0, ...basePerTenantP99))}`,
    );
    console.log(
      `  projector lag during the flood (age of the oldest unfolded event, peak over samples):` +
        ` max over tenants ${lagMax.toFixed(1)} s, p99 over tenants ${lagP99.toFixed(1)} s` +
        ` (the flooded tenant's own peak ${Math.max(0, ...flood.lags.map((l) => l.flooded)).toFixed(1)} s;` +
        ` p99 while any tenant was behind ${othersLag.toFixed(1)} s); baseline peak max` +
        ` ${Math.max(0, ...baseline.lags.map((l) => l.max)).toFixed(1)} s`,
    );
    const worst = cells.reduce((a, c) => (c.ranked - c.plain > a.ranked - a.plain ? c : a));
    console.log(
      `  enqueue rank cost: worst cell W ${fmt(worst.waiting)}, k ${worst.jobs}: ${worst.ranked.toFixed(1)} ms` +
        ` vs ${worst.plain.toFixed(1)} ms without the rank (ratio ${(worst.ranked / worst.plain).toFixed(1)}×;` +
        ` goal: within 2× of add_jobs) ${verdict(worst.ranked <= 2 * worst.plain + 1)}`,
    );
  } finally {
    await adapters?.stop().catch(() => undefined);
    killAll();
    for (const f of fleets) await f.stop();
    await indexer?.stop();
    await app?.close();
    await mssp.end();
    for (const t of tenants) rmSync(t.mounts.root, { recursive: true, force: true });
  }
}
