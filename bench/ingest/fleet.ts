import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { PROJECTION_NAMES } from '../../src/domains/projections/projection-registry.ts';
import { wazuhAlert } from '../../test/support/wazuh-alerts.ts';
import { percentile } from '../harness.ts';
import type { BenchTenant } from './app.ts';
import { readCounts } from './progress.ts';
import type { StandInFleet } from './stand-in-fleet.ts';
import { BACKLOG_STEP_MS, managerOf } from './throughput.ts';

/** How often the steady writer appends what is due. */
const APPEND_TICK_MS = 50;
/** How often the projector's lag is read from the database (every tenant, one query). */
const LAG_SAMPLE_MS = 1_000;
/** The flood goes into its indexer in appends of this many (one ingest stamp each, as bulks). */
const FLOOD_CHUNK = 5_000;

/** Where tenant n's alerts go: its fleet and its stand-in there. */
export interface Placement {
  fleet: StandInFleet;
  k: number;
}

/**
 * Ground truth of the projector's lag, per tenant, read through svc_mssp: the age of the
 * oldest event past the tenant's lowest checkpoint (a projection without one counts as 0),
 * 0 when caught up. The same definition as svc_projection_lag_seconds.
 */
const LAG_SQL = `
  SELECT t.id AS tenant_id,
         coalesce(extract(epoch FROM clock_timestamp() - (
           SELECT e.recorded_at FROM events e
            WHERE e.tenant_id = t.id
              AND e.id > (SELECT CASE WHEN count(*) = cardinality($2::text[])
                                      THEN coalesce(min(c.last_event_id), 0) ELSE 0 END
                            FROM projection_checkpoints c
                           WHERE c.tenant_id = t.id AND c.projection = ANY($2::text[]))
            ORDER BY e.id LIMIT 1)), 0)::float8 AS lag
    FROM unnest($1::uuid[]) AS t(id)`;

export async function readLags(mssp: pg.Pool, tenantIds: string[]): Promise<Map<string, number>> {
  const { rows } = await mssp.query<{ tenant_id: string; lag: number }>({
    name: 'bench.ingest.lag',
    text: LAG_SQL,
    values: [tenantIds, PROJECTION_NAMES],
  });
  return new Map(rows.map((r) => [r.tenant_id, r.lag]));
}

/** The flood's alerts for `tenant`, numbered from `from`, ending now (BACKLOG_STEP_MS apart). */
export function floodAlerts(tenant: BenchTenant, from: number, count: number) {
  const start = new Date(Date.now() - count * BACKLOG_STEP_MS);
  return Array.from({ length: count }, (_, i) =>
    wazuhAlert(from + i, { start, stepMs: BACKLOG_STEP_MS, manager: managerOf(tenant) }),
  );
}

/** Appends alerts to one stand-in in FLOOD_CHUNK appends (one ingest stamp each, as bulks). */
export async function appendInChunks(
  place: Placement,
  alerts: Record<string, unknown>[],
): Promise<void> {
  for (let at = 0; at < alerts.length; at += FLOOD_CHUNK)
    await place.fleet.append(new Map([[place.k, alerts.slice(at, at + FLOOD_CHUNK)]]));
}

export interface LagSample {
  /** ms since the phase started */
  at: number;
  max: number;
  p99: number;
  /** The flooded tenant's own lag, s (NaN without a flood). */
  flooded: number;
  /** Tenants with a lag above 0. */
  behind: number;
  /** What svc's projector reported at the same moment (svc_projection_lag_seconds), s. */
  reported: number;
}

export interface SteadyResult {
  appended: number;
  /** Alert searchable in its indexer (the append acknowledged) → first sample showing it projected, ms. */
  latencies: number[];
  /** Per tenant (index into the steady tenants), its alerts' latencies. */
  perTenant: number[][];
  missing: number;
  samples: number;
  lags: LagSample[];
  /** Every tenant's projected count at the end (the next phase's `already`). */
  projected: Map<string, number>;
  /** Flood only: the flood's appends took this long, and all of it was projected this long after they started. */
  floodAppendMs?: number;
  floodProjectedMs?: number;
  /** Alerts stored and projected from the phase's start to the end of the flood's projection. */
  wallMs: number;
}

/**
 * Alerts appended at `rate` per second, round-robin over the `steady` tenants, for
 * `durationMs`, each to its tenant's own stand-in (immediately searchable, stamped at append);
 * a sampler reads every tenant's projected alert count every `sampleMs` and the projector's
 * lag every second. With `flood`, its backlog is released first (made searchable in the flooded
 * tenant's indexer: its adapter finds a backlog), and the phase lasts until the flood is
 * projected too (or `settleMs` after the writes end).
 */
export async function steadyPhase(input: {
  mssp: pg.Pool;
  steady: BenchTenant[];
  all: BenchTenant[];
  place: (tenant: BenchTenant) => Placement;
  /** Alerts written per steady tenant so far (their numbering continues). */
  written: Map<string, number>;
  already: Map<string, number>;
  rate: number;
  durationMs: number;
  sampleMs: number;
  settleMs: number;
  /** `release` makes the flood's `alerts` searchable in the tenant's indexer, at the phase's start. */
  flood?: { tenant: BenchTenant; alerts: number; release: () => Promise<void> };
  /** svc's own figure for the worst lag (the projector's), sampled with the database's. */
  reportedLag: () => number;
}): Promise<SteadyResult> {
  const { mssp, steady, rate, durationMs } = input;
  const ids = input.all.map((t) => t.id);
  const ackedAt: number[][] = steady.map(() => []);
  const visibleAt: number[][] = steady.map(() => []);
  const lastTs = steady.map(() => 0);
  const lags: LagSample[] = [];
  let appended = 0;
  let done = false;
  let writeError: unknown;
  const t0 = performance.now();

  let floodAppendMs: number | undefined;
  let floodProjectedMs: number | undefined;
  const floodTotal = input.flood
    ? (input.already.get(input.flood.tenant.id) ?? 0) + input.flood.alerts
    : 0;
  const flooding = input.flood
    ? input.flood.release().then(() => {
        floodAppendMs = performance.now() - t0;
      })
    : Promise.resolve();

  const writer = (async () => {
    try {
      while (performance.now() - t0 < durationMs) {
        const due = Math.floor(((performance.now() - t0) / 1000) * rate);
        const byFleet = new Map<StandInFleet, Map<number, Record<string, unknown>[]>>();
        const sent: { n: number }[] = [];
        for (; appended < due; appended++) {
          const n = appended % steady.length;
          const tenant = steady[n] as BenchTenant;
          const { fleet, k } = input.place(tenant);
          const ts = Math.max(Date.now(), (lastTs[n] as number) + 1);
          lastTs[n] = ts;
          const number = input.written.get(tenant.id) ?? 0;
          input.written.set(tenant.id, number + 1);
          const alert = wazuhAlert(number, {
            start: new Date(ts),
            stepMs: 0,
            manager: managerOf(tenant),
          });
          const batches = byFleet.get(fleet) ?? new Map<number, Record<string, unknown>[]>();
          byFleet.set(fleet, batches);
          batches.set(k, [...(batches.get(k) ?? []), alert]);
          sent.push({ n });
        }
        await Promise.all([...byFleet].map(([fleet, batches]) => fleet.append(batches)));
        const acked = performance.now();
        for (const { n } of sent) (ackedAt[n] as number[]).push(acked);
        await sleep(APPEND_TICK_MS);
      }
    } catch (error) {
      writeError = error;
    } finally {
      done = true;
    }
  })();

  const lagSampler = (async () => {
    while (!done || (input.flood && performance.now() - t0 < durationMs + input.settleMs)) {
      const reported = input.reportedLag();
      const lag = await readLags(mssp, ids);
      const values = [...lag.values()];
      lags.push({
        at: performance.now() - t0,
        max: Math.max(0, ...values),
        p99: percentile(values, 99),
        flooded: input.flood ? (lag.get(input.flood.tenant.id) ?? 0) : Number.NaN,
        behind: values.filter((v) => v > 0).length,
        reported,
      });
      if (done && (!input.flood || floodProjectedMs !== undefined)) break;
      await sleep(LAG_SAMPLE_MS);
    }
  })();

  let samples = 0;
  let projected = new Map<string, number>();
  const allSeen = () => visibleAt.every((v, n) => v.length >= (ackedAt[n] as number[]).length);
  const floodSeen = () => !input.flood || floodProjectedMs !== undefined;
  for (;;) {
    if (done && allSeen() && floodSeen()) break;
    if (performance.now() > t0 + durationMs + input.settleMs || writeError !== undefined) break;
    const counts = await readCounts(mssp, ids);
    projected = counts.projected;
    samples += 1;
    steady.forEach((tenant, n) => {
      const visible = (counts.projected.get(tenant.id) ?? 0) - (input.already.get(tenant.id) ?? 0);
      const list = visibleAt[n] as number[];
      const acked = (ackedAt[n] as number[]).length;
      while (list.length < Math.min(visible, acked)) list.push(counts.at);
    });
    if (
      input.flood &&
      floodProjectedMs === undefined &&
      floodAppendMs !== undefined &&
      (counts.projected.get(input.flood.tenant.id) ?? 0) >= floodTotal
    )
      floodProjectedMs = counts.at - t0;
    await sleep(input.sampleMs);
  }
  await writer;
  await flooding;
  done = true;
  await lagSampler;
  if (writeError !== undefined) throw writeError;
  const perTenant = steady.map((_, n) =>
    (visibleAt[n] as number[]).map((at, k) => at - ((ackedAt[n] as number[])[k] as number)),
  );
  const latencies = perTenant.flat();
  return {
    appended,
    latencies,
    perTenant,
    missing: appended - latencies.length,
    samples,
    lags,
    projected,
    ...(floodAppendMs !== undefined ? { floodAppendMs } : {}),
    ...(floodProjectedMs !== undefined ? { floodProjectedMs } : {}),
    wallMs: performance.now() - t0,
  };
}
