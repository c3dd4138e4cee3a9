import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { wazuhAlert } from '../../test/support/wazuh-alerts.ts';
import { seconds } from '../api/report.ts';
import type { BenchTenant } from './app.ts';
import type { BenchIndexer } from './indexer.ts';
import { readCounts } from './progress.ts';
import { managerOf } from './throughput.ts';

/** How often the appender tops the indexer up to the rate. */
const APPEND_TICK_MS = 10;

export interface LatencyResult {
  appended: number;
  /** Indexer append → first sample whose projected count includes the alert, ms. */
  latencies: number[];
  /** Alerts never seen projected before the phase gave up. */
  missing: number;
  samples: number;
  /** Mean interval between samples, ms (the quantization of every latency). */
  sampleIntervalMs: number;
}

/**
 * Alerts appended to the indexer at a steady rate across the tenants (round-robin, each with
 * its append time as its Wazuh timestamp) while the adapters run caught up; a sampler reads
 * every tenant's projected alert count every `sampleMs`. Within a tenant alerts are ingested
 * and folded in order, so the k-th appended alert is visible once the count has grown by k.
 */
export async function latencyPhase(input: {
  mssp: pg.Pool;
  tenants: BenchTenant[];
  indexer: BenchIndexer;
  /** Alerts already in each tenant's projections when the phase starts. */
  already: number;
  rate: number;
  durationMs: number;
  sampleMs: number;
  settleMs: number;
}): Promise<LatencyResult> {
  const { mssp, tenants, indexer, rate, durationMs } = input;
  const ids = tenants.map((t) => t.id);
  const appendedAt: number[][] = tenants.map(() => []);
  const lastTs = tenants.map(() => 0);
  const seen = tenants.map(() => 0);
  const latencies: number[] = [];
  let appended = 0;
  let appending = true;

  console.log(
    `\nlatency: ${rate.toLocaleString('en')} alerts/s across ${tenants.length} tenants for` +
      ` ${seconds(durationMs)}; sampling every ${input.sampleMs} ms`,
  );
  const t0 = performance.now();
  const appender = (async () => {
    while (performance.now() - t0 < durationMs) {
      const due = Math.floor(((performance.now() - t0) / 1000) * rate);
      for (; appended < due; appended++) {
        const n = appended % tenants.length;
        const tenant = tenants[n] as BenchTenant;
        const ts = Math.max(Date.now(), (lastTs[n] as number) + 1);
        lastTs[n] = ts;
        const list = appendedAt[n] as number[];
        const alert = wazuhAlert(input.already + list.length, {
          start: new Date(ts),
          stepMs: 0,
          manager: managerOf(tenant),
        });
        indexer.append(n, [alert]);
        list.push(performance.now());
      }
      await sleep(APPEND_TICK_MS);
    }
    appending = false;
  })();

  let samples = 0;
  let lastSampleAt = t0;
  const deadline = () => t0 + durationMs + input.settleMs;
  const allSeen = () => seen.every((s, n) => s >= (appendedAt[n] as number[]).length);
  while (appending || !allSeen()) {
    if (performance.now() > deadline()) break;
    const counts = await readCounts(mssp, ids);
    samples += 1;
    lastSampleAt = counts.at;
    tenants.forEach((tenant, n) => {
      const visible = (counts.projected.get(tenant.id) ?? 0) - input.already;
      const list = appendedAt[n] as number[];
      for (let k = seen[n] as number; k < Math.min(visible, list.length); k++)
        latencies.push(counts.at - (list[k] as number));
      seen[n] = Math.max(seen[n] as number, Math.min(visible, list.length));
    });
    await sleep(input.sampleMs);
  }
  await appender;
  const missing = appended - latencies.length;
  return {
    appended,
    latencies,
    missing,
    samples,
    sampleIntervalMs: samples > 1 ? (lastSampleAt - t0) / samples : Number.NaN,
  };
}
