/**
 * What bench:provision watches while it runs: the API's answer time to an authenticated list,
 * PostgreSQL's connections, and a process's resident memory. Each sampler tags its samples with
 * the phase the bench says it is in, so one run reports each phase on its own.
 */
import { readdir, readFile, readlink } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { percentile } from '../harness.ts';

export interface Phased {
  /** Samples from now on belong to `phase`. */
  phase(name: string): void;
  stop(): Promise<void>;
}

/**
 * The MSSP's tenant list (`GET /api/mssp/tenants?limit=50`, the console's first page) asked
 * one request at a time with a pause between, as an operator's console would, for as long as
 * the bench runs. Latency of every answer, by phase; a non-200 counts as an error.
 */
export interface ListProbe extends Phased {
  report(): { phase: string; n: number; p50: number; p99: number; max: number; errors: number }[];
}

export function probeTenantList(list: () => Promise<{ status: number }>, pauseMs = 250): ListProbe {
  const samples = new Map<string, { ms: number[]; errors: number }>();
  let current = 'setup';
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const start = performance.now();
      const phase = current;
      const bucket = samples.get(phase) ?? { ms: [], errors: 0 };
      samples.set(phase, bucket);
      try {
        const res = await list();
        if (res.status === 200) bucket.ms.push(performance.now() - start);
        else bucket.errors++;
      } catch {
        bucket.errors++;
      }
      await sleep(pauseMs);
    }
  })();
  return {
    phase: (name) => {
      current = name;
    },
    stop: async () => {
      stopped = true;
      await loop;
    },
    report: () =>
      [...samples].map(([phase, { ms, errors }]) => ({
        phase,
        n: ms.length,
        p50: ms.length ? percentile(ms, 50) : Number.NaN,
        p99: ms.length ? percentile(ms, 99) : Number.NaN,
        max: ms.length ? Math.max(...ms) : Number.NaN,
        errors,
      })),
  };
}

/**
 * PostgreSQL backends of the bench's database by role and application_name, once a second
 * (read as the superuser, who sees every row of pg_stat_activity); per phase the sample with
 * the most backends, with its breakdown.
 */
export interface ConnectionSampler extends Phased {
  report(): { phase: string; peak: number; at: Record<string, number> }[];
}

export function sampleConnections(superuser: pg.Pool, database: string): ConnectionSampler {
  const peaks = new Map<string, { peak: number; at: Record<string, number> }>();
  let current = 'setup';
  let stopped = false;
  const sampleOnce = async () => {
    const phase = current;
    const { rows } = await superuser.query<{ who: string; n: number }>(
      `SELECT usename || ' ' || coalesce(nullif(application_name, ''), '(none)') AS who,
              count(*)::int AS n
         FROM pg_stat_activity
        WHERE datname = $1 AND pid <> pg_backend_pid()
        GROUP BY 1`,
      [database],
    );
    const total = rows.reduce((sum, r) => sum + r.n, 0);
    const best = peaks.get(phase);
    if (!best || total > best.peak)
      peaks.set(phase, { peak: total, at: Object.fromEntries(rows.map((r) => [r.who, r.n])) });
  };
  const loop = (async () => {
    while (!stopped) {
      await sampleOnce().catch(() => undefined);
      await sleep(1_000);
    }
  })();
  return {
    phase: (name) => {
      current = name;
      void sampleOnce().catch(() => undefined);
    },
    stop: async () => {
      stopped = true;
      await loop;
    },
    report: () => [...peaks].map(([phase, p]) => ({ phase, ...p })),
  };
}

/** A process's resident set now and at its peak (VmRSS, VmHWM), in bytes. */
export async function processMemory(
  pid: number,
): Promise<{ rss: number; peak: number } | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  if (!status) return undefined;
  const kib = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return { rss: kib('VmRSS') * 1024, peak: kib('VmHWM') * 1024 };
}

/** The highest VmRSS seen, sampled every 500 ms until stopped. */
export function sampleRss(pid: number): { stop(): Promise<number> } {
  let peak = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const m = await processMemory(pid);
      if (m) peak = Math.max(peak, m.rss);
      await sleep(500);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return peak;
    },
  };
}

export const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

/**
 * The TCP connections one process holds open to each of `ports` (its socket inodes in
 * /proc/<pid>/fd matched with /proc/net/tcp{,6}), at their highest, sampled every 250 ms: what
 * that process alone costs PostgreSQL (or the pooler), from outside.
 */
export function sampleSockets(
  pid: number,
  ports: Record<string, number>,
): { stop(): Promise<Record<string, number>> } {
  const peak: Record<string, number> = Object.fromEntries(Object.keys(ports).map((k) => [k, 0]));
  let stopped = false;
  const once = async () => {
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
    const inodes = new Set<string>();
    for (const fd of fds) {
      const link = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
      if (inode) inodes.add(inode);
    }
    const now: Record<string, number> = {};
    for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
      const text = await readFile(table, 'utf8').catch(() => '');
      for (const line of text.split('\n').slice(1)) {
        const f = line.trim().split(/\s+/);
        // remote address is field 2 (hex ip:port), state field 3 (01 = ESTABLISHED), inode 9.
        if (f.length < 10 || f[3] !== '01' || !inodes.has(f[9] ?? '')) continue;
        const port = Number.parseInt(f[2]?.split(':')[1] ?? '', 16);
        for (const [name, p] of Object.entries(ports))
          if (p === port) now[name] = (now[name] ?? 0) + 1;
      }
    }
    for (const name of Object.keys(ports)) peak[name] = Math.max(peak[name] ?? 0, now[name] ?? 0);
  };
  const loop = (async () => {
    while (!stopped) {
      await once().catch(() => undefined);
      await sleep(250);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return peak;
    },
  };
}
