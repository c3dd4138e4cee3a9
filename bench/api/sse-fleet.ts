import { readFile } from 'node:fs/promises';
import pg from 'pg';
import type { AppDatabase } from '../../src/db/pools.ts';
import type { ScratchDatabase } from '../../src/db/scratch.ts';
import type { EventHubStatus } from '../../src/domains/events/index.ts';
import { createSession, SESSION_COOKIE } from '../../src/domains/sessions/session-repository.ts';
import { type Child, forkChild } from './child.ts';
import type { Tenant } from './seed.ts';
import type { StreamPlan } from './sse-client.ts';

/** What one replica says of itself (bench/api/sse-server.ts 'sample'). */
export interface ServerSample {
  rss: number;
  peakRss: number;
  cpuUs: number;
  loopP99Ms: number;
  loopMaxMs: number;
  hub: EventHubStatus;
  watch: { watched: number; passes: number };
}

/** A replica's memory right after a full garbage collection (bench/api/sse-server.ts 'memory'). */
export interface MemorySample {
  rss: number;
  heapUsed: number;
  external: number;
}

export interface Replica {
  url: string;
  child: Child;
  sample(): Promise<ServerSample>;
  memory(): Promise<MemorySample>;
}

/** `count` svc serve replicas on the one database, each in its own process. */
export async function startReplicas(scratch: ScratchDatabase, count: number): Promise<Replica[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const child = forkChild('./sse-server.ts', `replica ${i + 1}`);
      const { url } = await child.ask<{ url: string }>(
        { type: 'start', target: scratch.target },
        'listening',
      );
      return {
        url,
        child,
        sample: () => child.ask<ServerSample>({ type: 'sample' }, 'sample'),
        memory: () => child.ask<MemorySample>({ type: 'memory' }, 'memory'),
      };
    }),
  );
}

/**
 * One session per subscriber, minted the way sign-in mints it (createSession, the repository
 * sign-in uses) for the tenant's viewer, in one transaction: no password hash per subscriber,
 * and the credential watch then has as many sessions to re-check as a real fleet of viewers.
 */
export async function mintSessions(
  scratch: ScratchDatabase,
  db: AppDatabase,
  tenants: readonly Tenant[],
  subscribers: number,
): Promise<string[]> {
  const client = new pg.Client({ ...scratch.superuser, database: scratch.target.database });
  await client.connect();
  let users: Map<string, string>;
  try {
    const { rows } = await client.query<{ email: string; id: string }>(
      'SELECT email, id FROM users WHERE email = ANY($1)',
      [tenants.map((t) => t.email)],
    );
    users = new Map(rows.map((row) => [row.email, row.id]));
  } finally {
    await client.end();
  }
  const now = new Date();
  return db.withoutTenant(async (tx) => {
    const cookies: string[] = [];
    for (let i = 0; i < subscribers; i++) {
      const tenant = tenants[i % tenants.length];
      const userId = tenant && users.get(tenant.email);
      if (!tenant || !userId) throw new Error(`no viewer for subscriber ${i}`);
      const { secret } = await createSession(tx, {
        userId,
        tenantContext: tenant.id,
        ip: '127.0.0.1',
        userAgent: 'svc api bench',
        now,
      });
      cookies.push(`${SESSION_COOKIE}=${secret}`);
    }
    return cookies;
  });
}

/**
 * Stream i reads tenant i mod T on replica (i div T) mod R, from client process i mod P: a
 * tenant's k-th viewer goes to replica k mod R, so with at least R viewers per tenant every
 * replica reads every tenant (the case tenant-affine routing would avoid), and the replicas
 * hold equal shares.
 */
export function planStreams(
  replicas: readonly Replica[],
  tenants: readonly Tenant[],
  cookies: readonly string[],
  processes: number,
): StreamPlan[][] {
  const shares: StreamPlan[][] = Array.from({ length: processes }, () => []);
  cookies.forEach((cookie, i) => {
    const tenant = i % tenants.length;
    const tenantId = tenants[tenant]?.id;
    const url = replicas[Math.floor(i / tenants.length) % replicas.length]?.url;
    if (!tenantId || !url) throw new Error('no tenant or replica');
    shares[i % processes]?.push({ url, cookie, tenant, tenantId });
  });
  return shares;
}

/** Busy and total jiffies of the whole machine (every core), from /proc/stat. */
export async function machineTicks(): Promise<{ busy: number; total: number }> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((sum, n) => sum + n, 0);
  // idle + iowait
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: total - idle, total };
}
