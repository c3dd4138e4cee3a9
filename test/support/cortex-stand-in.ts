import {
  basicHeader,
  type Fault,
  type RecordedRequest,
  type Reply,
  startStandInServer,
} from './http-stand-in.ts';

/**
 * A local server speaking the subset of Cortex 3's REST API svc uses:
 * `GET /api/analyzer/type/{dataType}`, `POST /api/analyzer/{id}/run`, `GET /api/job/{id}` and
 * `GET /api/job/{id}/waitreport?atMost=<duration>`, which holds the request until the job ends
 * or the duration passes and answers the job with its `report` (Cortex's JobCtrl shapes:
 * `{summary, full, success: true, artifacts, operations}`, `{errorMessage, input, success:
 * false}`, or the string "Waiting"). Analyzers are configured with a report per observable
 * value; by default a job succeeds with one `info` taxonomy. A job ends `jobDelayMs` after it
 * was created. Authentication: `Bearer <apiKey>`, or Basic with the login when one is given
 * (Cortex's `auth.method.basic`).
 */

export type StandInReport =
  | {
      taxonomies: Array<{ level: string; namespace: string; predicate: string; value: unknown }>;
      full?: unknown;
    }
  | { failure: string };

export interface StandInAnalyzer {
  name: string;
  dataTypes: string[];
  /** By observable value; others get the default `info` report. */
  reports?: Record<string, StandInReport>;
}

export interface StandInJob {
  id: string;
  analyzerId: string;
  analyzerName: string;
  dataType: string;
  data: string;
  tlp: number;
  message?: string;
  createdAt: number;
  endsAt: number;
  outcome: StandInReport;
}

export interface CortexStandIn {
  url: string;
  apiKey: string;
  requests: RecordedRequest[];
  failNext(count: number, fault: Fault): void;
  /** Analyzer ids by name. */
  analyzerIds: Record<string, string>;
  jobs(): StandInJob[];
  close(): Promise<void>;
}

export interface CortexStandInOptions {
  apiKey?: string;
  login?: { user: string; password: string };
  analyzers: StandInAnalyzer[];
  /** Default 20 ms. */
  jobDelayMs?: number;
}

const error = (status: number, type: string, message: string): Reply => ({
  status,
  body: { type, message },
});

/** Scala duration strings as Cortex parses `atMost`: `30second`, `30 seconds`, `1m`, `1minute`. */
function parseAtMost(text: string | null): number | undefined {
  const m = /^(\d+)\s*(s|second|seconds|m|min|minute|minutes)?$/.exec(text ?? '1m');
  if (!m) return undefined;
  const n = Number(m[1]);
  return m[2]?.startsWith('s') || m[2] === undefined ? n * 1000 : n * 60_000;
}

function defaultReport(analyzer: string): StandInReport {
  return {
    taxonomies: [
      {
        level: 'info',
        namespace: analyzer.split('_')[0] ?? analyzer,
        predicate: 'Report',
        value: 'none',
      },
    ],
    full: {},
  };
}

export async function startCortexStandIn(options: CortexStandInOptions): Promise<CortexStandIn> {
  const apiKey = options.apiKey ?? 'cortex-test-key';
  const delay = options.jobDelayMs ?? 20;
  const analyzers = options.analyzers.map((a, i) => ({
    ...a,
    id: `${(i + 1).toString(16).padStart(32, 'a')}`,
  }));
  const jobs: StandInJob[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let sequence = 0;

  const analyzerJson = (a: (typeof analyzers)[number]) => ({
    id: a.id,
    _id: a.id,
    _type: 'worker',
    name: a.name,
    version: a.name.split('_').slice(1).join('.'),
    description: `${a.name} (stand-in)`,
    dataTypeList: a.dataTypes,
    workerDefinitionId: a.name,
    analyzerDefinitionId: a.name,
    type: 'analyzer',
    jobCache: 10,
    createdBy: 'admin',
    createdAt: 0,
  });

  function status(job: StandInJob, now = Date.now()) {
    if (now < job.endsAt) return now - job.createdAt < delay / 2 ? 'Waiting' : 'InProgress';
    return 'failure' in job.outcome ? 'Failure' : 'Success';
  }

  function jobJson(job: StandInJob) {
    const s = status(job);
    return {
      id: job.id,
      _id: job.id,
      _type: 'job',
      workerDefinitionId: job.analyzerName,
      workerId: job.analyzerId,
      workerName: job.analyzerName,
      analyzerDefinitionId: job.analyzerName,
      analyzerId: job.analyzerId,
      analyzerName: job.analyzerName,
      organization: 'tenant',
      type: 'analyzer',
      status: s,
      dataType: job.dataType,
      data: job.data,
      tlp: job.tlp,
      pap: 2,
      message: job.message ?? '',
      parameters: {},
      date: job.createdAt,
      createdAt: job.createdAt,
      createdBy: 'svc',
      ...(s === 'Success' || s === 'Failure'
        ? { startDate: job.createdAt, endDate: job.endsAt }
        : {}),
    };
  }

  function withReport(job: StandInJob) {
    const s = status(job);
    const outcome = job.outcome;
    let report: unknown = s;
    if (s === 'Failure' && 'failure' in outcome)
      report = { errorMessage: outcome.failure, input: '{}', success: false };
    if (s === 'Success' && 'taxonomies' in outcome)
      report = {
        summary: { taxonomies: outcome.taxonomies },
        full: outcome.full ?? {},
        success: true,
        artifacts: [],
        operations: [],
      };
    return { ...jobJson(job), report };
  }

  function run(analyzerId: string, body: Record<string, unknown>): Reply {
    const analyzer = analyzers.find((a) => a.id === analyzerId);
    if (!analyzer) return error(404, 'NotFoundError', `worker ${analyzerId} not found`);
    if (typeof body.dataType !== 'string' || typeof body.data !== 'string')
      return error(400, 'AttributeCheckingError', 'dataType and data are required');
    if (!analyzer.dataTypes.includes(body.dataType))
      return error(400, 'BadRequestError', `${analyzer.name} cannot analyze ${body.dataType}`);
    const now = Date.now();
    const job: StandInJob = {
      id: `job-${++sequence}`,
      analyzerId,
      analyzerName: analyzer.name,
      dataType: body.dataType,
      data: body.data,
      tlp: typeof body.tlp === 'number' ? body.tlp : 2,
      ...(typeof body.message === 'string' ? { message: body.message } : {}),
      createdAt: now,
      endsAt: now + delay,
      outcome: analyzer.reports?.[body.data] ?? defaultReport(analyzer.name),
    };
    jobs.push(job);
    return { status: 200, body: jobJson(job) };
  }

  async function waitReport(jobId: string, atMost: string | null): Promise<Reply> {
    const job = jobs.find((j) => j.id === jobId);
    if (!job) return error(404, 'NotFoundError', `job ${jobId} not found`);
    const ms = parseAtMost(atMost);
    if (ms === undefined) return error(400, 'BadRequest', `invalid duration ${atMost}`);
    // A timer may fire a little before Date.now() reaches the job's end (timers run on a
    // monotonic clock), which would answer InProgress for a job the wait covered: wait again
    // until the wall clock agrees or the caller's duration is spent.
    const until = Date.now() + ms;
    for (;;) {
      const wait = Math.min(until, job.endsAt) - Date.now();
      if (wait <= 0) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          resolve();
        }, wait);
        timers.add(timer);
      });
    }
    return { status: 200, body: withReport(job) };
  }

  const login = options.login;
  const server = await startStandInServer({
    authorized: (header) =>
      header === `Bearer ${apiKey}` ||
      (login !== undefined && header === basicHeader(login.user, login.password)),
    unauthorized: error(401, 'AuthenticationError', 'Authentication failure'),
    internalError: (s) => error(s, 'InternalError', 'stand-in fault'),
    route(request, url) {
      const path = url.pathname;
      const byType = /^\/api\/analyzer\/type\/([^/]+)$/.exec(path);
      if (request.method === 'GET' && byType?.[1]) {
        const type = decodeURIComponent(byType[1]);
        const list = analyzers.filter((a) => a.dataTypes.includes(type)).map(analyzerJson);
        return { status: 200, body: list, headers: { 'x-total': String(list.length) } };
      }
      const runPath = /^\/api\/analyzer\/([^/]+)\/run$/.exec(path);
      if (request.method === 'POST' && runPath?.[1])
        return run(decodeURIComponent(runPath[1]), (request.body ?? {}) as Record<string, unknown>);
      const wait = /^\/api\/job\/([^/]+)\/waitreport$/.exec(path);
      if (request.method === 'GET' && wait?.[1])
        return waitReport(decodeURIComponent(wait[1]), url.searchParams.get('atMost'));
      const get = /^\/api\/job\/([^/]+)$/.exec(path);
      const job = get?.[1]
        ? jobs.find((j) => j.id === decodeURIComponent(get[1] ?? ''))
        : undefined;
      if (request.method === 'GET' && job) return { status: 200, body: jobJson(job) };
      return error(404, 'NotFoundError', `${request.method} ${path} not found`);
    },
  });

  return {
    ...server,
    apiKey,
    analyzerIds: Object.fromEntries(analyzers.map((a) => [a.name, a.id])),
    jobs: () => structuredClone(jobs),
    async close() {
      for (const timer of timers) clearTimeout(timer);
      await server.close();
    },
  };
}
