import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * What the TheHive and Cortex stand-ins share: a node:http server on 127.0.0.1 with a random
 * port, every request recorded, the auth header checked before routing, and programmable faults
 * (the next N requests answer an error status, or never answer at all).
 */

export interface RecordedRequest {
  method: string;
  /** Path and query, as sent. */
  path: string;
  authorization: string | undefined;
  /** Parsed JSON, or undefined when the body was empty. */
  body: unknown;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type Fault = { status: number } | 'hang';

export interface StandInServer {
  url: string;
  requests: RecordedRequest[];
  /** The next `count` requests (after recording) get `fault` instead of their answer. */
  failNext(count: number, fault: Fault): void;
  /**
   * From now on each request takes effect at once and its answer is sent `ms` later, as from a
   * slow server: a client that dies in between never hears of what it did. 0 turns it off.
   */
  setLatency(ms: number): void;
  close(): Promise<void>;
}

export interface StandInRoutes {
  /** False: answer `unauthorized` (the service's own 401). */
  authorized(authorization: string | undefined): boolean;
  unauthorized: Reply;
  /** Play applications answer an unexpected failure like this. */
  internalError: (status: number) => Reply;
  route(request: RecordedRequest, url: URL): Promise<Reply> | Reply;
}

export function basicHeader(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: http.ServerResponse, reply: Reply): void {
  if (res.destroyed) return;
  const text = reply.body === undefined ? '' : JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    ...(text === '' ? {} : { 'content-type': 'application/json' }),
    ...reply.headers,
  });
  res.end(text);
}

export async function startStandInServer(routes: StandInRoutes): Promise<StandInServer> {
  const requests: RecordedRequest[] = [];
  let faults: { count: number; fault: Fault } = { count: 0, fault: 'hang' };
  let latencyMs = 0;

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const text = await readBody(req);
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      send(res, { status: 400, body: { type: 'BadRequest', message: 'Invalid Json' } });
      return;
    }
    const recorded = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      authorization: req.headers.authorization,
      body,
    };
    requests.push(recorded);
    if (faults.count > 0) {
      faults.count -= 1;
      // A hung request keeps its socket open until close() (closeAllConnections) ends it.
      if (faults.fault !== 'hang') send(res, routes.internalError(faults.fault.status));
      return;
    }
    if (!routes.authorized(req.headers.authorization)) {
      send(res, routes.unauthorized);
      return;
    }
    const reply = await routes.route(recorded, new URL(recorded.path, 'http://stand-in'));
    if (latencyMs > 0) await sleep(latencyMs, undefined, { ref: false });
    send(res, reply);
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      send(res, { status: 500, body: { type: 'InternalError', message: String(error) } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    failNext(count, fault) {
      faults = { count, fault };
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };
}
