import { prepared } from '../../db/prepared.ts';
import type { SystemTx, TenantTx } from '../../db/tenant-context.ts';
import type { ReportPosition, ReportRange, TenantReport } from './report-types.ts';

/**
 * The report's one query (docs/reports.md "Figures"), over projections only: `metrics_hourly`
 * (alerts), `report_investigations`, `report_reviews` (sql/0030) and the LLM ledger
 * `llm_usage` (one row per tenant and UTC day, written as calls settle). One row per tenant
 * and period, tenant by tenant; the page is cut first (`keys`), so the figures are computed
 * for the page's rows only, each from the tenant-led indexes of its tables.
 *
 * Times are seconds, rounded to the millisecond (percentile_cont interpolates in float8).
 *
 * $1 period (day|week|month), $2 first day, $3 last day (inclusive), $4 one tenant or null,
 * $5/$6 the position to resume after (tenant id, period start) or nulls, $7 rows or null (all).
 */
const REPORT = `
  WITH periods AS (
    SELECT p::date AS period_start,
           greatest(p::date, $2::date) AS first_day,
           least((p + ('1 ' || $1)::interval)::date, $3::date + 1) AS end_day
      FROM generate_series(date_trunc($1, $2::date::timestamp), $3::date::timestamp,
                           ('1 ' || $1)::interval) AS p
  ), keys AS (
    SELECT t.id AS tenant_id, t.slug AS tenant_slug, t.display_name AS tenant_name, p.*
      FROM tenants t CROSS JOIN periods p
     WHERE t.state <> 'soft-deleted' AND ($4::uuid IS NULL OR t.id = $4)
       AND ($5::uuid IS NULL OR (t.id, p.period_start) > ($5::uuid, $6::date))
     ORDER BY t.id, p.period_start
     LIMIT $7
  )
  SELECT k.tenant_id, k.tenant_slug, k.tenant_name,
         to_char(k.period_start, 'YYYY-MM-DD') AS period_start,
         to_char(k.first_day, 'YYYY-MM-DD') AS "from",
         to_char(k.end_day - 1, 'YYYY-MM-DD') AS "to",
         a.alerts, o.opened AS incidents_opened,
         e.closed AS incidents_closed, e.resolved AS incidents_resolved, e.auto AS auto_closed,
         CASE WHEN e.closed > 0 THEN e.auto::float8 / e.closed END AS auto_closed_share,
         ack.acknowledged, round(ack.mean, 3)::float8 AS mean_time_to_acknowledge_seconds,
         round(e.mean, 3)::float8 AS mean_time_to_resolve_seconds,
         rv.decided AS reviews_decided, round(rv.p50::numeric, 3)::float8 AS review_wait_p50_seconds,
         round(rv.p95::numeric, 3)::float8 AS review_wait_p95_seconds, w.waiting AS reviews_waiting,
         l.cost AS llm_cost_usd
    FROM keys k
   CROSS JOIN LATERAL (SELECT k.first_day::timestamp AT TIME ZONE 'UTC' AS lo,
                              k.end_day::timestamp AT TIME ZONE 'UTC' AS hi) b
   CROSS JOIN LATERAL (
     SELECT coalesce(sum(m.value), 0)::bigint AS alerts FROM metrics_hourly m
      WHERE m.tenant_id = k.tenant_id AND m.metric = 'alerts.received'
        AND m.bucket >= b.lo AND m.bucket < b.hi) a
   CROSS JOIN LATERAL (
     SELECT count(*)::int AS opened FROM report_investigations i
      WHERE i.tenant_id = k.tenant_id AND i.opened_at >= b.lo AND i.opened_at < b.hi) o
   CROSS JOIN LATERAL (
     SELECT count(*)::int AS acknowledged,
            avg(greatest(extract(epoch FROM i.acknowledged_at - i.opened_at), 0)) AS mean
       FROM report_investigations i
      WHERE i.tenant_id = k.tenant_id AND i.acknowledged_at >= b.lo AND i.acknowledged_at < b.hi
        AND i.opened_at IS NOT NULL) ack
   CROSS JOIN LATERAL (
     SELECT count(*) FILTER (WHERE i.ended_as = 'closed')::int AS closed,
            count(*) FILTER (WHERE i.ended_as = 'resolved')::int AS resolved,
            count(*) FILTER (WHERE i.ended_as = 'closed' AND i.ended_by = 'pipeline')::int AS auto,
            avg(greatest(extract(epoch FROM i.ended_at - i.opened_at), 0)) AS mean
       FROM report_investigations i
      WHERE i.tenant_id = k.tenant_id AND i.ended_at >= b.lo AND i.ended_at < b.hi) e
   CROSS JOIN LATERAL (
     SELECT count(*)::int AS decided,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY wait)::float8 AS p50,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY wait)::float8 AS p95
       FROM (SELECT greatest(extract(epoch FROM r.decided_at - r.requested_at), 0) AS wait
               FROM report_reviews r
              WHERE r.tenant_id = k.tenant_id AND r.decided_at >= b.lo AND r.decided_at < b.hi
                AND r.requested_at IS NOT NULL) d) rv
   CROSS JOIN LATERAL (
     SELECT count(*)::int AS waiting FROM report_reviews r
      WHERE r.tenant_id = k.tenant_id AND r.requested_at < b.hi
        AND (r.decided_at IS NULL OR r.decided_at >= b.hi)) w
   CROSS JOIN LATERAL (
     SELECT coalesce(sum(u.cost_usd), 0)::float8 AS cost FROM llm_usage u
      WHERE u.tenant_id = k.tenant_id AND u.day >= k.first_day AND u.day < k.end_day) l
   ORDER BY k.tenant_id, k.period_start`;

type Row = TenantReport & { alerts: string | number };

function params(
  range: ReportRange,
  tenantId: string | null,
  after: ReportPosition | undefined,
  limit: number | null,
): unknown[] {
  return [
    range.period,
    range.from,
    range.to,
    tenantId,
    after?.tenantId ?? null,
    after?.periodStart ?? null,
    limit,
  ];
}

function toReport(row: Row): TenantReport {
  return { ...row, alerts: Number(row.alerts) };
}

/**
 * Every tenant's rows (or one tenant's), through the system gate: `limit` rows after `after`,
 * or all of them with `limit` null (the CSV export; the range bounds its size).
 */
export async function readFleetReport(
  tx: SystemTx,
  range: ReportRange,
  filter: { tenantId?: string | undefined; after?: ReportPosition; limit: number | null },
): Promise<TenantReport[]> {
  const { rows } = await tx.query<Row>(
    prepared(
      'reports.fleet',
      REPORT,
      params(range, filter.tenantId ?? null, filter.after, filter.limit),
    ),
  );
  return rows.map(toReport);
}

/** One tenant's rows under its own RLS context (the customer's /api/tenant/reports). */
export async function readTenantReport(
  tx: TenantTx,
  tenantId: string,
  range: ReportRange,
): Promise<TenantReport[]> {
  const { rows } = await tx.query<Row>(
    prepared('reports.tenant', REPORT, params(range, tenantId, undefined, null)),
  );
  return rows.map(toReport);
}
