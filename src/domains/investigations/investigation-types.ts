import type { Static, StaticDecode } from 'typebox';
import type * as s from 'zapatos/schema';
import type { Incident, IncidentsQuery, Overview, Report } from '../../../contracts/tenant.ts';
import type { Narrowed } from '../../db/rows.ts';

// Decoded: timestamps are Dates, written as the contract's text by the HTTP layer.
export type OverviewBody = StaticDecode<typeof Overview>;
export type IncidentBody = StaticDecode<typeof Incident>;
// The report figures per period come from the reports domain (src/domains/reports/).
export type ReportBody = Omit<StaticDecode<typeof Report>, 'period' | 'figures'>;
export type IncidentFilters = Pick<Static<typeof IncidentsQuery>, 'status' | 'severity'>;

type OpenStatus = keyof OverviewBody['open_investigations']['by_status'];
type Severity = keyof OverviewBody['open_investigations']['by_severity'];

/** The numbers of one tenant's dashboard, read in one snapshot. */
export type OverviewRow = Narrowed<
  Pick<s.tenants.Selectable, 'id' | 'display_name' | 'state'>,
  { state: OverviewBody['tenant']['state'] }
> & {
  open_counts: { severity: Severity; status: OpenStatus; n: number }[];
  pending_reviews: number;
  events_last_24h: number;
  resolved_last_7d: number;
};

/** The columns a customer may see: assignee_id (an MSSP staff id) and last_event_id stay inside. */
export type CustomerInvestigationRow = Narrowed<
  Pick<
    s.investigations.Selectable,
    | 'id'
    | 'title'
    | 'summary'
    | 'status'
    | 'severity'
    | 'verdict'
    | 'source'
    | 'source_ref'
    | 'opened_at'
    | 'updated_at'
    | 'resolved_at'
    | 'closed_at'
    | 'alert_count'
    | 'last_alert_at'
  >,
  Pick<IncidentBody, 'status' | 'severity' | 'verdict'>
>;

/** bigint counters arrive as strings; they stay far below 2^53. */
export type RuleStatsRow = Pick<
  s.rule_stats.Selectable,
  'rule_id' | 'rule_name' | 'fired' | 'true_positives' | 'false_positives' | 'last_fired_at'
>;

export type IocStatsRow = Pick<
  s.ioc_stats.Selectable,
  'ioc_type' | 'ioc_value' | 'hits' | 'malicious_verdicts' | 'first_seen_at' | 'last_seen_at'
>;

export type DailyMetrics = ReportBody['daily'][number];
