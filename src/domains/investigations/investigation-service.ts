// What a customer reads about its own investigations (spec §4.3): the dashboard overview, the
// incident list and the activity report built from the projections.
import type { KeysetPage, KeysetRequest } from '../../db/keyset.ts';
import type { AppDatabase } from '../../db/pools.ts';
import { TenantNotFoundError } from '../tenants/tenant-types.ts';
import { listCustomerInvestigations, readOverview } from './investigation-repository.ts';
import type {
  IncidentBody,
  IncidentFilters,
  IocStatsRow,
  OverviewBody,
  OverviewRow,
  ReportBody,
  RuleStatsRow,
} from './investigation-types.ts';
import { dailyMetrics, topIocs, topRules } from './metrics-repository.ts';

export const DEFAULT_REPORT_DAYS = 7;
/** How many rules and indicators the report ranks. */
export const REPORT_TOP = 10;

function breakdown(counts: OverviewRow['open_counts']): OverviewBody['open_investigations'] {
  const result: OverviewBody['open_investigations'] = {
    total: 0,
    by_severity: { info: 0, low: 0, medium: 0, high: 0, critical: 0 },
    by_status: { open: 0, triaging: 0, awaiting_review: 0 },
  };
  for (const { severity, status, n } of counts) {
    result.total += n;
    result.by_severity[severity] += n;
    result.by_status[status] += n;
  }
  return result;
}

function sumMetrics(daily: ReportBody['daily']): ReportBody['totals'] {
  const totals: ReportBody['totals'] = {};
  for (const day of daily) {
    for (const [metric, value] of Object.entries(day.metrics)) {
      totals[metric] = (totals[metric] ?? 0) + value;
    }
  }
  return totals;
}

function toRule(row: RuleStatsRow): ReportBody['top_rules'][number] {
  return {
    ...row,
    fired: Number(row.fired),
    true_positives: Number(row.true_positives),
    false_positives: Number(row.false_positives),
  };
}

function toIoc(row: IocStatsRow): ReportBody['top_iocs'][number] {
  return {
    ...row,
    hits: Number(row.hits),
    malicious_verdicts: Number(row.malicious_verdicts),
  };
}

/** Every read runs under the tenant's context (RLS): the tenant comes from the caller's identity. */
export function createInvestigationService(deps: { db: AppDatabase; now: () => Date }) {
  return {
    /** The dashboard numbers as of now. */
    async overview(tenantId: string): Promise<OverviewBody> {
      const now = deps.now();
      const row = await deps.db.withTenant(tenantId, (tx) => readOverview(tx, tenantId, now));
      if (!row) throw new TenantNotFoundError(tenantId);
      return {
        tenant: { id: row.id, display_name: row.display_name, state: row.state },
        open_investigations: breakdown(row.open_counts),
        pending_reviews: row.pending_reviews,
        events_last_24h: row.events_last_24h,
        resolved_last_7d: row.resolved_last_7d,
        as_of: now,
      };
    },

    /** Investigations, newest opened first. */
    async incidents(
      tenantId: string,
      filters: IncidentFilters,
      page: KeysetRequest,
    ): Promise<KeysetPage<IncidentBody>> {
      const result = await deps.db.withTenant(tenantId, (tx) =>
        listCustomerInvestigations(tx, filters, page),
      );
      return { rows: result.rows, next: result.next };
    },

    /** The report over the `days` UTC days ending with today. */
    async report(tenantId: string, days = DEFAULT_REPORT_DAYS): Promise<ReportBody> {
      const today = deps.now().toISOString().slice(0, 10);
      return deps.db.withTenant(tenantId, async (tx) => {
        const daily = await dailyMetrics(tx, today, days);
        const rules = await topRules(tx, REPORT_TOP);
        const iocs = await topIocs(tx, REPORT_TOP);
        return {
          days,
          from: daily[0]?.date ?? today,
          to: today,
          daily,
          totals: sumMetrics(daily),
          top_rules: rules.map(toRule),
          top_iocs: iocs.map(toIoc),
        };
      });
    },
  };
}

export type InvestigationService = ReturnType<typeof createInvestigationService>;
