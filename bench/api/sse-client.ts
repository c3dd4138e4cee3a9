import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { REQUEST_TIMEOUT_MS } from './load.ts';

/** SSE connections opened at once per client process; all at the same instant only measures accept(). */
const CONNECT_PARALLELISM = 32;

/**
 * Milliseconds on a clock every process of the bench shares (the wall clock at process start
 * plus the monotonic time since), so a commit seen by the appender and a receipt seen by a
 * client process compare.
 */
export const sharedNow = () => performance.timeOrigin + performance.now();

/** One stream to open: which replica, as whom, for which tenant (its index and id). */
export interface StreamPlan {
  url: string;
  cookie: string;
  tenant: number;
  tenantId: string;
}

export interface Delivery {
  id: string;
  /** The tenant id the event's payload names. */
  payloadTenant: string | undefined;
  at: number;
}

export interface SseClient {
  tenant: number;
  tenantId: string;
  request: http.ClientRequest;
  buffer: string;
  deliveries: Delivery[];
}

/** The `data:` of one stream event: its id and the payload the appender wrote. */
function readDelivery(data: string, at: number): Delivery | undefined {
  const value: unknown = JSON.parse(data);
  if (typeof value !== 'object' || value === null) return undefined;
  const { id, payload } = value as { id?: unknown; payload?: unknown };
  if (typeof id !== 'string') return undefined;
  const tenant =
    typeof payload === 'object' && payload !== null
      ? (payload as { tenant_id?: unknown }).tenant_id
      : undefined;
  return { id, payloadTenant: typeof tenant === 'string' ? tenant : undefined, at };
}

/** Frames end with a blank line; comments (`: heartbeat`) carry no data and are skipped. */
function consume(client: SseClient, chunk: string, at: number): void {
  client.buffer += chunk;
  for (let end = client.buffer.indexOf('\n\n'); end !== -1; end = client.buffer.indexOf('\n\n')) {
    const frame = client.buffer.slice(0, end);
    client.buffer = client.buffer.slice(end + 2);
    const data = frame
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n');
    const delivery = data === '' ? undefined : readDelivery(data, at);
    if (delivery) client.deliveries.push(delivery);
  }
}

/** Resolves once the stream's headers arrived, i.e. once the hub has positioned it. */
function subscribe(agent: http.Agent, plan: StreamPlan): Promise<SseClient> {
  const { cookie, tenant, tenantId } = plan;
  return new Promise((resolve, reject) => {
    const request = http.request(`${plan.url}/api/tenant/events`, {
      agent,
      headers: { cookie, accept: 'text/event-stream' },
    });
    const client: SseClient = { tenant, tenantId, request, buffer: '', deliveries: [] };
    const timer = setTimeout(
      () => request.destroy(new Error('SSE subscribe timed out')),
      REQUEST_TIMEOUT_MS,
    );
    request.on('response', (response) => {
      clearTimeout(timer);
      if (response.statusCode !== 200) {
        request.destroy();
        reject(new Error(`SSE subscribe answered ${response.statusCode}`));
        return;
      }
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => consume(client, chunk, sharedNow()));
      // Teardown destroys the request on purpose; errors after that are expected.
      response.on('error', () => undefined);
      resolve(client);
    });
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    request.end();
  });
}

/** Opens every planned stream, into `clients` as they connect. */
export async function connectAll(
  agent: http.Agent,
  plans: readonly StreamPlan[],
  clients: SseClient[],
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < plans.length) {
      const plan = plans[next++];
      if (!plan) break;
      clients.push(await subscribe(agent, plan));
    }
  };
  await Promise.all(Array.from({ length: CONNECT_PARALLELISM }, worker));
}
