import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log/index.ts';
import type { MetricsRegistry } from './registry.ts';

export interface MetricsListener {
  /** The port bound (the configured one, or the system's pick for port 0 in tests). */
  port: number;
  close(): Promise<void>;
}

export interface MetricsListenerOptions {
  host: string;
  /** `undefined` (SVC_METRICS_PORT=0) opens nothing; 0 here asks the system for a free port. */
  port: number | undefined;
  metrics: Pick<MetricsRegistry, 'scrape'>;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
}

/**
 * `GET /metrics` on its own listener, apart from the public API port: scraping needs no
 * credentials, so it must be reachable only where the operator lets Prometheus in (the pod
 * network, the chart's NetworkPolicy), never through the ingress. It answers that one path.
 */
export async function listenMetrics(
  options: MetricsListenerOptions,
): Promise<MetricsListener | undefined> {
  if (options.port === undefined) return undefined;
  const server = createServer((req, res) => {
    answer(req, res, options).catch((error: unknown) => {
      options.logger.error({ err: error }, 'metrics scrape failed');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('scrape failed\n');
    });
  });
  const bound = await new Promise<boolean>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EADDRINUSE' && error.code !== 'EADDRNOTAVAIL') return reject(error);
      // Metrics are a side channel: a taken port (a second svc process on this machine) must
      // not keep the API or the workers from starting. The log line says what to change.
      options.logger.warn(
        { host: options.host, port: options.port, code: error.code },
        'metrics listener not started: give each svc process on this machine its own SVC_METRICS_PORT, or 0 to turn it off',
      );
      resolve(false);
    });
    server.listen(options.port, options.host, () => {
      server.removeAllListeners('error');
      resolve(true);
    });
  });
  if (!bound) return undefined;
  const { port } = server.address() as AddressInfo;
  options.logger.info({ url: `http://${options.host}:${port}/metrics` }, 'metrics listening');
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  options: MetricsListenerOptions,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== '/metrics') {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('Not Found\n');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { 'content-type': 'text/plain', allow: 'GET, HEAD' });
    res.end('Method Not Allowed\n');
    return;
  }
  const { contentType, body } = await options.metrics.scrape();
  res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : body);
}
