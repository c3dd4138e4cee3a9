import type { TenantTx } from '../../db/tenant-context.ts';
import type { DailyMetrics, IocStatsRow, RuleStatsRow } from './investigation-types.ts';

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

/** Metric sums per UTC day for the `days` days ending with `lastDay` (YYYY-MM-DD). */
export async function dailyMetrics(
  tx: TenantTx,
  lastDay: string,
  days: number,
): Promise<DailyMetrics[]> {
  return (await tx.query<DailyMetrics>(DAILY, [lastDay, days])).rows;
}

// rule_stats and ioc_stats are running totals kept by the projections, not windowed.

export async function topRules(tx: TenantTx, limit: number): Promise<RuleStatsRow[]> {
  const { rows } = await tx.query<RuleStatsRow>(
    `SELECT rule_id, rule_name, fired, true_positives, false_positives, last_fired_at
       FROM rule_stats
      ORDER BY fired DESC, rule_id
      LIMIT $1`,
    [limit],
  );
  return rows;
}

export async function topIocs(tx: TenantTx, limit: number): Promise<IocStatsRow[]> {
  const { rows } = await tx.query<IocStatsRow>(
    `SELECT ioc_type, ioc_value, hits, malicious_verdicts, first_seen_at, last_seen_at
       FROM ioc_stats
      ORDER BY hits DESC, malicious_verdicts DESC, ioc_type, ioc_value
      LIMIT $1`,
    [limit],
  );
  return rows;
}
