import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { wazuhAlert } from '../../test/support/wazuh-alerts.ts';
import { seconds } from '../api/report.ts';
import type { BenchTenant } from './app.ts';
import type { BenchIndexer, RefreshMode } from './opensearch.ts';
import { readCounts } from './progress.ts';
import { managerOf } from './throughput.ts';

/** How often the writer tops the indexer up to the rate. */
const APPEND_TICK_MS = 25;
/**
 * At most this many alerts per `_bulk`, and this many bulks in flight: a shipper sends bounded
 * batches from a few workers (Filebeat: bulk_max_size, worker), so a slow indexer makes
 * alerts queue, not one bulk grow without end.
 */
const BULK_MAX = 500;
const BULKS_IN_FLIGHT = 4;

export interface LatencyResult {
  /** How writes became searchable: an index refresh interval, or `true` (per write). */
  refresh: RefreshMode;
  appended: number;
  /** Alerts written per tenant (the next phase's `already`). */
  perTenant: number[];
  /** `_bulk` requests the writer sent, and their mean duration, ms. */
  bulks: number;
  bulkMs: number;
  /** Written rate actually reached, alerts/s (below the target when the indexer lags). */
  writtenRate: number;
  /** Alert due (its write time at the target rate) → first sample whose projected count includes it, ms. */
  latencies: number[];
  /** Its bulk acknowledged by the indexer → that sample, ms (0 when visible before the ack). */
  ackLatencies: number[];
  /** Alerts never seen projected before the phase gave up. */
  missing: number;
  samples: number;
  /** Mean interval between samples, ms (the quantization of every latency). */
  sampleIntervalMs: number;
}

/**
 * Alerts written to the indexer at a steady rate across the tenants (round-robin, each with
 * its due time as its Wazuh timestamp; bulks of at most BULK_MAX, BULKS_IN_FLIGHT at a time, as
 * a shipper sends them) while the adapters run caught up; a sampler reads every tenant's
 * projected alert count every `sampleMs`. An alert's clock starts when it is due, so its
 * latency includes any wait for a free bulk slot, indexing, the wait for the next refresh (up
 * to the refresh interval), the adapter's poll, ingest and the projector; the ack latency
 * starts when the indexer acknowledged its bulk (what "in the indexer" means to a shipper).
 * Within a tenant alerts are read in ingest order and folded in order, so the k-th written
 * alert counts as visible once the count has grown by k (alerts refreshed together become
 * visible together; bulks in flight at once, or several shards refreshing apart, can reorder
 * alerts within a refresh interval, which moves latency between those alerts, not the scale).
 */
export async function latencyPhase(input: {
  mssp: pg.Pool;
  tenants: BenchTenant[];
  indexer: BenchIndexer;
  refresh: RefreshMode;
  /** Alerts already in each tenant's projections when the phase starts. */
  already: number[];
  rate: number;
  durationMs: number;
  sampleMs: number;
  settleMs: number;
}): Promise<LatencyResult> {
  const { mssp, tenants, indexer, rate, durationMs } = input;
  const ids = tenants.map((t) => t.id);
  /** Per tenant, per alert in write order: when it was due, acknowledged, seen projected. */
  const dueAt: number[][] = tenants.map(() => []);
  const ackedAt: number[][] = tenants.map(() => []);
  const visibleAt: number[][] = tenants.map(() => []);
  const lastTs = tenants.map(() => 0);
  let appended = 0;
  let queued: { n: number; k: number; alert: Record<string, unknown> }[] = [];
  let appending = true;
  let bulks = 0;
  let bulkMs = 0;
  let writeError: unknown;

  await indexer.refreshMode(input.refresh);
  console.log(
    `\nlatency (${describeRefresh(input.refresh)}): ${rate.toLocaleString('en')} alerts/s` +
      ` across ${tenants.length} tenants for ${seconds(durationMs)}; bulks of ≤ ${BULK_MAX},` +
      ` ${BULKS_IN_FLIGHT} in flight; sampling every ${input.sampleMs} ms`,
  );
  const t0 = performance.now();
  const inFlight = new Set<Promise<void>>();
  const send = (batch: typeof queued) => {
    const sent = performance.now();
    const p = indexer
      .write(batch)
      .then(() => {
        const acked = performance.now();
        for (const { n, k } of batch) (ackedAt[n] as number[])[k] = acked;
        bulks += 1;
        bulkMs += acked - sent;
      })
      .catch((error: unknown) => {
        writeError ??= error;
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  const writer = (async () => {
    try {
      while (performance.now() - t0 < durationMs && writeError === undefined) {
        const due = Math.floor(((performance.now() - t0) / 1000) * rate);
        for (; appended < due; appended++) {
          const n = appended % tenants.length;
          const tenant = tenants[n] as BenchTenant;
          const ts = Math.max(Date.now(), (lastTs[n] as number) + 1);
          lastTs[n] = ts;
          const list = dueAt[n] as number[];
          const k = list.length;
          const alert = wazuhAlert((input.already[n] as number) + k, {
            start: new Date(ts),
            stepMs: 0,
            manager: managerOf(tenant),
          });
          list.push(performance.now());
          (ackedAt[n] as number[]).push(Number.NaN);
          queued.push({ n, k, alert });
        }
        while (queued.length > 0 && inFlight.size < BULKS_IN_FLIGHT) {
          send(queued.slice(0, BULK_MAX));
          queued = queued.slice(BULK_MAX);
        }
        if (inFlight.size >= BULKS_IN_FLIGHT) await Promise.race(inFlight);
        else await sleep(APPEND_TICK_MS);
      }
      // What is due by the end is still written, in bounded bulks.
      while (queued.length > 0 && writeError === undefined) {
        while (queued.length > 0 && inFlight.size < BULKS_IN_FLIGHT) {
          send(queued.slice(0, BULK_MAX));
          queued = queued.slice(BULK_MAX);
        }
        await Promise.race(inFlight);
      }
      await Promise.all(inFlight);
    } finally {
      appending = false;
    }
  })();
  const writtenIn = () => performance.now() - t0;

  let samples = 0;
  let lastSampleAt = t0;
  let writtenMs = Number.NaN;
  const deadline = () => t0 + durationMs + input.settleMs;
  const allSeen = () => visibleAt.every((v, n) => v.length >= (dueAt[n] as number[]).length);
  while (appending || !allSeen()) {
    if (!appending && Number.isNaN(writtenMs)) writtenMs = writtenIn();
    if (performance.now() > deadline() || writeError !== undefined) break;
    const counts = await readCounts(mssp, ids);
    samples += 1;
    lastSampleAt = counts.at;
    tenants.forEach((tenant, n) => {
      const visible = (counts.projected.get(tenant.id) ?? 0) - (input.already[n] as number);
      const list = visibleAt[n] as number[];
      const written = (dueAt[n] as number[]).length;
      while (list.length < Math.min(visible, written)) list.push(counts.at);
    });
    await sleep(input.sampleMs);
  }
  await writer;
  if (writeError !== undefined) throw writeError;
  if (Number.isNaN(writtenMs)) writtenMs = writtenIn();
  const latencies: number[] = [];
  const ackLatencies: number[] = [];
  tenants.forEach((_, n) => {
    (visibleAt[n] as number[]).forEach((at, k) => {
      latencies.push(at - ((dueAt[n] as number[])[k] as number));
      const acked = (ackedAt[n] as number[])[k] as number;
      ackLatencies.push(Number.isNaN(acked) ? 0 : Math.max(0, at - acked));
    });
  });
  return {
    refresh: input.refresh,
    appended,
    perTenant: tenants.map((_, n) => (input.already[n] as number) + (dueAt[n] as number[]).length),
    bulks,
    bulkMs: bulks > 0 ? bulkMs / bulks : Number.NaN,
    writtenRate: (appended / writtenMs) * 1000,
    latencies,
    ackLatencies,
    missing: appended - latencies.length,
    samples,
    sampleIntervalMs: samples > 1 ? (lastSampleAt - t0) / samples : Number.NaN,
  };
}

/** How a phase's writes became searchable, for the printout. */
export function describeRefresh(mode: RefreshMode): string {
  return mode === 'true'
    ? 'every _bulk with refresh=true'
    : `refresh_interval ${mode}${mode === '1s' ? ", OpenSearch's default" : ''}`;
}
