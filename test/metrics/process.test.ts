import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, externalDatabaseEnv, type TestDatabase } from '../support/database.ts';
import { parseExposition, type Scrape } from './support.ts';

// Issue 15 "Metrics": the real `svc serve` and `svc worker` processes (what the system chart's
// pods run) each serve /metrics on SVC_METRICS_PORT, with the Node process metrics, and
// release the port when they stop. The API port has no /metrics.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
let db: TestDatabase;
let dataDir: string;
const signingKey = generateKeyPairSync('ed25519')
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();

before(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(path.join(tmpdir(), 'svc-metrics-process-'));
});
after(async () => {
  await db.drop();
  await rm(dataDir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function env(extra: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'info',
    ...externalDatabaseEnv(db.target),
    SVC_TOKEN_SIGNING_KEY: signingKey,
    ...extra,
  };
}

interface Svc {
  child: ChildProcess;
  /** The `msg` of every JSON log line so far. */
  messages: string[];
}

/** The node binary itself runs svc, so SIGTERM reaches it. */
function start(command: string, extra: Record<string, string>): Svc {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', command], {
    cwd: ROOT,
    env: env(extra),
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const messages: string[] = [];
  let partial = '';
  child.stdout?.on('data', (d: Buffer) => {
    const parts = (partial + d.toString('utf8')).split('\n');
    partial = parts.pop() ?? '';
    for (const part of parts) {
      try {
        messages.push(String((JSON.parse(part) as { msg?: unknown }).msg));
      } catch {
        messages.push(part);
      }
    }
  });
  return { child, messages };
}

async function logged(svc: Svc, message: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!svc.messages.includes(message)) {
    assert.equal(svc.child.exitCode, null, `exited before logging ${message}`);
    assert.ok(Date.now() < deadline, `no "${message}" within 60 s: ${svc.messages.join(' | ')}`);
    await sleep(100);
  }
}

async function scrapeWhenUp(
  port: number,
  { child }: Svc,
  ready: (scrape: Scrape) => boolean = () => true,
): Promise<Scrape> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    assert.equal(child.exitCode, null, 'the process exited before serving /metrics');
    const res = await fetch(`http://127.0.0.1:${port}/metrics`).catch(() => undefined);
    if (res?.status === 200) {
      const scrape = parseExposition(await res.text());
      if (ready(scrape)) return scrape;
    }
    assert.ok(Date.now() < deadline, 'no /metrics (as awaited) within 60 s');
    await sleep(250);
  }
}

/**
 * SIGTERM and its exit code; at once when the process is gone already (a signal kill leaves
 * `exitCode` null, and waiting for its exit again would hang the test).
 */
async function stop({ child }: Svc): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const [code] = (await exited) as [number | null];
  return code;
}

test('issue 15 metrics: `svc serve` serves /metrics on SVC_METRICS_PORT (its requests, install gauges, process metrics), not on the API port', {
  timeout: 120_000,
}, async (t) => {
  const [apiPort, metricsPort] = [await freePort(), await freePort()];
  const child = start('serve', {
    SVC_PORT: String(apiPort),
    SVC_METRICS_PORT: String(metricsPort),
    SVC_WORKER: 'off',
  });
  t.after(() => stop(child));
  // The install gauges are read from the database after the listener opens: awaited, not
  // assumed on the first scrape.
  const first = await scrapeWhenUp(
    metricsPort,
    child,
    (s) => s.named('svc_tenants').length > 0 && s.named('svc_sessions_live').length > 0,
  );
  assert.equal(first.types.get('svc_process_cpu_user_seconds_total'), 'counter');
  assert.equal(first.types.get('svc_nodejs_eventloop_lag_seconds'), 'gauge');
  assert.equal(first.named('svc_tenants').length, 6);
  assert.equal(first.named('svc_sessions_live').length, 1);

  // The metrics listener may open before the API's: ask the API once it says it listens.
  await logged(child, 'svc listening');
  assert.equal((await fetch(`http://127.0.0.1:${apiPort}/healthz`)).status, 200);
  assert.equal((await fetch(`http://127.0.0.1:${apiPort}/metrics`)).status, 404);
  const second = await scrapeWhenUp(metricsPort, child);
  const healthz = { route: '/healthz', method: 'GET', status: '200' };
  assert.equal(
    second.value('svc_http_requests_total', healthz) -
      first.value('svc_http_requests_total', healthz),
    1,
  );
  assert.equal(await stop(child), 0);
  // Closed with the process: the port is free again.
  const reuse = createServer();
  await new Promise<void>((resolve) => reuse.listen(metricsPort, '127.0.0.1', resolve));
  await new Promise((resolve) => reuse.close(resolve));
});

test('issue 15 metrics: `svc worker` serves /metrics with the job metrics; SVC_METRICS_PORT=0 opens no listener', {
  timeout: 120_000,
}, async (t) => {
  const metricsPort = await freePort();
  const worker = start('worker', { SVC_METRICS_PORT: String(metricsPort) });
  t.after(() => stop(worker));
  const scraped = await scrapeWhenUp(metricsPort, worker);
  assert.equal(scraped.types.get('svc_job_duration_seconds'), 'histogram');
  assert.equal(scraped.types.get('svc_jobs_failed_total'), 'counter');
  assert.equal(scraped.types.get('svc_process_resident_memory_bytes'), 'gauge');
  assert.ok(worker.messages.includes('metrics listening'));
  assert.equal(await stop(worker), 0);

  // With 0 the worker runs (takes jobs) and never opens the listener.
  const quiet = start('worker', { SVC_METRICS_PORT: '0' });
  t.after(() => stop(quiet));
  await logged(quiet, 'worker running');
  assert.equal(await stop(quiet), 0);
  assert.equal(quiet.messages.includes('metrics listening'), false, quiet.messages.join(' | '));
  assert.equal(
    quiet.messages.some((m) => m.startsWith('metrics listener not started')),
    false,
  );
});

test('`svc serve` stopped by SIGTERM the moment /metrics answers shuts down cleanly: exit 0, both ports free', {
  timeout: 120_000,
}, async (t) => {
  const [apiPort, metricsPort] = [await freePort(), await freePort()];
  const svc = start('serve', {
    SVC_PORT: String(apiPort),
    SVC_METRICS_PORT: String(metricsPort),
    SVC_WORKER: 'off',
  });
  t.after(() => stop(svc));
  // Polled tightly, so the signal can land while the rest of the app is still being built (a
  // window of a few ms here: not every run hits it; the output says which one did).
  const deadline = Date.now() + 60_000;
  for (;;) {
    assert.equal(svc.child.exitCode, null, 'the process exited before serving /metrics');
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).catch(() => undefined);
    if (res?.status === 200) break;
    assert.ok(Date.now() < deadline, 'no /metrics within 60 s');
    await sleep(5);
  }
  assert.equal(await stop(svc), 0, svc.messages.join(' | '));
  assert.ok(svc.messages.includes('shutting down'), svc.messages.join(' | '));
  for (const port of [apiPort, metricsPort]) {
    const reuse = createServer();
    await new Promise<void>((resolve) => reuse.listen(port, '127.0.0.1', resolve));
    await new Promise((resolve) => reuse.close(resolve));
  }
  const order = ['shutting down', 'svc listening'].map((m) => svc.messages.indexOf(m));
  console.log(
    order[1] === -1 || (order[0] ?? 0) < (order[1] ?? 0)
      ? 'the signal came before the API listened'
      : 'the signal came after the API listened',
  );
});
