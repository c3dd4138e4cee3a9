import type { Static } from 'typebox';
import type { Report } from '../../contracts/tenant.ts';
import { Chart } from '../shared/Chart.tsx';
import { SEVERITIES, SEVERITY_COLORS, SEVERITY_LABELS } from './terms.ts';

export type ReportData = Static<typeof Report>;

/** The counters the projections keep per hour (docs/projections.md, `metrics_hourly`). */
export const ALERTS = 'alerts.received';
export const OPENED = 'investigations.opened';

const ALERT_COLOR = '#2563eb';
const OPENED_COLOR = '#9333ea';
const RULE_COLOR = '#0d9488';

/** A UTC calendar day (YYYY-MM-DD) as the reader writes it, without a year: "Nov 20". */
export function dayLabel(date: string): string {
  return new Date(`${date}T00:00:00Z`).toLocaleDateString([], {
    month: 'short',
    day: 'numeric',
    timeZone: 'UTC',
  });
}

function alertsSummary(report: ReportData): string {
  const total = report.totals[ALERTS] ?? 0;
  if (total === 0) return `No alerts in the last ${report.days} days.`;
  const peak = report.daily.reduce((a, b) =>
    (b.metrics[ALERTS] ?? 0) > (a.metrics[ALERTS] ?? 0) ? b : a,
  );
  return `${total} alerts in the last ${report.days} days; the most, ${peak.metrics[ALERTS]}, on ${dayLabel(peak.date)}.`;
}

function rulesSummary(report: ReportData): string {
  const top = report.top_rules[0];
  if (!top) return 'No rule has fired yet.';
  return `Most fired: rule ${top.rule_id}${top.rule_name ? ` (${top.rule_name})` : ''}, ${top.fired} times.`;
}

function severitySummary(report: ReportData): string {
  const parts = SEVERITIES.map((s) => ({ s, n: report.totals[`alerts.${s}`] ?? 0 })).filter(
    (p) => p.n > 0,
  );
  if (parts.length === 0) return `No alerts in the last ${report.days} days.`;
  return parts.map((p) => `${SEVERITY_LABELS[p.s]} ${p.n}`).join(', ');
}

/**
 * The three charts of docs/web.md "Portal pages", from the projections: alerts over time (with the
 * investigations they opened), the rules that fire most, and the severity mix of the window.
 */
export function ReportCharts({ report }: { report: ReportData }) {
  const days = report.daily.map((d) => dayLabel(d.date));
  return (
    <div className="chart-grid">
      <Chart
        title={`Alerts per day, last ${report.days} days`}
        summary={alertsSummary(report)}
        kind="line"
        labels={days}
        labelHeader="Day (UTC)"
        series={[
          {
            label: 'Alerts',
            color: ALERT_COLOR,
            values: report.daily.map((d) => d.metrics[ALERTS] ?? 0),
          },
          {
            label: 'Investigations opened',
            color: OPENED_COLOR,
            values: report.daily.map((d) => d.metrics[OPENED] ?? 0),
          },
        ]}
      />
      <Chart
        title="Top rules, all time"
        summary={rulesSummary(report)}
        kind="bars"
        labels={report.top_rules.map((r) => r.rule_id)}
        labelHeader="Rule"
        series={[
          { label: 'Times fired', color: RULE_COLOR, values: report.top_rules.map((r) => r.fired) },
        ]}
      />
      <Chart
        title={`Alerts by severity, last ${report.days} days`}
        summary={severitySummary(report)}
        kind="bars"
        labels={SEVERITIES.map((s) => SEVERITY_LABELS[s])}
        labelHeader="Severity"
        series={[
          {
            label: 'Alerts',
            color: ALERT_COLOR,
            values: SEVERITIES.map((s) => report.totals[`alerts.${s}`] ?? 0),
            barColors: SEVERITIES.map((s) => SEVERITY_COLORS[s]),
          },
        ]}
      />
    </div>
  );
}
