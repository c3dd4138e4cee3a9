import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Readiness {
  ready: boolean;
  details: Record<string, unknown>;
}

/**
 * `/healthz` (the process is alive) and `/readyz` (it reaches svc and knows where to resume
 * ingest) for the kubelet's probes, and `/metrics` (Prometheus text) for a scraper. Readiness
 * leaves the indexer out on purpose: the first heartbeat must activate the tenant while the
 * indexer may still be starting.
 */
export async function startHealthServer(
  host: string,
  port: number,
  readiness: () => Readiness,
  metrics?: () => Promise<{ contentType: string; body: string }>,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return send(405, { status: 'method not allowed' });
    if (path === '/healthz') return send(200, { status: 'ok' });
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
      const { ready, details } = readiness();
      return send(ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', ...details });
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
