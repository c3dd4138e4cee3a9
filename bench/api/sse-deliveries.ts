import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AppDatabase } from '../../src/db/pools.ts';
import { appendUncheckedEvent } from '../../src/domains/events/index.ts';
import type { Tenant } from './seed.ts';
import { type SseClient, sharedNow } from './sse-client.ts';

interface Commit {
  tenant: number;
  at: number;
}

export interface AppendResult {
  commits: Map<string, Commit>;
  perTenant: number[];
  /** BEGIN … COMMIT of each append, as the writer sees it. */
  latencies: number[];
  /** How far behind schedule each append started (a busy machine or a blocked loop shows). */
  lags: number[];
}

/**
 * One event per second per tenant, the tenants' ticks spread evenly over each second. Each
 * tenant appends to its own stream, one append at a time (the stream position must advance).
 * The commit time is taken when COMMIT has returned: that is when a reader can see the row.
 */
export async function appendTicks(
  db: AppDatabase,
  tenants: Tenant[],
  seconds: number,
): Promise<AppendResult> {
  const result: AppendResult = {
    commits: new Map(),
    perTenant: tenants.map(() => 0),
    latencies: [],
    lags: [],
  };
  const start = performance.now() + 100;
  // Commit instants on the clock the client processes stamp receipts with.
  const tick = async (tenant: Tenant, index: number) => {
    const streamId = randomUUID();
    for (let seq = 1; seq <= seconds; seq++) {
      const due = start + (index * 1000) / tenants.length + (seq - 1) * 1000;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      result.lags.push(Math.max(0, performance.now() - due));
      const begin = performance.now();
      const event = await db.withTenant(tenant.id, (tx) =>
        appendUncheckedEvent(tx, {
          tenantId: tenant.id,
          streamType: 'bench',
          streamId,
          streamSeq: seq,
          type: 'bench.tick',
          payload: { tenant_id: tenant.id, seq },
          actor: 'Worker',
        }),
      );
      result.latencies.push(performance.now() - begin);
      result.commits.set(event.id, { tenant: index, at: sharedNow() });
      result.perTenant[index] = (result.perTenant[index] ?? 0) + 1;
    }
  };
  await Promise.all(tenants.map(tick));
  return result;
}

export interface DeliveryStats {
  latencies: number[];
  foreign: number;
  unknown: number;
  duplicates: number;
  /** Of this subscriber's own tenant, distinct events received. */
  perSubscriber: number[];
  missing: number;
}

/**
 * A delivery is foreign when its payload names another tenant or its id was appended for
 * another tenant; both are checked so a bug in either the payload or the routing shows.
 */
export function analyse(
  clients: readonly Pick<SseClient, 'tenant' | 'tenantId' | 'deliveries'>[],
  appended: AppendResult,
): DeliveryStats {
  const stats: DeliveryStats = {
    latencies: [],
    foreign: 0,
    unknown: 0,
    duplicates: 0,
    perSubscriber: [],
    missing: 0,
  };
  for (const client of clients) {
    const seen = new Set<string>();
    for (const delivery of client.deliveries) {
      const commit = appended.commits.get(delivery.id);
      if (commit === undefined) stats.unknown++;
      if (delivery.payloadTenant !== client.tenantId || (commit && commit.tenant !== client.tenant))
        stats.foreign++;
      else if (seen.has(delivery.id)) stats.duplicates++;
      else if (commit) {
        seen.add(delivery.id);
        stats.latencies.push(Math.max(0, delivery.at - commit.at));
      }
    }
    stats.perSubscriber.push(seen.size);
    stats.missing += (appended.perTenant[client.tenant] ?? 0) - seen.size;
  }
  return stats;
}
