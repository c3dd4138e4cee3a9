import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { PROJECTIONS } from '../../src/domains/projections/projection-registry.ts';
import { wazuhAlert } from '../../test/support/wazuh-alerts.ts';
import { seconds } from '../api/report.ts';
import type { BenchTenant } from './app.ts';
import { type CpuSnapshot, cpuDelta } from './cpu.ts';
import type { BenchIndexer } from './opensearch.ts';
import { checkTenants, readCounts } from './progress.ts';

/** Alerts of one tenant's backlog are this far apart: 2,000 span ~8 minutes. */
export const BACKLOG_STEP_MS = 250;

/** Each tenant's manager has its own name, so its alert ids are its own. */
export const managerOf = (tenant: BenchTenant) => `wazuh-manager-${tenant.n + 1}`;

export interface ThroughputResult {
  alerts: number;
  storedMs: number;
  projectedMs: number;
  /** Event id after which the phase's rows end (the baseline copies the rows up to it). */
  lastEventId: string;
  investigations: number;
  problems: string[];
  /** CPU from the publish to the end (staging the backlog is not the system's work). */
  cpu: CpuSnapshot;
  /** Bulk-writing the backlog into the indexer before the clock, ms (not timed). */
  stageMs: number;
  /** The refresh that made the backlog searchable, ms (inside the timed span). */
  publishMs: number;
}

/**
 * A backlog of `perTenant` alerts per tenant (test/support/wazuh-alerts.ts: four real Wazuh
 * rules over three agents, so twelve (rule, agent) pairs and, 250 ms apart, twelve
 * investigations per tenant), ending now. Bulk-written into the indexer beforehand with the
 * indices' refresh off, then made searchable for every tenant at once by one refresh with the
 * adapters already running and idle; the clock starts when that refresh is sent.
 */
export async function throughputPhase(input: {
  mssp: pg.Pool;
  tenants: BenchTenant[];
  indexer: BenchIndexer;
  perTenant: number;
  timeoutMs: number;
  cpu: () => CpuSnapshot;
}): Promise<ThroughputResult> {
  const { mssp, tenants, indexer, perTenant } = input;
  const ids = tenants.map((t) => t.id);
  const total = perTenant * tenants.length;
  const start = new Date(Date.now() - perTenant * BACKLOG_STEP_MS);
  const staging = performance.now();
  for (const tenant of tenants) {
    const manager = managerOf(tenant);
    const alerts = Array.from({ length: perTenant }, (_, i) =>
      wazuhAlert(i, { start, stepMs: BACKLOG_STEP_MS, manager }),
    );
    await indexer.stage(tenant.n, alerts);
  }
  const stageMs = performance.now() - staging;
  // The adapters must not have seen any of it yet, or the clock would start late.
  const early = await indexer.visible();
  if (early !== 0)
    throw new Error(`${early} backlog alerts were searchable before the refresh (refresh off?)`);
  console.log(
    `\nthroughput: ${total.toLocaleString('en')} alerts bulk-written in ${seconds(stageMs)}` +
      ' (not searchable yet); one refresh publishes them',
  );
  const cpuBefore = input.cpu();
  const t0 = performance.now();
  await indexer.publish();
  const publishMs = performance.now() - t0;
  let storedAt: number | undefined;
  let projectedAt: number | undefined;
  let lastPrint = t0;
  while (projectedAt === undefined) {
    if (performance.now() - t0 > input.timeoutMs)
      throw new Error(`throughput phase not done after ${seconds(input.timeoutMs)}`);
    await sleep(100);
    const counts = await readCounts(mssp, ids);
    if (storedAt === undefined && counts.storedTotal >= total) storedAt = counts.at;
    if (counts.projectedTotal >= total) projectedAt = counts.at;
    if (counts.at - lastPrint >= 5_000 || projectedAt !== undefined) {
      lastPrint = counts.at;
      console.log(
        `  ${seconds(counts.at - t0)}: stored ${counts.storedTotal.toLocaleString('en')},` +
          ` projected ${counts.projectedTotal.toLocaleString('en')}`,
      );
    }
  }
  const cpu = cpuDelta(cpuBefore, input.cpu());
  const checks = await checkTenants(mssp, ids);
  const problems = checks
    .filter(
      (c) =>
        c.alerts !== perTenant ||
        c.alert_count !== perTenant ||
        c.lowest_checkpoint !== c.last_event_id ||
        c.projections !== PROJECTIONS.length,
    )
    .map((c) => `tenant ${c.tenant_id}: ${JSON.stringify(c)}`);
  const lastEventId = checks.reduce(
    (max, c) => (BigInt(c.last_event_id) > max ? BigInt(c.last_event_id) : max),
    0n,
  );
  return {
    alerts: total,
    storedMs: (storedAt ?? projectedAt) - t0,
    projectedMs: projectedAt - t0,
    lastEventId: String(lastEventId),
    investigations: checks.reduce((a, c) => a + c.investigations, 0),
    problems,
    cpu,
    stageMs,
    publishMs,
  };
}
