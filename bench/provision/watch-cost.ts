/**
 * The credential watch's pass (src/domains/sessions/credential-watch.ts, docs/auth.md "Open
 * event streams end with their credential") at this tenant count, timed from outside: the real
 * watch, given one customer's credential per tenant (as if each tenant had one viewer with an
 * open event stream), on the bench's database. Only its public surface is used: a pass starts
 * on the watch's interval timer and ends when `status().passes` counts it. A timer of the same
 * period, armed right after the watch's own, fires right after it on each tick (Node runs
 * timers of one duration in the order they were armed), which marks the pass's start.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Role } from '../../src/auth/identity.ts';
import type { AppDatabase } from '../../src/db/pools.ts';
import { createCredentialWatch } from '../../src/domains/sessions/credential-watch.ts';
import { percentile } from '../harness.ts';

export interface WatchCost {
  credentials: number;
  tenants: number;
  recheckMs: number;
  passes: { ms: number; cpuMs: number }[];
}

export async function measureWatchPass(
  db: AppDatabase,
  customers: { userId: string; tenantId: string | null; role?: Role }[],
  o: { passes: number; recheckMs: number },
): Promise<WatchCost> {
  const watch = createCredentialWatch({ db, now: () => new Date(), recheckMs: o.recheckMs });
  const expiresAt = new Date(Date.now() + 3_600_000);
  const ticks: { at: number; cpu: NodeJS.CpuUsage }[] = [];
  let tick: NodeJS.Timeout | undefined;
  const leases = customers.map((c, i) => {
    const lease = watch.watch({
      kind: 'token',
      userId: c.userId,
      role: c.role ?? 'customer_viewer',
      userTenant: c.tenantId,
      expiresAt,
    });
    // The first watch() armed the watch's interval: arm ours right behind it.
    if (i === 0)
      tick = setInterval(
        () => ticks.push({ at: performance.now(), cpu: process.cpuUsage() }),
        o.recheckMs,
      );
    return lease;
  });
  const passes: { ms: number; cpuMs: number }[] = [];
  try {
    await watch.settled();
    const deadline = Date.now() + (o.passes + 2) * (o.recheckMs + 60_000);
    for (let seen = watch.status().passes; passes.length < o.passes; ) {
      if (Date.now() > deadline) throw new Error('credential watch passes did not come');
      await sleep(1);
      const now = watch.status().passes;
      if (now === seen) continue;
      seen = now;
      const start = ticks.at(-1);
      if (!start) continue;
      const used = process.cpuUsage(start.cpu);
      passes.push({
        ms: performance.now() - start.at,
        cpuMs: (used.user + used.system) / 1000,
      });
    }
    const ended = leases.filter((l) => l.check() !== undefined).length;
    if (ended > 0) throw new Error(`${ended} credentials ended: the pass judged them invalid`);
    return {
      credentials: customers.length,
      tenants: new Set(customers.map((c) => c.tenantId)).size,
      recheckMs: o.recheckMs,
      passes,
    };
  } finally {
    clearInterval(tick);
    for (const lease of leases) lease.release();
  }
}

export function printWatchCost(cost: WatchCost): void {
  const ms = cost.passes.map((p) => p.ms);
  const cpu = cost.passes.map((p) => p.cpuMs);
  console.log(
    `\nCredential watch (the real one; ${cost.credentials} customer credentials over ${cost.tenants} tenants, as if each had one open stream; ${cost.passes.length} passes ${cost.recheckMs} ms apart):` +
      `\n  one pass p50 ${percentile(ms, 50).toFixed(0)} ms, max ${Math.max(...ms).toFixed(0)} ms wall;` +
      ` this process's CPU during a pass p50 ${percentile(cpu, 50).toFixed(0)} ms, max ${Math.max(...cpu).toFixed(0)} ms` +
      " (the pass, plus the list probe if it ran meanwhile; PostgreSQL's share not included)",
  );
}
