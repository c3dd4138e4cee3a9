import type { TenantReport } from './report-types.ts';

/** The export's columns, in order: the JSON row's names (docs/reports.md "CSV export"). */
export const REPORT_CSV_COLUMNS = [
  'tenant_id',
  'tenant_slug',
  'tenant_name',
  'period_start',
  'from',
  'to',
  'alerts',
  'incidents_opened',
  'incidents_closed',
  'incidents_resolved',
  'auto_closed',
  'auto_closed_share',
  'acknowledged',
  'mean_time_to_acknowledge_seconds',
  'mean_time_to_resolve_seconds',
  'reviews_decided',
  'review_wait_p50_seconds',
  'review_wait_p95_seconds',
  'reviews_waiting',
  'llm_cost_usd',
] as const satisfies readonly (keyof TenantReport)[];

/**
 * One RFC 4180 cell. Text a spreadsheet would run as a formula (starting with =, +, -, @, or a
 * tab or carriage return that hides one) gets a leading apostrophe (OWASP "CSV Injection");
 * a cell holding a quote, comma, apostrophe or line break is quoted, quotes doubled. Numbers
 * are written as they are; null is an empty cell.
 */
export function csvCell(value: string | number | null): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\n\r']/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** A header row, then one CRLF-ended row per tenant and period. */
export function reportCsv(rows: readonly TenantReport[]): string {
  const lines = [
    REPORT_CSV_COLUMNS.join(','),
    ...rows.map((row) => REPORT_CSV_COLUMNS.map((column) => csvCell(row[column])).join(',')),
  ];
  return `${lines.join('\r\n')}\r\n`;
}
