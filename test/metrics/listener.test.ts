import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { composeApi, composeCore } from '../../src/app/compose.ts';
import { ConfigError, loadConfig } from '../../src/config/index.ts';
import { createAppDatabase } from '../../src/db/pools.ts';
import { createLogger } from '../../src/log/index.ts';
import { createMetricsRegistry } from '../../src/metrics/registry.ts';
import { listenMetrics } from '../../src/metrics/server.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { metricsListener, parseExposition, scrape } from './support.ts';

// Issue 15 "Metrics": `GET /metrics` on its own listener (SVC_METRICS_PORT, default 9464, 0
// turns it off), answering that path only, and a scrape that survives a failing read.

let db: TestDatabase;
before(async () => {
  db = await createTestDatabase();
});
after(() => db.drop());

const silent = createLogger('silent');

/** A port nothing listens on (opened, then closed). */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test('issue 15 metrics: the metrics listener answers GET and HEAD /metrics, 404 on every other path, 405 for other methods', async (t) => {
  const listener = await metricsListener(createMetricsRegistry());
  t.after(() => listener.close());
  const base = `http://127.0.0.1:${listener.port}`;

  const get = await fetch(`${base}/metrics`);
  assert.equal(get.status, 200);
  assert.equal(get.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  const scraped = parseExposition(await get.text());
  assert.equal(scraped.types.get('svc_http_requests_total'), 'counter');
  assert.equal(scraped.types.get('svc_http_request_duration_seconds'), 'histogram');
  // Prometheus may add query parameters; the path decides.
  assert.equal((await fetch(`${base}/metrics?name[]=up`)).status, 200);
  const head = await fetch(`${base}/metrics`, { method: 'HEAD' });
  assert.deepEqual([head.status, await head.text()], [200, '']);

  for (const path of ['/', '/metrics/', '/healthz', '/api/openapi.json', '/metricsx', '/debug']) {
    const res = await fetch(`${base}${path}`);
    assert.deepEqual([path, res.status, await res.text()], [path, 404, 'Not Found\n']);
  }
  for (const method of ['POST', 'PUT', 'DELETE']) {
    const res = await fetch(`${base}/metrics`, { method });
    assert.deepEqual([method, res.status, res.headers.get('allow')], [method, 405, 'GET, HEAD']);
  }
});

test('issue 15 metrics: SVC_METRICS_PORT defaults to 9464 on loopback, 0 opens no listener, a bad value is refused', async () => {
  assert.deepEqual(loadConfig({}).metrics, { host: '127.0.0.1', port: 9464 });
  assert.deepEqual(loadConfig({ SVC_METRICS_PORT: '9100', SVC_METRICS_HOST: '0.0.0.0' }).metrics, {
    host: '0.0.0.0',
    port: 9100,
  });
  const off = loadConfig({ SVC_METRICS_PORT: '0' }).metrics;
  assert.deepEqual(off, { host: '127.0.0.1', port: undefined });
  const none = await listenMetrics({
    ...off,
    metrics: createMetricsRegistry(),
    logger: silent,
  });
  assert.equal(none, undefined);
  for (const bad of ['-1', '65536', '9464.5', '0x10', 'on']) {
    assert.throws(
      () => loadConfig({ SVC_METRICS_PORT: bad }),
      (error: unknown) =>
        error instanceof ConfigError && /^SVC_METRICS_PORT: expected/.test(error.message),
      bad,
    );
  }
  assert.throws(
    () => loadConfig({ SVC_METRICS_HOST: 'not a host' }),
    /^ConfigError: SVC_METRICS_HOST/,
  );
});

test('issue 15 metrics: a port already taken leaves the process running without metrics and says so in one warning', async (t) => {
  const taken: Server = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => taken.close(resolve)));
  const { port } = taken.address() as { port: number };
  const warnings: unknown[][] = [];
  const logger = { ...silent, warn: (...args: unknown[]) => warnings.push(args) };
  const listener = await listenMetrics({
    host: '127.0.0.1',
    port,
    metrics: createMetricsRegistry(),
    logger: logger as unknown as typeof silent,
  });
  assert.equal(listener, undefined);
  assert.deepEqual(warnings, [
    [
      { host: '127.0.0.1', port, code: 'EADDRINUSE' },
      'metrics listener not started: give each svc process on this machine its own SVC_METRICS_PORT, or 0 to turn it off',
    ],
  ]);
});

test('issue 15 metrics: with the database down the scrape still answers; the database gauges are left out and each failure is counted', async (t) => {
  const metrics = createMetricsRegistry();
  // The API's reads go to a port nothing listens on; its event hub (LISTEN) to the real one.
  const down = createAppDatabase({ ...db.target, port: await deadPort() }, 2);
  const dataDir = await mkdtemp(path.join(tmpdir(), 'svc-metrics-'));
  const live = await composeCore({
    config: { ...loadConfig({}), dataDir },
    logger: silent,
    target: db.target,
    db: down,
    metrics,
  });
  const api = await composeApi(live, { heartbeatMs: 1000 });
  const listener = await metricsListener(metrics);
  t.after(async () => {
    await listener.close();
    await api.close();
    await live.close();
    await down.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  for (const round of [1, 2]) {
    const scraped = await scrape(listener);
    for (const gauge of ['svc_sessions_live', 'svc_tenants', 'svc_job_queue_jobs']) {
      assert.equal(scraped.types.get(gauge), 'gauge', gauge);
      assert.deepEqual(scraped.named(gauge), [], `${gauge} has no sample`);
      assert.equal(scraped.value('svc_metrics_read_errors_total', { gauge }), round, gauge);
    }
    // What this process knows without the database is still there.
    assert.deepEqual(scraped.named('svc_sse_subscribers'), [
      { name: 'svc_sse_subscribers', labels: {}, value: 0 },
    ]);
  }
});

test('issue 15 metrics: a read slower than the timeout is left out of that scrape, which answers in time', async (t) => {
  const metrics = createMetricsRegistry({ readTimeoutMs: 100 });
  metrics.read({
    sessionsLive: () => new Promise<number>(() => undefined),
    tenantsByState: async () => ({ active: 3 }),
  });
  const listener = await metricsListener(metrics);
  t.after(() => listener.close());
  const started = performance.now();
  const scraped = await scrape(listener);
  assert.ok(performance.now() - started < 2_000);
  assert.deepEqual(scraped.named('svc_sessions_live'), []);
  assert.equal(scraped.value('svc_metrics_read_errors_total', { gauge: 'svc_sessions_live' }), 1);
  assert.equal(scraped.value('svc_tenants', { state: 'active' }), 3);
});
