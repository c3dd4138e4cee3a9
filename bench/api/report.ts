import { percentile } from '../harness.ts';
import type { LoadResult } from './load.ts';
import { ok, rate } from './load.ts';
import type { StatementTally } from './round-trips.ts';

const MIB = 1024 * 1024;

export const mib = (bytes: number) => `${(bytes / MIB).toFixed(0)} MiB`;
export const ms = (value: number) => `${value.toFixed(2)} ms`;
export const seconds = (value: number) => `${(value / 1000).toFixed(1)} s`;
export const verdict = (pass: boolean) => (pass ? 'PASS' : 'FAIL');

function describeCounts(counts: Map<string, number>): string {
  const parts = [...counts]
    .filter(([status]) => status !== '200')
    .map(([status, n]) => `${status} x${n}`);
  return parts.length === 0 ? 'none' : parts.join(', ');
}

export function printSide(title: string, result: LoadResult): void {
  console.log(`\n  [${title}]`);
  console.log(
    `    ${ok(result)} x 200 in ${seconds(result.elapsedMs)} = ${rate(result).toFixed(1)} req/s` +
      ` (rounds: ${result.roundRates.map((r) => r.toFixed(0)).join(', ')})`,
  );
  console.log(
    `    latency p50 ${ms(percentile(result.latencies, 50))},` +
      ` p99 ${ms(percentile(result.latencies, 99))};` +
      ` non-200: ${describeCounts(result.counts)}`,
  );
}

/**
 * What one request sent to PostgreSQL: each statement kind's calls per request and its mean
 * time from the call to the answer (round trip plus execution, as the server process sees it).
 */
export function printStatements(
  side: string,
  kinds: Map<string, StatementTally>,
  requests: number,
) {
  console.log(`    ${side} statements per request (mean time from call to answer):`);
  const sorted = [...kinds].sort(([, a], [, b]) => b.calls - a.calls);
  for (const [kind, { calls, pipelined, ms: total }] of sorted) {
    const perRequest = calls / Math.max(1, requests);
    if (perRequest < 0.005) continue;
    const riding = pipelined > 0 ? ` (${Math.round((100 * pipelined) / calls)}% pipelined)` : '';
    console.log(`      ${perRequest.toFixed(2)} x ${ms(total / calls)}${riding}  ${kind}`);
  }
}
