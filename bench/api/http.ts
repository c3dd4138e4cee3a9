import http from 'node:http';
import { isDeepStrictEqual } from 'node:util';
import { percentile } from '../harness.ts';
import type { OverviewBody } from './bare.ts';
import { alternate, answered, type LoadShape, rate, runLoad, type Side, send } from './load.ts';
import { printSide, printStatements, verdict } from './report.ts';
import type { Dataset, Tenant } from './seed.ts';
import type { Clock, Server } from './servers.ts';

const WARMUP_MS = 2_000;
/** The counting pass per side: long enough for every connection and tenant. */
const COUNT_MS = 2_000;
export const PASSWORD = 'api-bench-password-1';

export interface HttpPhase {
  dataset: Dataset;
  shape: LoadShape;
  tenants: Tenant[];
  cookies: string[];
  app: Server;
  bare: Server;
  clock: Clock;
}

export interface HttpVerdict {
  dataset: Dataset;
  ratio: number;
  pass: boolean;
}

/** Real sessions, minted by POST /api/auth/login as a browser on the app's origin would. */
export async function signIn(app: Server, tenants: Tenant[]): Promise<string[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const cookies: string[] = [];
  try {
    for (const tenant of tenants) {
      const result = await send(agent, `${app.url}/api/auth/login`, {
        method: 'POST',
        headers: { origin: app.url, 'content-type': 'application/json' },
        body: JSON.stringify({ email: tenant.email, password: PASSWORD }),
      });
      const cookie = result.headers['set-cookie']?.[0]?.split(';')[0];
      if (result.status !== 200 || !cookie)
        throw new Error(`login of ${tenant.email} failed: ${result.status} ${result.body}`);
      cookies.push(cookie);
    }
    return cookies;
  } finally {
    agent.destroy();
  }
}

type Requests = Record<Side, (index: number) => Promise<number>>;

/** Request i reads tenant i mod n on both sides, each side over its own keep-alive sockets. */
function requestsOf(phase: HttpPhase, agents: Record<Side, http.Agent>) {
  const { tenants, cookies, app, bare } = phase;
  const pick = (i: number) => i % tenants.length;
  const fetchers = {
    app: (i: number) =>
      send(agents.app, `${app.url}/api/tenant/overview`, {
        headers: { cookie: cookies[pick(i)] ?? '' },
      }),
    bare: (i: number) => send(agents.bare, `${bare.url}/overview/${tenants[pick(i)]?.id}`),
  };
  const requests: Requests = {
    app: async (i) => (await fetchers.app(i)).status,
    bare: async (i) => (await fetchers.bare(i)).status,
  };
  return { fetchers, requests };
}

/**
 * Both endpoints must give the same answer for every tenant at one pinned instant: if the app
 * failed to see its rows, or the copied SQL drifted, the ratio would compare different work.
 */
async function checkSameAnswers(
  fetchers: Record<Side, (tenant: number) => ReturnType<typeof send>>,
  tenants: number,
  clock: Clock,
): Promise<OverviewBody> {
  clock.freeze(new Date());
  try {
    let first: OverviewBody | undefined;
    for (let tenant = 0; tenant < tenants; tenant++) {
      const app = await fetchers.app(tenant);
      const bare = await fetchers.bare(tenant);
      if (app.status !== 200 || bare.status !== 200)
        throw new Error(`overview answered ${app.status} (app) / ${bare.status} (bare route)`);
      const body = JSON.parse(app.body) as OverviewBody;
      if (!isDeepStrictEqual(body, JSON.parse(bare.body)))
        throw new Error(
          `app and bare route disagree for tenant ${tenant}:\n${app.body}\n${bare.body}`,
        );
      first ??= body;
    }
    if (!first) throw new Error('no tenants');
    return first;
  } finally {
    clock.freeze(undefined);
  }
}

/**
 * Warm-up, a counting pass per side (round trips per request, by statement), then the
 * alternating rounds with counting off, so its bookkeeping does not weigh on either side.
 */
async function measure(phase: HttpPhase, requests: Requests) {
  const { concurrency } = phase.shape;
  await runLoad(concurrency, WARMUP_MS, requests.app);
  await runLoad(concurrency, WARMUP_MS, requests.bare);
  const perRequest = async (side: Side) => {
    const counter = phase[side].roundTrips;
    counter.reset();
    counter.enable(true);
    const counted = answered(await runLoad(concurrency, COUNT_MS, requests[side]));
    counter.enable(false);
    const per = (n: number) => n / Math.max(1, counted);
    return {
      perRequest: per(counter.total()),
      statements: per(counter.statements()),
      requests: counted,
    };
  };
  const roundTrips = { app: await perRequest('app'), bare: await perRequest('bare') };
  const result = await alternate(phase.shape, requests);
  return { result, roundTrips };
}

function printRoundTrips(phase: HttpPhase, result: Awaited<ReturnType<typeof measure>>) {
  const { roundTrips } = result;
  console.log(
    `\n  round trips per request: app ${roundTrips.app.perRequest.toFixed(2)},` +
      ` bare ${roundTrips.bare.perRequest.toFixed(2)}` +
      ` (statement batches sent: app ${roundTrips.app.statements.toFixed(2)},` +
      ` bare ${roundTrips.bare.statements.toFixed(2)}; a batch written before the previous` +
      ` one's answer rides in its round trip)`,
  );
  for (const side of ['app', 'bare'] as const) {
    printStatements(side, phase[side].roundTrips.byKind(), roundTrips[side].requests);
  }
}

/** GET /api/tenant/overview through session + RLS against the bare route, on one dataset. */
export async function httpPhase(phase: HttpPhase): Promise<HttpVerdict> {
  const { dataset, tenants, clock } = phase;
  console.log(`\n[http: ${dataset.name}] ${describeDataset(dataset)}`);
  const agents = {
    app: new http.Agent({ keepAlive: true, maxSockets: phase.shape.concurrency }),
    bare: new http.Agent({ keepAlive: true, maxSockets: phase.shape.concurrency }),
  };
  try {
    const { fetchers, requests } = requestsOf(phase, agents);
    const sample = await checkSameAnswers(fetchers, tenants.length, clock);
    console.log(`  answers: identical for all ${tenants.length} tenants; tenant 1 sees`);
    console.log(`    ${JSON.stringify({ ...sample, tenant: undefined, as_of: undefined })}`);
    const measured = await measure(phase, requests);
    const { result } = measured;
    printSide('app: GET /api/tenant/overview, session cookie, one unit of work, RLS', result.app);
    printSide('bare: same SQL as svc_mssp, WHERE tenant_id = $1, no auth', result.bare);
    printRoundTrips(phase, measured);
    const ratio = rate(result.bare) === 0 ? 0 : rate(result.app) / rate(result.bare);
    const p50 = (side: Side) => percentile(result[side].latencies, 50);
    const pass = ratio >= dataset.target;
    console.log(
      `\n  [ratio: ${dataset.name}] app/bare throughput = ${ratio.toFixed(3)}` +
        ` (target >= ${dataset.target}) -> ${verdict(pass)}; p50 latency app/bare = ` +
        `${(p50('app') / p50('bare')).toFixed(2)}x`,
    );
    return { dataset, ratio, pass };
  } finally {
    agents.app.destroy();
    agents.bare.destroy();
  }
}

export function describeDataset(dataset: Dataset): string {
  return (
    `${dataset.tenants} tenants x (${dataset.events} events, ${dataset.investigations}` +
    ` investigations, ${dataset.reviews} reviews)`
  );
}
