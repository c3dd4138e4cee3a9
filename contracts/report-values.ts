import Type, { type TProperties } from 'typebox';

// The report figures both families answer (docs/reports.md "Figures"): the mssp_admin's
// cross-tenant rows (contracts/mssp/reports.ts) and the customer's own (contracts/tenant.ts).

function closed<P extends TProperties>(properties: P) {
  return Type.Object(properties, { additionalProperties: false });
}

/** UTC calendar periods; weeks start on Monday (ISO 8601). */
export const ReportPeriod = Type.Union([
  Type.Literal('day'),
  Type.Literal('week'),
  Type.Literal('month'),
]);

/** A UTC calendar day, YYYY-MM-DD; one the calendar lacks is refused as `invalid_report_date`. */
export const ReportDate = Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' });

const Count = Type.Integer({ minimum: 0 });
const Seconds = Type.Union([Type.Number({ minimum: 0 }), Type.Null()]);

/**
 * One period's figures for one tenant (docs/reports.md "Figures"). `from`..`to` (inclusive UTC
 * days) is the part of the period inside the requested range: the first and last periods of a
 * range that does not start or end on a period boundary are partial.
 */
export const ReportFigures = closed({
  period_start: ReportDate,
  from: ReportDate,
  to: ReportDate,
  alerts: Count,
  incidents_opened: Count,
  /** Investigations whose ending (closed or resolved, not reopened since) falls in the period. */
  incidents_closed: Count,
  incidents_resolved: Count,
  /** Of `incidents_closed`, closed by the pipeline on its own (`by: 'pipeline'`). */
  auto_closed: Count,
  /** auto_closed / incidents_closed; null when nothing closed. */
  auto_closed_share: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()]),
  /** Investigations first acknowledged in the period, and their mean time from opening. */
  acknowledged: Count,
  mean_time_to_acknowledge_seconds: Seconds,
  /** Mean time from opening to the ending, over the investigations closed or resolved. */
  mean_time_to_resolve_seconds: Seconds,
  /** Reviews decided in the period, and the waiting time (request to decision) p50/p95. */
  reviews_decided: Count,
  review_wait_p50_seconds: Seconds,
  review_wait_p95_seconds: Seconds,
  /** Reviews requested before the period's end and not decided by then. */
  reviews_waiting: Count,
  llm_cost_usd: Type.Number({ minimum: 0 }),
});
