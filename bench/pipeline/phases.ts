import { readFile } from 'node:fs/promises';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { enqueueJobs } from '../../src/domains/jobs/job-repository.ts';
import {
  decisionsOf,
  investigationsOf,
  type Openings,
  openInvestigations,
} from './investigations.ts';
import type { LlmProcess } from './llm.ts';
import type { BenchSvc } from './svc.ts';
import type { JobTiming, Recorder } from './timing.ts';

/** How often a phase reads the decisions made while it waits for them all. */
const DECISION_POLL_MS = 50;

/** What a phase of investigations left behind for the report. */
export interface PipelineRun {
  concurrency: number;
  investigations: number;
  /** First opening commit → last decision commit. */
  elapsedMs: number;
  opened: Map<string, number>;
  jobs: JobTiming[];
  decisions: { decided: number; closed: number; reviews: number };
  /** Requests the stand-in received during the phase. */
  llmRequests: number;
}

async function runInvestigations(
  svc: BenchSvc,
  recorder: Recorder,
  options: { concurrency: number; count: number; timeoutMs: number; llm: LlmProcess },
  open: () => Promise<Openings>,
): Promise<PipelineRun> {
  const workers = await svc.startWorkers(options.concurrency, recorder);
  try {
    recorder.reset();
    const llmBefore = (await options.llm.stats()).requests;
    const openings = await open();
    const opened = await investigationsOf(svc.mssp, openings);
    // A decision is written by the decide job, or by the triage job itself when no analyzer is
    // allowed (docs/pipeline.md "Inline steps"): counted in the database, then every handler
    // that wrote one has returned once none runs.
    const ids = [...opened.keys()];
    const deadline = Date.now() + options.timeoutMs;
    while ((await decisionsOf(svc.mssp, ids)).decided < options.count) {
      if (Date.now() > deadline)
        throw new Error(`fewer than ${options.count} decisions in ${options.timeoutMs} ms`);
      await sleep(DECISION_POLL_MS);
    }
    await recorder.waitFor('every job returned', () => recorder.running === 0, options.timeoutMs);
    const jobs = [...recorder.jobs];
    const first = Math.min(...openings.values());
    const last = Math.max(...jobs.map((j) => j.end));
    return {
      concurrency: options.concurrency,
      investigations: options.count,
      elapsedMs: last - first,
      opened,
      jobs,
      decisions: await decisionsOf(svc.mssp, [...opened.keys()]),
      llmRequests: (await options.llm.stats()).requests - llmBefore,
    };
  } finally {
    await workers.stop();
  }
}

/**
 * Throughput: `perTenant` investigations for every tenant open at once (one ingest batch per
 * tenant, all tenants together), and the workers at `concurrency` work through them.
 */
export function throughputPhase(
  svc: BenchSvc,
  recorder: Recorder,
  options: {
    tenants: string[];
    perTenant: number;
    first: number;
    concurrency: number;
    timeoutMs: number;
    llm: LlmProcess;
  },
): Promise<PipelineRun> {
  const count = options.tenants.length * options.perTenant;
  return runInvestigations(svc, recorder, { ...options, count }, async () => {
    const batches = await Promise.all(
      options.tenants.map((tenant, t) =>
        openInvestigations(
          svc.ingest,
          tenant,
          options.first + t * options.perTenant,
          options.perTenant,
        ),
      ),
    );
    return new Map(batches.flatMap((b) => [...b]));
  });
}

/**
 * svc's own share: investigations opened one at a time, evenly paced at `rate` per second
 * round-robin over the tenants, below what the workers can do, so an investigation's wall
 * time is its own work and its model call, not a wait behind others.
 */
export function sharePhase(
  svc: BenchSvc,
  recorder: Recorder,
  options: {
    tenants: string[];
    rate: number;
    durationMs: number;
    first: number;
    concurrency: number;
    timeoutMs: number;
    llm: LlmProcess;
  },
): Promise<PipelineRun> {
  const count = Math.max(1, Math.round((options.rate * options.durationMs) / 1000));
  return runInvestigations(svc, recorder, { ...options, count }, async () => {
    const started = performance.now();
    const pending: Array<Promise<Openings>> = [];
    for (let i = 0; i < count; i++) {
      const due = started + (i * 1000) / options.rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const tenant = options.tenants[i % options.tenants.length] as string;
      pending.push(openInvestigations(svc.ingest, tenant, options.first + i, 1));
    }
    return new Map((await Promise.all(pending)).flatMap((b) => [...b]));
  });
}

/**
 * The same-run baseline of the model alone: `concurrency` clients calling the stand-in back
 * to back for `durationMs` over kept-alive HTTPS, no svc in between. Its rate is the most the
 * pipeline could reach at that concurrency, one model call per investigation.
 */
export async function llmOnlyPhase(
  llm: LlmProcess,
  options: { concurrency: number; durationMs: number },
): Promise<{ rate: number; latencies: number[] }> {
  const agent = new https.Agent({
    keepAlive: true,
    ca: await readFile(llm.caFile, 'utf8'),
    maxSockets: options.concurrency,
  });
  const url = new URL(`${llm.baseUrl}/chat/completions`);
  const body = JSON.stringify({
    model: 'bench-model',
    messages: [{ role: 'user', content: `Investigation: ${'x'.repeat(2000)}` }],
  });
  const call = () =>
    new Promise<void>((resolve, reject) => {
      const req = https.request(
        url,
        { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode === 200 ? resolve() : reject(new Error(`LLM ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const latencies: number[] = [];
  const started = performance.now();
  const until = started + options.durationMs;
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (performance.now() < until) {
        const at = performance.now();
        await call();
        latencies.push(performance.now() - at);
      }
    }),
  );
  const elapsed = performance.now() - started;
  agent.destroy();
  return { rate: (latencies.length / elapsed) * 1000, latencies };
}

/**
 * Queue latency at idle: one trivial job at a time through composeWorkers (the real queue,
 * the Worker-JWT dispatch), a pause of `pauseMs` ± half between them. Each sample runs from
 * the enqueue call (its transaction sets run_at) and from its commit (when a worker can see
 * it) to the handler's start.
 */
export async function queueLatencyPhase(
  svc: BenchSvc,
  recorder: Recorder,
  options: { tenantId: string; samples: number; warmup: number; pauseMs: number },
): Promise<{
  fromEnqueue: number[];
  fromCommit: number[];
  enqueueMs: number[];
  concurrency: number;
}> {
  let started: ((at: number) => void) | undefined;
  const jobs = {
    bench_ping: async () => {
      started?.(performance.now());
    },
  };
  const concurrency = svc.config.worker.concurrency;
  const workers = await svc.startWorkers(concurrency, recorder, jobs);
  const fromEnqueue: number[] = [];
  const fromCommit: number[] = [];
  const enqueueMs: number[] = [];
  try {
    for (let i = 0; i < options.warmup + options.samples; i++) {
      await sleep(options.pauseMs * (0.5 + Math.random()));
      const handlerStart = new Promise<number>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error('a ping job did not start in 10 s')),
          10_000,
        );
        started = (at) => {
          clearTimeout(timer);
          resolve(at);
        };
      });
      const called = performance.now();
      await svc.core.db.withTenant(options.tenantId, (tx) =>
        enqueueJobs(tx, [{ tenantId: options.tenantId, jobType: 'bench_ping', input: { n: i } }]),
      );
      const committed = performance.now();
      const at = await handlerStart;
      if (i < options.warmup) continue;
      fromEnqueue.push(at - called);
      fromCommit.push(at - committed);
      enqueueMs.push(committed - called);
    }
  } finally {
    await workers.stop();
  }
  return { fromEnqueue, fromCommit, enqueueMs, concurrency };
}

/** Tenant fairness: what the other tenants' investigations waited, with and without a flood. */
export interface FairnessRun {
  /** Each other tenant opens one investigation, nothing else queued. */
  alone: PipelineRun;
  /** The flood tenant opens `flood` at once, then each other tenant one. */
  flooded: PipelineRun;
  floodTenant: string;
}

/**
 * One tenant's flood against everyone else's single investigation, at one worker concurrency:
 * first the others alone (the reference), then the flood tenant's backlog opened in one batch
 * with the others' openings right behind it. The report compares the others' waits.
 */
export async function fairnessPhase(
  svc: BenchSvc,
  recorder: Recorder,
  options: {
    tenants: string[];
    flood: number;
    first: number;
    concurrency: number;
    timeoutMs: number;
    llm: LlmProcess;
  },
): Promise<FairnessRun> {
  const [floodTenant, ...others] = options.tenants;
  if (!floodTenant || others.length === 0) throw new Error('fairness needs two tenants or more');
  const openOthers = (first: number) =>
    Promise.all(others.map((tenant, t) => openInvestigations(svc.ingest, tenant, first + t, 1)));
  const alone = await runInvestigations(
    svc,
    recorder,
    { ...options, count: others.length },
    async () => new Map((await openOthers(options.first)).flatMap((b) => [...b])),
  );
  const first = options.first + others.length;
  const flooded = await runInvestigations(
    svc,
    recorder,
    { ...options, count: options.flood + others.length },
    async () => {
      // In batches of at most 100, as an adapter posts them.
      const flood: Openings[] = [];
      for (let at = 0; at < options.flood; at += 100)
        flood.push(
          await openInvestigations(
            svc.ingest,
            floodTenant,
            first + at,
            Math.min(100, options.flood - at),
          ),
        );
      const rest = await openOthers(first + options.flood);
      return new Map([...flood, ...rest].flatMap((b) => [...b]));
    },
  );
  return { alone, flooded, floodTenant };
}
