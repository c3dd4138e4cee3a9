import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { ScratchDatabase } from '../../src/db/scratch.ts';
import { EVENT_HUB_DEFAULTS } from '../../src/domains/events/index.ts';
import { percentile } from '../harness.ts';
import type { Child } from './child.ts';
import { forkChild } from './child.ts';
import { mib, ms, seconds, verdict } from './report.ts';
import type { Tenant } from './seed.ts';
import { openWorkerDatabase, POOL_SIZE } from './servers.ts';
import type { Delivery } from './sse-client.ts';
import { type AppendResult, analyse, appendTicks } from './sse-deliveries.ts';
import {
  type MemorySample,
  machineTicks,
  mintSessions,
  planStreams,
  type Replica,
  type ServerSample,
  startReplicas,
} from './sse-fleet.ts';

/** The appender stands in for a worker process with a small pool of its own (default size). */
export const APPENDER_POOL_SIZE = 4;
const DRAIN_TIMEOUT_MS = 15_000;
/** Server CPU with every stream open and nothing appended, to tell the fan-out's own cost. */
const IDLE_WINDOW_MS = 5_000;

export const GOALS = {
  deliveryP50Ms: 250,
  deliveryP99Ms: 250,
  /** Per svc serve process. */
  serverRssBytes: 1024 ** 3,
};

export interface SsePhase {
  scratch: ScratchDatabase;
  tenants: Tenant[];
  subscribers: number;
  /** How long each tenant gets one event per second. */
  seconds: number;
  /** svc serve processes on the one database, the streams spread over them. */
  replicas: number;
  /** Processes the SSE clients are spread over. */
  clientProcesses: number;
  /** Connections of the appender's pool (--appender-connections). */
  appenderConnections: number;
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

function printConnections(rows: ConnectionCount[], appRole: string, phase: SsePhase): boolean {
  const app = rows.filter((row) => row.usename === appRole);
  const total = app.reduce((sum, row) => sum + row.n, 0);
  console.log(`  database backends with ${phase.subscribers} streams open:`);
  for (const row of rows) console.log(`    ${row.usename} ${row.application_name}: ${row.n}`);
  // Per replica its pool, the hub's read pool and its one LISTEN connection, plus the
  // appender's pool: none per stream.
  const perReplica = POOL_SIZE + EVENT_HUB_DEFAULTS.readConnections + 1;
  const bound = phase.replicas * perReplica + phase.appenderConnections;
  const pass = total <= bound;
  console.log(
    `  svc_app backends ${total} <= ${bound} (pools + hub reads + LISTEN) -> ${verdict(pass)}`,
  );
  return pass;
}

interface ClientShare {
  child: Child;
  streams: number;
}

/** A client process's answer (bench/api/sse-client-process.ts): deliveries as tuples. */
interface Drained {
  drained: boolean;
  cpuUs: number;
  clients: {
    tenant: number;
    tenantId: string;
    deliveries: [string, string | undefined, number][];
  }[];
}

function deliveriesOf(drained: Drained[]) {
  return drained.flatMap((d) =>
    d.clients.map((client) => ({
      ...client,
      deliveries: client.deliveries.map(
        ([id, payloadTenant, at]): Delivery => ({ id, payloadTenant, at }),
      ),
    })),
  );
}

/** Forks the client processes and opens every stream; returns them once all are connected. */
async function connect(phase: SsePhase, replicas: Replica[], cookies: string[]) {
  const shares = planStreams(replicas, phase.tenants, cookies, phase.clientProcesses);
  const memoryBefore = await Promise.all(replicas.map((r) => r.memory()));
  const started = performance.now();
  const clients: ClientShare[] = await Promise.all(
    shares.map(async (plans, i) => {
      const child = forkChild('./sse-client-process.ts', `client process ${i + 1}`);
      await child.ask({ type: 'connect', plans }, 'connected');
      return { child, streams: plans.length };
    }),
  );
  const samples = await Promise.all(replicas.map((r) => r.sample()));
  const open = samples.reduce((sum, s) => sum + s.hub.subscribers, 0);
  console.log(
    `  connected ${open} streams in ${seconds(performance.now() - started)} from` +
      ` ${clients.length} client processes; per replica: ${samples
        .map((s) => `${s.hub.subscribers} streams, ${s.hub.tenants} tenants, ${mib(s.rss)}`)
        .join('; ')}`,
  );
  if (open !== phase.subscribers) throw new Error(`the hubs hold ${open} subscribers`);
  const memoryAfter = await Promise.all(replicas.map((r) => r.memory()));
  const kib = (of: (m: MemorySample) => number) =>
    (
      memoryAfter.reduce((sum, m, i) => sum + of(m) - of(memoryBefore[i] ?? m), 0) /
      1024 /
      Math.max(1, open)
    ).toFixed(1);
  console.log(
    `  per open stream (after a full GC, all replicas): RSS ${kib((m) => m.rss)} KiB,` +
      ` of which JS heap ${kib((m) => m.heapUsed)} KiB and buffers ${kib((m) => m.external)} KiB`,
  );
  return clients;
}

/** One full credential-watch pass on each replica, timed (sessions + a scope per tenant). */
async function timeWatchPasses(replicas: Replica[]): Promise<void> {
  for (const [i, replica] of replicas.entries()) {
    const pass = await replica.child.ask<{ ms: number; cpuMs: number; leases: number }>(
      { type: 'recheck' },
      'rechecked',
    );
    console.log(
      `  replica ${i + 1}: one credential-watch pass over ${pass.leases} leases took ${ms(pass.ms)}` +
        ` (${ms(pass.cpuMs)} of the replica's CPU meanwhile)`,
    );
  }
}

/** Math.max over arrays too long to spread (200,000 deliveries). */
const maxOf = (values: readonly number[]) => values.reduce((max, v) => Math.max(max, v), -Infinity);

const cpuOf = (samples: ServerSample[]) => samples.reduce((sum, s) => sum + s.cpuUs, 0);

/** Many subscribers on GET /api/tenant/events while a worker appends one event/s per tenant. */
export async function ssePhase(phase: SsePhase): Promise<boolean> {
  const { scratch, tenants, subscribers } = phase;
  console.log(
    `\n[sse] ${subscribers} subscribers on GET /api/tenant/events over ${tenants.length} tenants,` +
      ` ${phase.replicas} svc serve replica(s), clients in ${phase.clientProcesses} processes,` +
      ` 1 event/s per tenant for ${phase.seconds} s (appendEvent in withTenant)`,
  );
  const appender = await openWorkerDatabase(scratch.target, phase.appenderConnections);
  const replicas: Replica[] = [];
  let clients: ClientShare[] = [];
  try {
    replicas.push(...(await startReplicas(scratch, phase.replicas)));
    const minting = performance.now();
    const cookies = await mintSessions(scratch, appender.db, tenants, subscribers);
    console.log(
      `  minted ${cookies.length} sessions in ${seconds(performance.now() - minting)} (createSession)`,
    );
    clients = await connect(phase, replicas, cookies);
    await timeWatchPasses(replicas);
    const idleFrom = await Promise.all(replicas.map((r) => r.sample()));
    await sleep(IDLE_WINDOW_MS);
    const idleTo = await Promise.all(replicas.map((r) => r.sample()));
    const idleUsPerSecond = ((cpuOf(idleTo) - cpuOf(idleFrom)) * 1000) / IDLE_WINDOW_MS;

    const ticksFrom = await machineTicks();
    const from = await Promise.all(replicas.map((r) => r.sample()));
    const started = performance.now();
    const [appended, connections] = await Promise.all([
      appendTicks(appender.db, tenants, phase.seconds),
      sleep(phase.seconds * 500).then(() => databaseConnections(scratch)),
    ]);
    const drained = await Promise.all(
      clients.map(({ child }) =>
        child.ask<Drained>(
          { type: 'drain', perTenant: appended.perTenant, timeoutMs: DRAIN_TIMEOUT_MS },
          'deliveries',
        ),
      ),
    );
    const to = await Promise.all(replicas.map((r) => r.sample()));
    const windowMs = performance.now() - started;
    const total = appended.perTenant.reduce((sum, n) => sum + n, 0);
    console.log(
      `  window ${seconds(windowMs)} (appends, then the drain): ${(total / (windowMs / 1000)).toFixed(0)}` +
        ` events/s appended (nominal ${tenants.length}/s), ${((total * subscribers) / tenants.length / (windowMs / 1000)).toFixed(0)} deliveries/s`,
    );
    const ticksTo = await machineTicks();
    const pooled = printConnections(connections, scratch.target.credentials.app.user, phase);
    const delivered = report(appended, drained, { from, to, idleUsPerSecond, windowMs });
    const busy = (ticksTo.busy - ticksFrom.busy) / Math.max(1, ticksTo.total - ticksFrom.total);
    const clientCpu = drained.reduce((sum, d) => sum + d.cpuUs, 0);
    console.log(
      `  machine: ${(100 * busy).toFixed(0)}% of all cores busy during the window; load average` +
        ` ${loadavg()
          .map((n) => n.toFixed(2))
          .join(' ')}; client processes used ${seconds(clientCpu / 1000)} CPU in all`,
    );
    return pooled && delivered;
  } finally {
    await Promise.all(clients.map(({ child }) => child.stop()));
    await waitForHubsToEmpty(replicas);
    await Promise.all(replicas.map((r) => r.child.stop()));
    await appender.close();
  }
}

interface CpuWindow {
  from: ServerSample[];
  to: ServerSample[];
  idleUsPerSecond: number;
  windowMs: number;
}

function report(appended: AppendResult, drained: Drained[], cpu: CpuWindow): boolean {
  const clients = deliveriesOf(drained);
  const stats = analyse(clients, appended);
  const total = appended.perTenant.reduce((sum, n) => sum + n, 0);
  const expected = clients.reduce((sum, c) => sum + (appended.perTenant[c.tenant] ?? 0), 0);
  console.log(
    `  appended ${total} events; append txn p50 ${ms(percentile(appended.latencies, 50))},` +
      ` p99 ${ms(percentile(appended.latencies, 99))}; start lag behind schedule` +
      ` p99 ${ms(percentile(appended.lags, 99))}, max ${ms(maxOf(appended.lags))}`,
  );
  console.log(
    `  deliveries ${stats.latencies.length} of ${expected} expected` +
      ` (every client process drained: ${drained.every((d) => d.drained)}); per subscriber` +
      ` min ${-maxOf(stats.perSubscriber.map((n) => -n))}, median ${percentile(stats.perSubscriber, 50)},` +
      ` max ${maxOf(stats.perSubscriber)}; missing ${stats.missing},` +
      ` duplicates ${stats.duplicates}, unknown ids ${stats.unknown}`,
  );
  const p50 = percentile(stats.latencies, 50);
  const p99 = percentile(stats.latencies, 99);
  const fast = p50 < GOALS.deliveryP50Ms && p99 < GOALS.deliveryP99Ms;
  console.log(
    `  delivery latency (commit -> receipt) p50 ${ms(p50)}, p99 ${ms(p99)}` +
      ` (goal < ${GOALS.deliveryP99Ms} ms), max ${ms(maxOf(stats.latencies))} -> ${verdict(fast)}`,
  );
  const isolated = stats.foreign === 0 && stats.unknown === 0;
  console.log(`  cross-tenant deliveries: ${stats.foreign} (goal 0) -> ${verdict(isolated)}`);
  const complete = stats.missing === 0 && stats.duplicates === 0;
  console.log(`  every subscriber got every event of its tenant once -> ${verdict(complete)}`);
  const lean = reportServers(cpu, stats.latencies.length);
  return isolated && complete && fast && lean;
}

/** Memory per replica against its goal, and what one delivery costs the replicas in CPU. */
function reportServers(cpu: CpuWindow, deliveries: number): boolean {
  const peaks = cpu.to.map((s) => s.peakRss);
  const lean = peaks.every((peak) => peak < GOALS.serverRssBytes);
  console.log(
    `  svc serve RSS peak per replica: ${peaks.map(mib).join(', ')}` +
      ` (goal < ${mib(GOALS.serverRssBytes)} each) -> ${verdict(lean)}`,
  );
  const used = cpuOf(cpu.to) - cpuOf(cpu.from);
  const idle = (cpu.idleUsPerSecond * cpu.windowMs) / 1000;
  const perDelivery = used / Math.max(1, deliveries);
  const net = (used - idle) / Math.max(1, deliveries);
  const offered = cpu.to.reduce(
    (s, x, i) => s + x.hub.offered - (cpu.from[i]?.hub.offered ?? 0),
    0,
  );
  const delta = (of: (s: ServerSample) => number) =>
    cpu.to.reduce((sum, x, i) => sum + of(x) - (cpu.from[i] ? of(cpu.from[i]) : 0), 0);
  const barriers = delta((s) => s.hub.barriers);
  const batches = delta((s) => s.hub.batches);
  const batchedTenants = delta((s) => s.hub.batchedTenants);
  console.log(
    `  svc CPU: ${seconds(used / 1000)} over ${seconds(cpu.windowMs)} (idle with every stream` +
      ` open: ${(cpu.idleUsPerSecond / 1000).toFixed(0)} ms/s); per delivered event per subscriber` +
      ` ${perDelivery.toFixed(1)} µs (${net.toFixed(1)} µs net of idle); hub offered ${offered},` +
      ` LISTEN barriers ${barriers}, batched reads ${batches} over ${batchedTenants} tenant reads` +
      ` (${(batchedTenants / Math.max(1, batches)).toFixed(1)} per read); event loop p99 ${cpu.to.map((s) => ms(s.loopP99Ms)).join(', ')}`,
  );
  return lean;
}

/** Closing the streams must release every subscription; a leak would show as a count here. */
async function waitForHubsToEmpty(replicas: Replica[]): Promise<void> {
  const left = async () =>
    (await Promise.all(replicas.map((r) => r.sample().catch(() => undefined)))).reduce(
      (sum, s) => sum + (s?.hub.subscribers ?? 0),
      0,
    );
  let remaining = await left();
  for (let attempt = 0; attempt < 100 && remaining > 0; attempt++) {
    await sleep(100);
    remaining = await left();
  }
  console.log(
    `  after disconnect: ${remaining} subscribers left in the hubs -> ${verdict(remaining === 0)}`,
  );
}
