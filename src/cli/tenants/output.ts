import type { Static } from 'typebox';
import type { AdapterActivity, Tenant } from '../../../contracts/mssp.ts';

/** What the commands print: JSON or text on stdout, progress on stderr, lifecycle lines, tables. */

export type TenantJson = Static<typeof Tenant>;

export interface LifecycleEntry {
  id: string;
  kind: string;
  from_state: string | null;
  to_state: string | null;
  step: string | null;
  details: Record<string, unknown>;
}

export function print(value: unknown): void {
  process.stdout.write(
    typeof value === 'string' ? `${value}\n` : `${JSON.stringify(value, null, 2)}\n`,
  );
}

export function progress(line: string): void {
  process.stderr.write(`${line}\n`);
}

export function firstLine(value: unknown): string {
  return String(value).split('\n')[0] ?? '';
}

const HINTS: ((d: Record<string, unknown>) => unknown)[] = [
  (d) => d.namespace,
  (d) => d.chart_version && `chart ${d.chart_version}`,
  (d) => (d.to ?? d.tenant_chart_version) && `to ${d.to ?? d.tenant_chart_version}`,
  (d) => d.error && firstLine(d.error),
];
const MARKS: Record<string, string> = { rolled_back: '↺', upgrade_failed: '✗' };

/** One human line per lifecycle entry: `  ✓ namespace_created (tenant-acme)`. */
export function describe(e: LifecycleEntry): string {
  switch (e.kind) {
    case 'transition':
      return `  → ${e.from_state} → ${e.to_state}`;
    case 'error':
      return `  ✗ ${e.step} failed: ${e.details.message} (${e.details.code})`;
    case 'config_revision':
      return '  • configuration recorded';
    case 'step': {
      const hints = HINTS.map((h) => h(e.details)).filter((h) => typeof h === 'string' && h);
      const hint = hints.length > 0 ? ` (${hints.join(', ')})` : '';
      return `  ${MARKS[e.step ?? ''] ?? '✓'} ${e.step}${hint}`;
    }
    default:
      return `  • ${e.kind}`;
  }
}

export function stateLabel(t: TenantJson): string {
  return t.state === 'pending' && t.error_details ? 'pending (failed)' : t.state;
}

export function chartLabel(t: TenantJson): string {
  const current = t.chart_version ?? '-';
  return t.upgrade_target ? `${current} → ${t.upgrade_target}` : current;
}

export function table(rows: string[][]): string {
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function details(t: TenantJson): string[][] {
  const e = t.error_details;
  return [
    ['id', t.id],
    ['slug', t.slug],
    ['name', t.display_name],
    ['state', stateLabel(t)],
    ['chart', chartLabel(t)],
    ...(t.edge_ports
      ? [['edge ports', `events ${t.edge_ports.events}, enrollment ${t.edge_ports.enrollment}`]]
      : []),
    ['created', t.created_at],
    ...(t.deleted_at ? [['deleted', t.deleted_at]] : []),
    ...(e ? [['error', `${e.message} (${e.code}) at step ${e.step}`]] : []),
  ];
}

/**
 * The adapter rows of `svc tenants get`: when it was last heard, what its last heartbeat said
 * about ingest, and how many alerts it has delivered (docs/adapter.md).
 */
export function adapterDetails(a: Static<typeof AdapterActivity> | null): string[][] {
  if (!a) return [['adapter', 'not heard from yet']];
  const st = a.status;
  const ingest = [
    st.ingest,
    st.indexer !== undefined && `indexer ${st.indexer}`,
    typeof st.lag_seconds === 'number' && `lag ${st.lag_seconds} s`,
  ].filter((part) => typeof part === 'string' && part);
  return [
    ['adapter', `${a.version}, last heard ${a.last_seen_at}`],
    ...(ingest.length > 0 ? [['ingest', ingest.join(', ')]] : []),
    [
      'alerts',
      `${a.alerts_total} delivered${a.checkpoint_at ? `, last batch ${a.checkpoint_at}` : ''}`,
    ],
  ];
}
