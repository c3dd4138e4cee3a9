import type { Static } from 'typebox';
import type { Report } from '../../../contracts/tenant.ts';
import type { Transaction } from '../../db/tenant-context.ts';

type ReportBody = Static<typeof Report>;

export const DEFAULT_DAYS = 7;
/** How many rules and indicators the report ranks. */
export const TOP = 10;

// One row per UTC day of the window, oldest first; days without data carry '{}'. metrics_hourly
// buckets are hour-aligned, so a bucket falls wholly inside one day.
const DAILY = `
  WITH days AS (
    SELECT $1::date - n AS day FROM generate_series(0, $2::int - 1) AS n
  ), sums AS (
    SELECT (bucket AT TIME ZONE 'UTC')::date AS day, metric, sum(value) AS total
      FROM metrics_hourly
     WHERE bucket >= ($1::date - ($2::int - 1))::timestamp AT TIME ZONE 'UTC'
       AND bucket < ($1::date + 1)::timestamp AT TIME ZONE 'UTC'
     GROUP BY 1, 2
  )
  SELECT to_char(days.day, 'YYYY-MM-DD') AS date,
         coalesce(jsonb_object_agg(sums.metric, sums.total)
                  FILTER (WHERE sums.metric IS NOT NULL), '{}') AS metrics
    FROM days LEFT JOIN sums USING (day)
   GROUP BY days.day
   ORDER BY days.day`;

// rule_stats and ioc_stats are running totals kept by the projections, not windowed.
const TOP_RULES = `
  SELECT rule_id, rule_name, fired, true_positives, false_positives, last_fired_at
    FROM rule_stats
   ORDER BY fired DESC, rule_id
   LIMIT $1`;

const TOP_IOCS = `
  SELECT ioc_type, ioc_value, hits, malicious_verdicts, first_seen_at, last_seen_at
    FROM ioc_stats
   ORDER BY hits DESC, malicious_verdicts DESC, ioc_type, ioc_value
   LIMIT $1`;

// bigint counters arrive as strings; they stay far below 2^53.
interface RuleRow {
  rule_id: string;
  rule_name: string | null;
  fired: string;
  true_positives: string;
  false_positives: string;
  last_fired_at: Date | null;
}

interface IocRow {
  ioc_type: string;
  ioc_value: string;
  hits: string;
  malicious_verdicts: string;
  first_seen_at: Date;
  last_seen_at: Date;
}

type Daily = ReportBody['daily'];

function sumMetrics(daily: Daily): ReportBody['totals'] {
  const totals: ReportBody['totals'] = {};
  for (const day of daily) {
    for (const [metric, value] of Object.entries(day.metrics)) {
      totals[metric] = (totals[metric] ?? 0) + value;
    }
  }
  return totals;
}

function toRule(row: RuleRow): ReportBody['top_rules'][number] {
  return {
    ...row,
    fired: Number(row.fired),
    true_positives: Number(row.true_positives),
    false_positives: Number(row.false_positives),
    last_fired_at: row.last_fired_at?.toISOString() ?? null,
  };
}

function toIoc(row: IocRow): ReportBody['top_iocs'][number] {
  return {
    ...row,
    hits: Number(row.hits),
    malicious_verdicts: Number(row.malicious_verdicts),
    first_seen_at: row.first_seen_at.toISOString(),
    last_seen_at: row.last_seen_at.toISOString(),
  };
}

/** The report of the transaction's tenant over the `days` UTC days ending with `now`'s day. */
export async function readReport(tx: Transaction, now: Date, days: number): Promise<ReportBody> {
  const today = now.toISOString().slice(0, 10);
  const daily = await tx.query<Daily[number]>(DAILY, [today, days]);
  const rules = await tx.query<RuleRow>(TOP_RULES, [TOP]);
  const iocs = await tx.query<IocRow>(TOP_IOCS, [TOP]);
  return {
    days,
    from: daily.rows[0]?.date ?? today,
    to: today,
    daily: daily.rows,
    totals: sumMetrics(daily.rows),
    top_rules: rules.rows.map(toRule),
    top_iocs: iocs.rows.map(toIoc),
  };
}
