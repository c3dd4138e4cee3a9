import http from 'node:http';
import { performance } from 'node:perf_hooks';

/** Hard caps so a broken server cannot keep the benchmark running. */
const MAX_REQUESTS_PER_PHASE = 1_000_000;
export const REQUEST_TIMEOUT_MS = 30_000;

export interface HttpResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export function send(
  agent: http.Agent,
  url: string,
  init: { method?: string; headers?: http.OutgoingHttpHeaders; body?: string } = {},
): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { agent, method: init.method ?? 'GET', headers: init.headers ?? {} },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    request.setTimeout(REQUEST_TIMEOUT_MS, () =>
      request.destroy(new Error(`no answer in ${REQUEST_TIMEOUT_MS} ms: ${url}`)),
    );
    request.on('error', reject);
    request.end(init.body);
  });
}

export type Side = 'app' | 'bare';

export interface LoadResult {
  elapsedMs: number;
  /** HTTP status -> how many. */
  counts: Map<string, number>;
  /** Of the 200s only. */
  latencies: number[];
  roundRates: number[];
}

export interface LoadShape {
  concurrency: number;
  /** Per side, split over the rounds. */
  durationMs: number;
  rounds: number;
}

const EMPTY: LoadResult = { elapsedMs: 0, counts: new Map(), latencies: [], roundRates: [] };

export const ok = (result: LoadResult) => result.counts.get('200') ?? 0;
export const answered = (result: LoadResult) =>
  [...result.counts.values()].reduce((a, b) => a + b, 0);
export const rate = (result: LoadResult) => ok(result) / (result.elapsedMs / 1000);

/**
 * `concurrency` workers each start a request while the deadline has not passed; requests in
 * flight at the deadline are awaited and the clock runs until the last one ends, so
 * count / elapsed stays honest for both sides.
 */
export async function runLoad(
  concurrency: number,
  durationMs: number,
  request: (index: number) => Promise<number>,
): Promise<LoadResult> {
  const counts = new Map<string, number>();
  const latencies: number[] = [];
  const started = performance.now();
  const deadline = started + durationMs;
  let issued = 0;
  const worker = async () => {
    while (performance.now() < deadline && issued < MAX_REQUESTS_PER_PHASE) {
      const begin = performance.now();
      const status = await request(issued++);
      if (status === 200) latencies.push(performance.now() - begin);
      counts.set(String(status), (counts.get(String(status)) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsedMs = performance.now() - started;
  return { elapsedMs, counts, latencies, roundRates: [] };
}

function merge(total: LoadResult, round: LoadResult): LoadResult {
  const counts = new Map(total.counts);
  for (const [status, n] of round.counts) counts.set(status, (counts.get(status) ?? 0) + n);
  return {
    elapsedMs: total.elapsedMs + round.elapsedMs,
    counts,
    latencies: total.latencies.concat(round.latencies),
    roundRates: [...total.roundRates, rate(round)],
  };
}

/**
 * The sides take turns, and which one goes first alternates, so a burst of load from other
 * work on the shared machine is less likely to land on one side only.
 */
export async function alternate(
  shape: LoadShape,
  requests: Record<Side, (index: number) => Promise<number>>,
): Promise<Record<Side, LoadResult>> {
  const turnMs = shape.durationMs / shape.rounds;
  const totals: Record<Side, LoadResult> = { app: EMPTY, bare: EMPTY };
  for (let round = 0; round < shape.rounds; round++) {
    const order: Side[] = round % 2 === 0 ? ['app', 'bare'] : ['bare', 'app'];
    for (const side of order) {
      const result = await runLoad(shape.concurrency, turnMs, requests[side]);
      totals[side] = merge(totals[side], result);
    }
  }
  return totals;
}
