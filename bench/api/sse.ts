import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { ScratchDatabase } from '../../src/db/scratch.ts';
import type { EventHub } from '../../src/domains/events/index.ts';
import { percentile, readKernelPeak, resetKernelPeak } from '../harness.ts';
import { mib, ms, seconds, verdict } from './report.ts';
import type { Tenant } from './seed.ts';
import { openWorkerDatabase, POOL_SIZE, type Server } from './servers.ts';
import { connectAll, type SseClient } from './sse-client.ts';
import { type AppendResult, analyse, appendTicks, drain } from './sse-deliveries.ts';

/** The appender stands in for a worker process with a small pool of its own. */
const APPENDER_POOL_SIZE = 4;
const RSS_SAMPLE_MS = 100;

export interface SsePhase {
  scratch: ScratchDatabase;
  app: Server & { events: EventHub };
  tenants: Tenant[];
  cookies: string[];
  subscribers: number;
  /** How long each tenant gets one event per second. */
  seconds: number;
}

interface ConnectionCount {
  usename: string;
  application_name: string;
  n: number;
}

/** Every backend on the database, by role and pool, as the superuser sees them. */
async function databaseConnections(scratch: ScratchDatabase): Promise<ConnectionCount[]> {
  const client = new pg.Client({ ...scratch.superuser, database: 'postgres' });
  await client.connect();
  try {
    const { rows } = await client.query<ConnectionCount>(
      `SELECT usename, application_name, count(*)::int AS n FROM pg_stat_activity
        WHERE datname = $1 AND backend_type = 'client backend'
        GROUP BY 1, 2 ORDER BY 1, 2`,
      [scratch.target.database],
    );
    return rows;
  } finally {
    await client.end();
  }
}

function printConnections(rows: ConnectionCount[], appRole: string, subscribers: number): boolean {
  const app = rows.filter((row) => row.usename === appRole);
  const total = app.reduce((sum, row) => sum + row.n, 0);
  console.log(`  database backends with ${subscribers} streams open:`);
  for (const row of rows) console.log(`    ${row.usename} ${row.application_name}: ${row.n}`);
  // Server pool + its one LISTEN connection + the appender's pool: none of it per stream.
  const bound = POOL_SIZE + 1 + APPENDER_POOL_SIZE;
  const pass = total <= bound;
  console.log(`  svc_app backends ${total} <= ${bound} (pools + LISTEN) -> ${verdict(pass)}`);
  return pass;
}

function sampleRss(): { peak(): number; stop(): void } {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, RSS_SAMPLE_MS);
  return { peak: () => peak, stop: () => clearInterval(timer) };
}

/** Opens every stream and checks the hub holds exactly that many; returns RSS once connected. */
async function connect(phase: SsePhase, agent: http.Agent, clients: SseClient[], before: number) {
  const { app, cookies, tenants, subscribers } = phase;
  const started = performance.now();
  await connectAll(agent, app.url, cookies, tenants, subscribers, clients);
  const status = app.events.status();
  const connected = process.memoryUsage.rss();
  const perStream = (connected - before) / Math.max(1, subscribers) / 1024;
  console.log(
    `  connected in ${seconds(performance.now() - started)}; hub: ${status.subscribers}` +
      ` subscribers, ${status.tenants} tenants; RSS ${mib(before)} before ->` +
      ` ${mib(connected)} (${perStream.toFixed(0)} KiB per stream, both ends)`,
  );
  if (status.subscribers !== subscribers)
    throw new Error(`hub has ${status.subscribers} subscribers`);
  return connected;
}

/** Many subscribers on GET /api/tenant/events while a worker appends one event/s per tenant. */
export async function ssePhase(phase: SsePhase): Promise<boolean> {
  const { scratch, tenants, subscribers } = phase;
  console.log(
    `\n[sse] ${subscribers} subscribers on GET /api/tenant/events over ${tenants.length} tenants,` +
      ` 1 event/s per tenant for ${phase.seconds} s (appendEvent in withTenant)`,
  );
  const agent = new http.Agent({ keepAlive: false, maxSockets: subscribers + 1 });
  const appender = await openWorkerDatabase(scratch.target, APPENDER_POOL_SIZE);
  const clients: SseClient[] = [];
  const before = process.memoryUsage.rss();
  const kernelReset = await resetKernelPeak();
  const rss = sampleRss();
  try {
    const connected = await connect(phase, agent, clients, before);
    const [appended, connections] = await Promise.all([
      appendTicks(appender.db, tenants, phase.seconds),
      sleep(phase.seconds * 500).then(() => databaseConnections(scratch)),
    ]);
    const drained = await drain(clients, appended.perTenant);
    rss.stop();
    const kernelPeak = kernelReset ? await readKernelPeak() : undefined;
    const pooled = printConnections(connections, scratch.target.credentials.app.user, subscribers);
    const peak = Math.max(rss.peak(), kernelPeak ?? 0);
    const delivered = reportSse(clients, appended, drained, { before, connected, peak });
    return pooled && delivered;
  } finally {
    rss.stop();
    for (const client of clients) client.request.destroy();
    agent.destroy();
    await appender.close();
    await waitForHubToEmpty(phase.app.events);
  }
}

function reportSse(
  clients: SseClient[],
  appended: AppendResult,
  drainedMs: number,
  rss: { before: number; connected: number; peak: number },
): boolean {
  const stats = analyse(clients, appended);
  const total = appended.perTenant.reduce((sum, n) => sum + n, 0);
  const expected = clients.reduce((sum, c) => sum + (appended.perTenant[c.tenant] ?? 0), 0);
  console.log(
    `  appended ${total} events; append txn p50 ${ms(percentile(appended.latencies, 50))},` +
      ` p99 ${ms(percentile(appended.latencies, 99))}; start lag behind schedule` +
      ` p99 ${ms(percentile(appended.lags, 99))}, max ${ms(Math.max(...appended.lags))}`,
  );
  console.log(
    `  deliveries ${stats.latencies.length} of ${expected} expected` +
      ` (drained ${seconds(drainedMs)} after the last append); per subscriber` +
      ` min ${Math.min(...stats.perSubscriber)}, median ${percentile(stats.perSubscriber, 50)},` +
      ` max ${Math.max(...stats.perSubscriber)}; missing ${stats.missing},` +
      ` duplicates ${stats.duplicates}, unknown ids ${stats.unknown}`,
  );
  console.log(
    `  delivery latency (commit -> receipt) p50 ${ms(percentile(stats.latencies, 50))},` +
      ` p99 ${ms(percentile(stats.latencies, 99))}, max ${ms(Math.max(...stats.latencies))}`,
  );
  const isolated = stats.foreign === 0 && stats.unknown === 0;
  console.log(`  cross-tenant deliveries: ${stats.foreign} -> ${verdict(isolated)}`);
  const complete = stats.missing === 0 && stats.duplicates === 0;
  console.log(`  every subscriber got every event of its tenant once -> ${verdict(complete)}`);
  console.log(
    `  RSS (app + ${clients.length} client sockets): ${mib(rss.before)} before,` +
      ` ${mib(rss.connected)} connected, peak ${mib(rss.peak)}`,
  );
  return isolated && complete;
}

/** Closing the streams must release every subscription; a leak would show as a count here. */
async function waitForHubToEmpty(hub: EventHub): Promise<void> {
  for (let attempt = 0; attempt < 100 && hub.status().subscribers > 0; attempt++) await sleep(50);
  const left = hub.status().subscribers;
  console.log(`  after disconnect: ${left} subscribers left in the hub -> ${verdict(left === 0)}`);
}
