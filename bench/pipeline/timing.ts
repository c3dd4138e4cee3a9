import { AsyncLocalStorage } from 'node:async_hooks';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { JobHandler } from '../../src/workers/runtime.ts';

/** One model call as svc's HTTP client saw it, and as the model server reported it. */
export interface LlmCall {
  /** performance.now() at the request's creation and at its response's arrival. */
  start: number;
  end: number;
  /** The server's own time on the request (`openai-processing-ms`), waiting for a slot included. */
  serverMs: number | undefined;
  /** Over a kept-alive connection, or a new one (TCP and TLS handshakes in the client time). */
  reused: boolean;
  status: number;
}

/** One run of one job handler: from the moment the worker called it until it returned. */
export interface JobTiming {
  type: string;
  /** investigation_id (triage, enrich, decide) or review_id (act). */
  subject: string;
  tenantId: string;
  start: number;
  end: number;
  ok: boolean;
  llm: LlmCall[];
  /** The handler's database round trips and the time from each call to its answer. */
  queries: number;
  queryMs: number;
  /** Of those, the COMMITs: each waits for its WAL flush (fsync) as well. */
  commitMs: number;
}

/**
 * Times every job the workers run and attributes every outbound HTTP request to the job that
 * made it (AsyncLocalStorage follows the handler's async calls into node:http, whose
 * diagnostics channels report each request's start and its response) and every database
 * round trip to the job that sent it (pg's Client#query, wrapped while the recorder is open:
 * pg publishes no diagnostics). Nothing in src/ knows.
 */
export interface Recorder {
  /** The job table with every handler timed; what composeWorkers is given. */
  instrument(jobs: Readonly<Record<string, JobHandler>>): Record<string, JobHandler>;
  jobs: JobTiming[];
  /** Handlers running now (started, not returned). */
  readonly running: number;
  /** Resolves once `done()` holds, checked now and after every job that finishes. */
  waitFor(what: string, done: () => boolean, timeoutMs: number): Promise<void>;
  reset(): void;
  close(): void;
}

export function createRecorder(): Recorder {
  const context = new AsyncLocalStorage<JobTiming>();
  const pending = new WeakMap<ClientRequest, { job: JobTiming; start: number }>();
  let jobs: JobTiming[] = [];
  let running = 0;
  let waiters: Array<() => void> = [];

  const onStart = (message: unknown) => {
    const { request } = message as { request: ClientRequest };
    const job = context.getStore();
    if (job) pending.set(request, { job, start: performance.now() });
  };
  const onResponse = (message: unknown) => {
    const { request, response } = message as { request: ClientRequest; response: IncomingMessage };
    const call = pending.get(request);
    if (!call) return;
    pending.delete(request);
    const header = response.headers['openai-processing-ms'];
    call.job.llm.push({
      start: call.start,
      end: performance.now(),
      serverMs: typeof header === 'string' ? Number(header) : undefined,
      reused: request.reusedSocket,
      status: response.statusCode ?? 0,
    });
  };
  subscribe('http.client.request.start', onStart);
  subscribe('http.client.response.finish', onResponse);
  const query = pg.Client.prototype.query;
  // Promise-style calls only: the handlers' transactions await every statement.
  pg.Client.prototype.query = function timed(this: pg.Client, ...args: unknown[]) {
    const start = performance.now();
    const result = (query as (...a: unknown[]) => unknown).apply(this, args);
    const job = context.getStore();
    if (job && result instanceof Promise) {
      const count = () => {
        const took = performance.now() - start;
        job.queries += 1;
        job.queryMs += took;
        if (args[0] === 'COMMIT') job.commitMs += took;
      };
      result.then(count, count);
    }
    return result;
  } as typeof query;

  return {
    instrument(table) {
      return Object.fromEntries(
        Object.entries(table).map(([type, handler]): [string, JobHandler] => [
          type,
          async (run) => {
            const input = run.input;
            const job: JobTiming = {
              type,
              subject: String(input.investigation_id ?? input.review_id ?? ''),
              tenantId: run.tenantId,
              start: performance.now(),
              end: Number.NaN,
              ok: false,
              llm: [],
              queries: 0,
              queryMs: 0,
              commitMs: 0,
            };
            running++;
            try {
              await context.run(job, () => handler(run));
              job.ok = true;
            } finally {
              job.end = performance.now();
              running--;
              jobs.push(job);
              for (const wake of waiters) wake();
            }
          },
        ]),
      );
    },
    get jobs() {
      return jobs;
    },
    get running() {
      return running;
    },
    waitFor(what, done, timeoutMs) {
      if (done()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w !== check);
          reject(new Error(`not ${what} in ${timeoutMs} ms (${jobs.length} jobs finished)`));
        }, timeoutMs);
        const check = () => {
          if (!done()) return;
          clearTimeout(timer);
          waiters = waiters.filter((w) => w !== check);
          resolve();
        };
        waiters.push(check);
      });
    },
    reset() {
      jobs = [];
    },
    close() {
      pg.Client.prototype.query = query;
      unsubscribe('http.client.request.start', onStart);
      unsubscribe('http.client.response.finish', onResponse);
    },
  };
}
