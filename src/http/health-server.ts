import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Readiness {
  ready: boolean;
  details: Record<string, unknown>;
}

/**
 * `/healthz` (the process is alive) and `/readyz` (it can do its work) for the kubelet's
 * probes, and `/metrics` (Prometheus text) for a scraper: the HTTP side of the processes that
 * serve no API (`svc adapter`, `svc worker`). What "ready" means is the caller's.
 */
export async function startHealthServer(options: {
  host: string;
  port: number;
  readiness: () => Readiness | Promise<Readiness>;
  /** False when the process cannot recover by itself (the kubelet restarts it); default alive. */
  liveness?: () => Readiness;
  metrics?: () => Promise<{ contentType: string; body: string }>;
}): Promise<{ port: number; close(): Promise<void> }> {
  const { host, port, readiness, liveness, metrics } = options;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return send(405, { status: 'method not allowed' });
    if (path === '/healthz') {
      const alive = liveness?.() ?? { ready: true, details: {} };
      return send(alive.ready ? 200 : 503, {
        status: alive.ready ? 'ok' : 'failed',
        ...alive.details,
      });
    }
    if (path === '/metrics' && metrics) {
      metrics().then(
        ({ contentType, body }) => {
          res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
          res.end(body);
        },
        () => send(500, { status: 'metrics unavailable' }),
      );
      return;
    }
    if (path === '/readyz') {
      Promise.resolve()
        .then(readiness)
        .then(
          ({ ready, details }) =>
            send(ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', ...details }),
          () => send(503, { status: 'not ready' }),
        );
      return;
    }
    return send(404, { status: 'not found' });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
