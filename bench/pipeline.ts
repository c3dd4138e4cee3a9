/**
 * How many investigations per second go through the triage pipeline, and how much of an
 * investigation's time is svc's own rather than the model's?
 *
 * One process holds svc: the API side's core (ingest opens the investigations, as an adapter's
 * batch would) and, per phase, a `svc worker`'s parts (a core with a pool of concurrency + 2
 * and composeWorkers running the real pipeline jobs on the PostgreSQL queue: triage alone with
 * the default policy, whose triage job writes enrichment and the decision itself),
 * against a scratch embedded PostgreSQL. The model is the LLM stand-in in a child process
 * (OpenAI chat completions over HTTPS, a fixed latency, a cap on generations at once), named
 * by the install defaults (SVC_LLM_*). 50 active tenants on the default triage policy:
 * analyzers off, so the model is the only outside wait; half the answers close the
 * investigation, half ask for a review.
 *
 *   1. Throughput per worker concurrency: a backlog opened at once; investigations/s from the
 *      first opening's commit to the last decision's, against the model alone driven by the
 *      same number of clients in the same run.
 *   2. Share: investigations opened one at a time below capacity; per investigation,
 *      (wall − model time) / wall, from investigation.opened committed to decision.made
 *      committed; and per triage job, the handler's wall time against its model call.
 *   3. Queue latency at idle: a trivial job enqueued one at a time, enqueue → handler start.
 *   4. Tenant fairness: every other tenant opens one investigation, alone and then right behind
 *      one tenant's flood of `--flood` investigations opened at once; the others' wait from
 *      opening to their triage job's start. A job is never preempted, so behind a flood that
 *      holds every slot the others wait for slots to free; the goal is that this is all they
 *      wait, whatever the flood's size: their p99 behind the flood at most their p99 alone
 *      (with many tenants they wait for each other too) plus two triage jobs' p99 run time
 *      (FIFO would make them wait for the whole flood).
 *
 * Exits 0 whatever the verdicts; non-zero only when the benchmark itself fails.
 *
 *   npm run bench:pipeline
 *   npm run bench:pipeline -- --levels 4,16,32,64,128 --llm-concurrency 64
 *   npm run bench:pipeline -- --tenants 100 --flood 1000          # fleet size
 *   SVC_WORKER_CONCURRENCY=8 npm run bench:pipeline      # the queue-latency phase's workers
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { ScratchDatabase } from '../src/db/scratch.ts';
import { verdict } from './api/report.ts';
import { percentile, runOnScratchDatabase } from './harness.ts';
import { type CpuSnapshot, cpuDelta, cpuSnapshot, postmasterPid } from './ingest/cpu.ts';
import {
  investigationTimes,
  jobProfile,
  mean,
  peakInFlight,
  type ShareSummary,
  shareSummary,
  triageJobShares,
} from './pipeline/breakdown.ts';
import { createTenants } from './pipeline/investigations.ts';
import { type LlmProcess, startLlmProcess } from './pipeline/llm.ts';
import {
  type FairnessRun,
  fairnessPhase,
  llmOnlyPhase,
  type PipelineRun,
  queueLatencyPhase,
  sharePhase,
  throughputPhase,
} from './pipeline/phases.ts';
import { type BenchSvc, startSvc } from './pipeline/svc.ts';
import { createRecorder, type Recorder } from './pipeline/timing.ts';

const TARGET_SHARE = 0.1;
const TARGET_QUEUE_P99_MS = 100;
/** The others' p99 wait behind one tenant's flood: their p99 alone plus this many triage jobs' p99 run times. */
const TARGET_FAIRNESS = 2;

interface Options {
  tenants: number;
  levels: number[];
  levelSeconds: number;
  llmLatencyMs: number;
  llmConcurrency: number;
  baselineMs: number;
  shareRate: number;
  shareMs: number;
  shareConcurrency: number;
  queueSamples: number;
  queuePauseMs: number;
  flood: number;
  timeoutMs: number;
}

const FLAGS = [
  'tenants',
  'levels',
  'level-seconds',
  'llm-latency',
  'llm-concurrency',
  'baseline-seconds',
  'share-rate',
  'share-seconds',
  'share-concurrency',
  'queue-samples',
  'queue-pause',
  'flood',
  'timeout',
] as const;

function parseOptions(): Options {
  const { values } = parseArgs({
    options: Object.fromEntries(FLAGS.map((name) => [name, { type: 'string' as const }])),
  });
  const raw = (name: (typeof FLAGS)[number]) =>
    (values as Partial<Record<string, string>>)[name] ??
    process.env[`BENCH_${name.toUpperCase().replaceAll('-', '_')}`];
  const integer = (
    name: (typeof FLAGS)[number],
    text: string | undefined,
    min: number,
    max: number,
  ) => {
    const value = Number(text?.replaceAll('_', ''));
    if (!Number.isInteger(value) || value < min || value > max)
      throw new Error(`--${name} must be integers ${min}-${max}, got ${JSON.stringify(text)}`);
    return value;
  };
  const int = (name: (typeof FLAGS)[number], fallback: number, min: number, max: number) =>
    integer(name, raw(name) ?? String(fallback), min, max);
  return {
    tenants: int('tenants', 50, 2, 1_000),
    levels: (raw('levels') ?? '4,16,32,64').split(',').map((l) => integer('levels', l, 1, 90)),
    levelSeconds: int('level-seconds', 8, 1, 120),
    llmLatencyMs: int('llm-latency', 300, 0, 60_000),
    llmConcurrency: int('llm-concurrency', 32, 1, 1_000),
    baselineMs: int('baseline-seconds', 3, 1, 60) * 1000,
    // 0: a quarter of the best throughput measured before it, so nothing queues for long.
    shareRate: int('share-rate', 0, 0, 1_000),
    shareMs: int('share-seconds', 15, 1, 300) * 1000,
    shareConcurrency: int('share-concurrency', 16, 1, 90),
    queueSamples: int('queue-samples', 150, 10, 10_000),
    queuePauseMs: int('queue-pause', 150, 10, 10_000),
    // 0: ten investigations per worker slot of the share phase's concurrency.
    flood: int('flood', 0, 0, 100_000),
    timeoutMs: int('timeout', 120, 10, 3_600) * 1000,
  };
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const pct = (share: number) => `${(share * 100).toFixed(1)}%`;
const ms = (value: number) => `${value.toFixed(1)} ms`;
const shares = (s: ShareSummary) => `p50 ${pct(s.p50)}, p95 ${pct(s.p95)}, Σ ${pct(s.total)}`;

function printCpu(cpu: CpuSnapshot, wallMs: number, investigations: number): void {
  const wall = wallMs / 1000;
  const per = (v: number) => ((v / investigations) * 1000).toFixed(1);
  console.log(
    `    CPU over ${wall.toFixed(1)} s: machine ${cpu.machine.toFixed(1)} s of` +
      ` ${(wall * availableParallelism()).toFixed(1)}; svc process ${cpu.bench.toFixed(1)} s,` +
      ` PostgreSQL ${cpu.postgres.toFixed(1)} s, LLM stand-in ${cpu.adapters.toFixed(1)} s, other` +
      ` ${(cpu.machine - cpu.bench - cpu.postgres - cpu.adapters).toFixed(1)} s; CPU-ms per` +
      ` investigation: svc ${per(cpu.bench)}, PostgreSQL ${per(cpu.postgres)}`,
  );
}

function printRun(run: PipelineRun): void {
  const { decisions } = run;
  const calls = run.jobs.flatMap((j) => j.llm);
  const fresh = calls.filter((c) => !c.reused).length;
  console.log(
    `    decisions ${decisions.decided}/${run.investigations} (${decisions.closed} closed,` +
      ` ${decisions.reviews} reviews); model requests ${run.llmRequests}, ${fresh} on a new` +
      ` connection; peak model calls in flight ${peakInFlight(run.jobs)}`,
  );
}

interface Level {
  run: PipelineRun;
  rate: number;
  baseline: number;
}

async function throughput(
  svc: BenchSvc,
  recorder: Recorder,
  llm: LlmProcess,
  tenants: string[],
  options: Options,
  cpu: () => CpuSnapshot,
): Promise<Level[]> {
  const levels: Level[] = [];
  let first = 0;
  console.log('\nthroughput: a backlog opened at once, per worker concurrency');
  for (const concurrency of options.levels) {
    const base = await llmOnlyPhase(llm, { concurrency, durationMs: options.baselineMs });
    const ideal = (Math.min(concurrency, options.llmConcurrency) * 1000) / options.llmLatencyMs;
    const perTenant = Math.max(1, Math.ceil((ideal * options.levelSeconds) / tenants.length));
    const before = cpu();
    const run = await throughputPhase(svc, recorder, {
      tenants,
      perTenant,
      first,
      concurrency,
      timeoutMs: options.timeoutMs,
      llm,
    });
    first += tenants.length * perTenant;
    const rate = (run.investigations / run.elapsedMs) * 1000;
    const triage = triageJobShares(run.jobs);
    levels.push({ run, rate, baseline: base.rate });
    console.log(
      `  concurrency ${concurrency}: ${run.investigations} investigations in` +
        ` ${(run.elapsedMs / 1000).toFixed(1)} s = ${rate.toFixed(1)}/s; model alone at` +
        ` ${concurrency} clients ${base.rate.toFixed(1)} calls/s (p50 ${ms(percentile(base.latencies, 50))});` +
        ` ratio ${(rate / base.rate).toFixed(2)}`,
    );
    console.log(
      `    triage jobs: own share ${shares(triage.server)} (model time as the server reports it);` +
        ` mean job ${ms(mean(run.jobs.filter((j) => j.type === 'triage').map((j) => j.end - j.start)))}`,
    );
    printRun(run);
    printCpu(cpuDelta(before, cpu()), run.elapsedMs, run.investigations);
  }
  return levels;
}

interface Share {
  investigation: ShareSummary;
  triage: ReturnType<typeof triageJobShares>;
  wallP50: number;
  llmP50: number;
  problems: string[];
  /** Investigations the phase opened. */
  count: number;
}

async function share(
  svc: BenchSvc,
  recorder: Recorder,
  llm: LlmProcess,
  tenants: string[],
  options: Options,
  first: number,
  cpu: () => CpuSnapshot,
): Promise<Share> {
  console.log(
    `\nshare: investigations opened one at a time, ${options.shareRate}/s for` +
      ` ${options.shareMs / 1000} s, worker concurrency ${options.shareConcurrency}`,
  );
  const before = cpu();
  const run = await sharePhase(svc, recorder, {
    tenants,
    rate: options.shareRate,
    durationMs: options.shareMs,
    first,
    concurrency: options.shareConcurrency,
    timeoutMs: options.timeoutMs,
    llm,
  });
  const { times, problems } = investigationTimes(run.opened, run.jobs);
  const investigation = shareSummary(times.map((t) => ({ wall: t.wall, llm: t.llmServer })));
  const investigationClient = shareSummary(times.map((t) => ({ wall: t.wall, llm: t.llmClient })));
  const triage = triageJobShares(run.jobs);
  const wallP50 = percentile(
    times.map((t) => t.wall),
    50,
  );
  const llmP50 = percentile(
    times.map((t) => t.llmServer),
    50,
  );
  console.log(
    `  ${times.length} investigations timed (${problems.length} problems); wall p50 ${ms(wallP50)},` +
      ` p95 ${ms(
        percentile(
          times.map((t) => t.wall),
          95,
        ),
      )}; model (server) p50 ${ms(llmP50)}`,
  );
  console.log(`  per investigation, svc's own share: ${shares(investigation)}`);
  console.log(
    `    counting the whole HTTPS call as the model's instead: ${shares(investigationClient)}`,
  );
  console.log(
    `  per triage job (${triage.jobs}), own share: ${shares(triage.server)}; with the whole call` +
      ` as the model's: ${shares(triage.client)}`,
  );
  const m = (pick: (t: (typeof times)[number]) => number) => ms(mean(times.map(pick)));
  console.log(
    `  mean timeline: queued ${m((t) => t.queued[0])} → triage ${m((t) => t.triage)} (its own` +
      ` ${m((t) => t.triage - t.llmClient)}, HTTPS call ${m((t) => t.llmClient)} of which the` +
      ` model ${m((t) => t.llmServer)}) → queued ${m((t) => t.queued[1])} → enrich` +
      ` ${m((t) => t.enrich)} → queued ${m((t) => t.queued[2])} → decide ${m((t) => t.decide)}`,
  );
  const inline = times.filter((t) => t.inline).length;
  console.log(
    `  decided by the triage job itself (inline steps): ${inline} of ${times.length}; the others by a decide job`,
  );
  for (const job of jobProfile(run.jobs)) {
    console.log(
      `  ${job.type} job (${job.runs}): mean ${ms(job.wall)}; ${job.queries.toFixed(1)} database` +
        ` round trips, ${ms(job.queryMs)} (COMMITs ${ms(job.commitMs)}); model call ${ms(job.llmClient)}; the rest` +
        ` ${ms(job.wall - job.queryMs - job.llmClient)}`,
    );
  }
  for (const problem of problems.slice(0, 5)) console.log(`  PROBLEM ${problem}`);
  printRun(run);
  printCpu(cpuDelta(before, cpu()), run.elapsedMs, run.investigations);
  return { investigation, triage, wallP50, llmP50, problems, count: run.investigations };
}

/** The non-flood tenants' waits from opening to their triage job's start, in ms. */
function othersWaits(run: PipelineRun, floodTenant: string): number[] {
  const waits: number[] = [];
  for (const job of run.jobs) {
    if (job.type !== 'triage' || job.tenantId === floodTenant) continue;
    const opened = run.opened.get(job.subject);
    if (opened !== undefined) waits.push(job.start - opened);
  }
  return waits;
}

interface Fairness {
  alone: number[];
  flooded: number[];
  flood: number;
  drainMs: number;
  /** Triage jobs' run times (all tenants) in the flooded run. */
  triageRuns: number[];
}

async function fairness(
  svc: BenchSvc,
  recorder: Recorder,
  llm: LlmProcess,
  tenants: string[],
  options: Options,
  first: number,
): Promise<Fairness> {
  const flood = options.flood || options.shareConcurrency * 10;
  console.log(
    `
fairness: ${tenants.length - 1} tenants open one investigation each, alone, then right` +
      ` behind one tenant's ${flood} opened at once; worker concurrency ${options.shareConcurrency}`,
  );
  const run: FairnessRun = await fairnessPhase(svc, recorder, {
    tenants,
    flood,
    first,
    concurrency: options.shareConcurrency,
    timeoutMs: options.timeoutMs,
    llm,
  });
  const alone = othersWaits(run.alone, run.floodTenant);
  const flooded = othersWaits(run.flooded, run.floodTenant);
  const waits = (w: number[]) =>
    `p50 ${ms(percentile(w, 50))}, p99 ${ms(percentile(w, 99))}, max ${ms(Math.max(...w))}`;
  console.log(`  the others alone: opened → triage start ${waits(alone)}`);
  console.log(`  behind the flood: opened → triage start ${waits(flooded)}`);
  console.log(
    `  the flood drained in ${(run.flooded.elapsedMs / 1000).toFixed(1)} s;` +
      ` its triage jobs waited ${waits(
        run.flooded.jobs
          .filter((j) => j.type === 'triage' && j.tenantId === run.floodTenant)
          .map((j) => j.start - (run.flooded.opened.get(j.subject) ?? j.start)),
      )}`,
  );
  printRun(run.flooded);
  const triageRuns = run.flooded.jobs
    .filter((j) => j.type === 'triage')
    .map((j) => j.end - j.start);
  return { alone, flooded, flood, drainMs: run.flooded.elapsedMs, triageRuns };
}

function printSummary(
  options: Options,
  levels: Level[],
  result: Share,
  queue: Awaited<ReturnType<typeof queueLatencyPhase>>,
  fair: Fairness,
  loads: string[],
): void {
  console.log('\nsummary');
  console.log(`  load average (1/5/15 min): ${loads.join(' → ')}`);
  const base = levels[0];
  for (const level of levels) {
    const c = level.run.concurrency;
    const scale = base ? level.rate / base.rate : Number.NaN;
    const ideal = base
      ? Math.min(c, options.llmConcurrency) / Math.min(base.run.concurrency, options.llmConcurrency)
      : Number.NaN;
    console.log(
      `  concurrency ${String(c).padStart(3)}: ${level.rate.toFixed(1).padStart(6)} investigations/s,` +
        ` ×${scale.toFixed(2)} of concurrency ${base?.run.concurrency} (ideal ×${ideal.toFixed(2)} with` +
        ` ${options.llmConcurrency} model slots); ratio to the model alone` +
        ` ${(level.rate / level.baseline).toFixed(2)}`,
    );
  }
  const own = result.investigation.p95;
  console.log(
    `  svc's own share per investigation (opened → decided), p95: ${pct(own)} (< ${pct(TARGET_SHARE)})` +
      ` ${verdict(own < TARGET_SHARE && result.problems.length === 0)}; ratio to the goal` +
      ` ${(own / TARGET_SHARE).toFixed(2)}; p50 ${pct(result.investigation.p50)}`,
  );
  const job = result.triage.server;
  console.log(
    `  (not judged) per triage job, p95: ${pct(job.p95)} ${verdict(job.p95 < TARGET_SHARE)};` +
      ` p50 ${pct(job.p50)} ${verdict(job.p50 < TARGET_SHARE)}`,
  );
  console.log(
    `  investigation wall p50 / model time p50 (the baseline): ${(result.wallP50 / result.llmP50).toFixed(3)}` +
      ` (${ms(result.wallP50)} / ${ms(result.llmP50)})`,
  );
  const p99 = percentile(queue.fromEnqueue, 99);
  console.log(
    `  queue latency at idle, enqueue → handler start: p50 ${ms(percentile(queue.fromEnqueue, 50))},` +
      ` p99 ${ms(p99)} (< ${TARGET_QUEUE_P99_MS} ms) ${verdict(p99 < TARGET_QUEUE_P99_MS)};` +
      ` ratio to the goal ${(p99 / TARGET_QUEUE_P99_MS).toFixed(2)}; from the commit p50` +
      ` ${ms(percentile(queue.fromCommit, 50))}, p99 ${ms(percentile(queue.fromCommit, 99))}`,
  );
  const floodedP99 = percentile(fair.flooded, 99);
  const aloneP99 = percentile(fair.alone, 99);
  const jobP99 = percentile(fair.triageRuns, 99);
  const bound = aloneP99 + TARGET_FAIRNESS * jobP99;
  const ratio = floodedP99 / bound;
  console.log(
    `  fairness, the others' opened → triage start p99 behind a flood of ${fair.flood}:` +
      ` ${ms(floodedP99)} (≤ alone p99 ${ms(aloneP99)} + ${TARGET_FAIRNESS} × a triage job's` +
      ` p99 run time ${ms(jobP99)} = ${ms(bound)}) ${verdict(ratio <= 1)}; ratio to the bound` +
      ` ${ratio.toFixed(2)}, to alone ×${(floodedP99 / aloneP99).toFixed(2)}; the flood drained in` +
      ` ${(fair.drainMs / 1000).toFixed(1)} s`,
  );
}

async function benchmark(scratch: ScratchDatabase, options: Options): Promise<void> {
  const loads = [load()];
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-pipeline-bench-'));
  let llm: LlmProcess | undefined;
  let svc: BenchSvc | undefined;
  const recorder = createRecorder();
  try {
    llm = await startLlmProcess({
      latencyMs: options.llmLatencyMs,
      concurrency: options.llmConcurrency,
      caFile: path.join(dir, 'ca.pem'),
    });
    svc = await startSvc(scratch.target, llm);
    const tenants = await createTenants(svc.core.db, options.tenants);
    console.log(
      `pipeline bench: ${availableParallelism()} cores, load average ${loads[0]};` +
        ` ${options.tenants} tenants; model stand-in (pid ${llm.pid}) ${options.llmLatencyMs} ms` +
        ` per answer, ${options.llmConcurrency} at once; worker levels ${options.levels.join(', ')}`,
    );
    const postmaster = postmasterPid(`${scratch.dir}/pg`);
    const stand = llm;
    const cpu = () => cpuSnapshot([stand.pid], postmaster);

    const levels = await throughput(svc, recorder, llm, tenants, options, cpu);
    loads.push(load());
    const first = levels.reduce((n, l) => n + l.run.investigations, 0);
    const best = Math.max(...levels.map((l) => l.rate));
    const shareRate = options.shareRate || Math.max(1, Math.round(best / 4));
    const result = await share(svc, recorder, llm, tenants, { ...options, shareRate }, first, cpu);
    loads.push(load());

    const tenantId = tenants[0] as string;
    const queue = await queueLatencyPhase(svc, recorder, {
      tenantId,
      samples: options.queueSamples,
      warmup: 5,
      pauseMs: options.queuePauseMs,
    });
    console.log(
      `\nqueue latency at idle: ${queue.fromEnqueue.length} trivial jobs one at a time,` +
        ` ${queue.concurrency} workers; enqueue → start p50 ${ms(percentile(queue.fromEnqueue, 50))},` +
        ` p99 ${ms(percentile(queue.fromEnqueue, 99))}, max ${ms(Math.max(...queue.fromEnqueue))};` +
        ` commit → start p50 ${ms(percentile(queue.fromCommit, 50))}, p99` +
        ` ${ms(percentile(queue.fromCommit, 99))}; the enqueue transaction itself p50` +
        ` ${ms(percentile(queue.enqueueMs, 50))}, p99 ${ms(percentile(queue.enqueueMs, 99))}`,
    );
    loads.push(load());
    const fair = await fairness(svc, recorder, llm, tenants, options, first + result.count);
    loads.push(load());
    printSummary(options, levels, result, queue, fair, loads);
  } finally {
    recorder.close();
    await svc?.close();
    await llm?.close();
    await rm(dir, { recursive: true, force: true });
  }
}

runOnScratchDatabase((scratch) => benchmark(scratch, parseOptions()));
