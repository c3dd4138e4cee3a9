// Reports per tenant and UTC period (spec §2.2 "cross-tenant reporting"; docs/reports.md): the
// mssp_admin's view across tenants through the system gate (audited as mssp.reports), and the
// customer's own figures under its tenant's RLS context.
import type { AppDatabase } from '../../db/pools.ts';
import type { SystemGate } from '../../db/system-gate.ts';
import { readFleetReport, readTenantReport } from './report-repository.ts';
import {
  type Figures,
  InvalidReportRangeError,
  type Period,
  type ReportPosition,
  type ReportRange,
  type TenantReport,
} from './report-types.ts';

/**
 * How many periods one report may cover (docs/reports.md "Ranges"): about a year of days, two
 * years of weeks, five years of months. Each row is a handful of index range scans; the bound
 * keeps the CSV export (every row at once) and a page's work predictable.
 */
export const MAX_PERIODS: Record<Period, number> = { day: 366, week: 106, month: 60 };

/** Periods a range without `from` covers, ending with the one holding `to`. */
const DEFAULT_PERIODS: Record<Period, number> = { day: 30, week: 12, month: 12 };

const DAY_MS = 86_400_000;

function dayText(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** A YYYY-MM-DD the calendar has, as UTC midnight in ms. */
function parseDay(value: string, name: string): number {
  const ms = Date.parse(`${value}T00:00:00Z`);
  if (Number.isNaN(ms) || dayText(ms) !== value || ms < Date.UTC(1970, 0, 1))
    throw new InvalidReportRangeError('invalid_report_date', `${name} is not a UTC calendar day`);
  return ms;
}

/** The start of the UTC period holding `ms`; weeks start on Monday (ISO 8601). */
export function periodStart(period: Period, ms: number): number {
  const d = new Date(ms);
  if (period === 'day') return ms;
  if (period === 'month') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  return ms - ((d.getUTCDay() + 6) % 7) * DAY_MS;
}

function addPeriods(period: Period, ms: number, n: number): number {
  if (period === 'day') return ms + n * DAY_MS;
  if (period === 'week') return ms + n * 7 * DAY_MS;
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, 1);
}

/** How many periods [from, to] touches. */
function periodCount(period: Period, from: number, to: number): number {
  const first = periodStart(period, from);
  const last = periodStart(period, to);
  if (period === 'day') return (last - first) / DAY_MS + 1;
  if (period === 'week') return (last - first) / (7 * DAY_MS) + 1;
  const a = new Date(first);
  const b = new Date(last);
  return (b.getUTCFullYear() - a.getUTCFullYear()) * 12 + b.getUTCMonth() - a.getUTCMonth() + 1;
}

/**
 * The range a query asks for, checked (docs/reports.md "Ranges"): `to` defaults to today (UTC),
 * `from` to the start of the period DEFAULT_PERIODS back; a day the calendar lacks, `from`
 * after `to` or more than MAX_PERIODS periods are refused before anything is read.
 */
export function resolveRange(
  query: { period?: Period | undefined; from?: string | undefined; to?: string | undefined },
  now: Date,
): ReportRange {
  const period = query.period ?? 'day';
  const to =
    query.to === undefined
      ? Date.parse(`${dayText(now.getTime())}T00:00:00Z`)
      : parseDay(query.to, 'to');
  const from =
    query.from === undefined
      ? addPeriods(period, periodStart(period, to), 1 - DEFAULT_PERIODS[period])
      : parseDay(query.from, 'from');
  if (from > to) throw new InvalidReportRangeError('report_range_inverted', '`from` is after `to`');
  if (periodCount(period, from, to) > MAX_PERIODS[period])
    throw new InvalidReportRangeError(
      'report_range_too_long',
      `A report covers at most ${MAX_PERIODS[period]} periods of a ${period}`,
    );
  return { period, from: dayText(from), to: dayText(to) };
}

export interface ReportPage {
  range: ReportRange;
  rows: TenantReport[];
  next: ReportPosition | null;
}

export function createReportService(deps: {
  db: AppDatabase;
  system: SystemGate;
  now: () => Date;
}) {
  return {
    resolveRange: (query: Parameters<typeof resolveRange>[0]) => resolveRange(query, deps.now()),

    /** One page of every tenant's rows (or one tenant's): `limit` rows after `after`. */
    async fleetPage(
      range: ReportRange,
      filter: { tenantId?: string | undefined; after?: ReportPosition | undefined; limit: number },
    ): Promise<ReportPage> {
      const rows = await deps.system.withSystem('mssp.reports', (tx) =>
        readFleetReport(tx, range, {
          tenantId: filter.tenantId,
          ...(filter.after ? { after: filter.after } : {}),
          limit: filter.limit + 1,
        }),
      );
      const page = rows.slice(0, filter.limit);
      const last = page.at(-1);
      const next =
        rows.length > filter.limit && last
          ? { tenantId: last.tenant_id, periodStart: last.period_start }
          : null;
      return { range, rows: page, next };
    },

    /** Every row of the range at once, for the CSV export (MAX_PERIODS bounds it per tenant). */
    fleetAll(range: ReportRange, tenantId: string | undefined): Promise<TenantReport[]> {
      return deps.system.withSystem('mssp.reports', (tx) =>
        readFleetReport(tx, range, { tenantId, limit: null }),
      );
    },

    /** The customer's own figures, one row per period, under its tenant's RLS context. */
    async tenantFigures(tenantId: string, range: ReportRange): Promise<Figures[]> {
      const rows = await deps.db.withTenant(tenantId, (tx) =>
        readTenantReport(tx, tenantId, range),
      );
      return rows.map(({ tenant_id: _t, tenant_slug: _s, tenant_name: _n, ...figures }) => figures);
    },
  };
}

export type ReportService = ReturnType<typeof createReportService>;
