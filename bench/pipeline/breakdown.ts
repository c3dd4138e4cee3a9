import { percentile } from '../harness.ts';
import type { JobTiming, LlmCall } from './timing.ts';

/** Where one investigation's wall time went, opening commit → decision commit, in ms. */
export interface InvestigationTimes {
  wall: number;
  /** The model server's own time (openai-processing-ms), and the call as svc's client saw it. */
  llmServer: number;
  llmClient: number;
  /**
   * opened → triage handler start; triage end → enrich start; enrich end → decide start. The
   * last two are 0 when the triage job wrote enrichment and the decision itself
   * (docs/pipeline.md "Inline steps"); the second also when only a decide job followed it.
   */
  queued: [number, number, number];
  /** Handler wall times (0 for a step written inline by the triage job). */
  triage: number;
  enrich: number;
  decide: number;
  /** The decision was written by the triage job. */
  inline: boolean;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const clientMs = (calls: LlmCall[]) => sum(calls.map((c) => c.end - c.start));
const serverMs = (calls: LlmCall[]) => sum(calls.map((c) => c.serverMs ?? c.end - c.start));

/**
 * Each investigation's timeline from its jobs. Investigations whose steps did not each run
 * exactly once and succeed are counted as problems, not timed.
 */
export function investigationTimes(
  opened: Map<string, number>,
  jobs: JobTiming[],
): { times: InvestigationTimes[]; problems: string[] } {
  const bySubject = new Map<string, JobTiming[]>();
  for (const job of jobs) {
    const list = bySubject.get(job.subject) ?? [];
    list.push(job);
    bySubject.set(job.subject, list);
  }
  const times: InvestigationTimes[] = [];
  const problems: string[] = [];
  for (const [id, openedAt] of opened) {
    const steps = bySubject.get(id) ?? [];
    const one = (type: string) => {
      const runs = steps.filter((j) => j.type === type);
      return runs.length === 1 && runs[0]?.ok ? runs[0] : undefined;
    };
    const [triage, enrich, decide] = [one('triage'), one('enrich'), one('decide')];
    const ran = (type: string) => steps.some((j) => j.type === type);
    // Three jobs, triage then decide (the inline decision waited for the projector), or triage alone.
    const shape = !triage
      ? undefined
      : enrich && decide
        ? 'jobs'
        : decide && !ran('enrich')
          ? 'decide'
          : !ran('enrich') && !ran('decide')
            ? 'inline'
            : undefined;
    if (!triage || !shape || triage.llm.length !== 1) {
      problems.push(`${id}: ${steps.map((s) => `${s.type}${s.ok ? '' : '!'}`).join(',')}`);
      continue;
    }
    const decidedAt = decide?.end ?? triage.end;
    times.push({
      wall: decidedAt - openedAt,
      llmServer: serverMs(triage.llm),
      llmClient: clientMs(triage.llm),
      queued: [
        triage.start - openedAt,
        enrich ? enrich.start - triage.end : decide ? decide.start - triage.end : 0,
        enrich && decide ? decide.start - enrich.end : 0,
      ],
      triage: triage.end - triage.start,
      enrich: enrich ? enrich.end - enrich.start : 0,
      decide: decide ? decide.end - decide.start : 0,
      inline: shape === 'inline',
    });
  }
  return { times, problems };
}

/** svc's own share of a wall time: what is left after the model's time, over the whole. */
export const ownShare = (wall: number, llm: number) => (wall - llm) / wall;

export interface ShareSummary {
  p50: number;
  p95: number;
  /** Σ own / Σ wall. */
  total: number;
}

export function shareSummary(pairs: Array<{ wall: number; llm: number }>): ShareSummary {
  const shares = pairs.map((p) => ownShare(p.wall, p.llm));
  return {
    p50: percentile(shares, 50),
    p95: percentile(shares, 95),
    total: ownShare(sum(pairs.map((p) => p.wall)), sum(pairs.map((p) => p.llm))),
  };
}

/** Per triage job: the handler's wall time against its one model call. */
export function triageJobShares(jobs: JobTiming[]): {
  server: ShareSummary;
  client: ShareSummary;
  jobs: number;
} {
  const triage = jobs.filter((j) => j.type === 'triage' && j.ok && j.llm.length > 0);
  const wall = (j: JobTiming) => j.end - j.start;
  return {
    server: shareSummary(triage.map((j) => ({ wall: wall(j), llm: serverMs(j.llm) }))),
    client: shareSummary(triage.map((j) => ({ wall: wall(j), llm: clientMs(j.llm) }))),
    jobs: triage.length,
  };
}

/** The most model calls in flight at once, as svc's client saw them. */
export function peakInFlight(jobs: JobTiming[]): number {
  const edges = jobs
    .flatMap((j) => j.llm)
    .flatMap((c) => [
      [c.start, 1],
      [c.end, -1],
    ])
    .sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0) || (a[1] ?? 0) - (b[1] ?? 0));
  let now = 0;
  let peak = 0;
  for (const [, step] of edges) {
    now += step ?? 0;
    peak = Math.max(peak, now);
  }
  return peak;
}

export const mean = (values: number[]) =>
  values.length === 0 ? Number.NaN : sum(values) / values.length;

/** Per job type, means per run: wall, database round trips and their time, the model call. */
export function jobProfile(jobs: JobTiming[]): Array<{
  type: string;
  runs: number;
  wall: number;
  queries: number;
  queryMs: number;
  commitMs: number;
  llmClient: number;
}> {
  const types = [...new Set(jobs.map((j) => j.type))];
  return types.map((type) => {
    const runs = jobs.filter((j) => j.type === type && j.ok);
    return {
      type,
      runs: runs.length,
      wall: mean(runs.map((j) => j.end - j.start)),
      queries: mean(runs.map((j) => j.queries)),
      queryMs: mean(runs.map((j) => j.queryMs)),
      commitMs: mean(runs.map((j) => j.commitMs)),
      llmClient: mean(runs.map((j) => clientMs(j.llm))),
    };
  });
}
