import { useInfiniteQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import type { Static } from 'typebox';
import { contract } from '../../contracts/index.ts';
import type { ReportPeriod, TenantReportRow } from '../../contracts/mssp/reports.ts';
import { ok, svc } from '../shared/api.ts';
import { Chart } from '../shared/Chart.tsx';
import { LoadMore } from '../shared/LoadMore.tsx';
import { duration, share } from '../shared/report-format.ts';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, ErrorState, Loading } from '../shared/states.tsx';
import { msspKeys } from './query-keys.ts';
import { useTenantChoices } from './TenantPicker.tsx';

type Period = Static<typeof ReportPeriod>;
type Row = Static<typeof TenantReportRow>;

const PAGE = 200;
const PERIODS: readonly { value: Period; label: string }[] = [
  { value: 'day', label: 'Day' },
  { value: 'week', label: 'Week (from Monday)' },
  { value: 'month', label: 'Month' },
];
const OPENED_COLOR = '#9333ea';
const CLOSED_COLOR = '#0d9488';
const ALERT_COLOR = '#2563eb';
const COST_COLOR = '#c2410c';

interface Query {
  period: Period;
  from?: string;
  to?: string;
  tenant_id?: string;
}

function usd(value: number): string {
  return `$${value.toFixed(2)}`;
}

/**
 * The API's own CSV export of the same query (every page at once): a plain download link, so
 * the browser fetches it with the session cookie and names it from Content-Disposition.
 */
function exportUrl(query: Query): string {
  const params = new URLSearchParams({
    period: query.period,
    ...(query.from && { from: query.from }),
    ...(query.to && { to: query.to }),
    ...(query.tenant_id && { tenant_id: query.tenant_id }),
    format: 'csv',
  });
  return `${contract.mssp.reports.path}?${params}`;
}

/** The fleet's figures per period (every tenant loaded so far added up), for the charts. */
function perPeriod(rows: readonly Row[]) {
  const periods = [...new Set(rows.map((r) => r.period_start))].sort();
  const sum = (period: string, key: 'alerts' | 'incidents_opened' | 'incidents_closed') =>
    rows.filter((r) => r.period_start === period).reduce((total, r) => total + r[key], 0);
  return {
    periods,
    alerts: periods.map((p) => sum(p, 'alerts')),
    opened: periods.map((p) => sum(p, 'incidents_opened')),
    closed: periods.map((p) => sum(p, 'incidents_closed')),
  };
}

function perTenantCost(rows: readonly Row[]) {
  const costs = new Map<string, number>();
  for (const r of rows) costs.set(r.tenant_slug, (costs.get(r.tenant_slug) ?? 0) + r.llm_cost_usd);
  return [...costs.entries()].sort(([a], [b]) => a.localeCompare(b));
}

function Charts({ rows, period }: { rows: readonly Row[]; period: Period }) {
  const fleet = perPeriod(rows);
  const costs = perTenantCost(rows);
  const opened = fleet.opened.reduce((a, b) => a + b, 0);
  const closed = fleet.closed.reduce((a, b) => a + b, 0);
  const alerts = fleet.alerts.reduce((a, b) => a + b, 0);
  const total = costs.reduce((sum, [, c]) => sum + c, 0);
  const top = costs.reduce<[string, number] | undefined>(
    (best, entry) => (best === undefined || entry[1] > best[1] ? entry : best),
    undefined,
  );
  return (
    <div className="chart-grid">
      <Chart
        title={`Incidents and alerts per ${period}, all tenants shown`}
        summary={`${alerts} alerts, ${opened} incidents opened and ${closed} closed.`}
        kind="line"
        labels={fleet.periods}
        labelHeader={`${period[0]?.toUpperCase()}${period.slice(1)} (UTC)`}
        series={[
          { label: 'Alerts', color: ALERT_COLOR, values: fleet.alerts },
          { label: 'Incidents opened', color: OPENED_COLOR, values: fleet.opened },
          { label: 'Incidents closed', color: CLOSED_COLOR, values: fleet.closed },
        ]}
      />
      <Chart
        title="LLM cost per tenant (USD)"
        summary={
          top === undefined || total === 0
            ? 'No LLM cost in this range.'
            : `${usd(total)} in all; the most, ${usd(top[1])}, for ${top[0]}.`
        }
        kind="bars"
        labels={costs.map(([slug]) => slug)}
        labelHeader="Tenant"
        series={[
          {
            label: 'LLM cost (USD)',
            color: COST_COLOR,
            values: costs.map(([, c]) => Math.round(c * 100) / 100),
          },
        ]}
      />
    </div>
  );
}

/**
 * Cross-tenant reports (GET /api/mssp/reports; docs/reports.md): per tenant and UTC period,
 * charts of the fleet, a table of every tenant's figures and the API's CSV export.
 */
export function ReportsPage() {
  const tenants = useTenantChoices();
  const [draft, setDraft] = useState<Query>({ period: 'day' });
  const [query, setQuery] = useState<Query>({ period: 'day' });
  const report = useInfiniteQuery({
    queryKey: msspKeys.reports(query),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      ok(
        svc.mssp.reports({
          query: { ...query, limit: PAGE, ...(pageParam ? { cursor: pageParam } : {}) },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const apply = (event: FormEvent) => {
    event.preventDefault();
    setQuery({
      period: draft.period,
      ...(draft.from && { from: draft.from }),
      ...(draft.to && { to: draft.to }),
      ...(draft.tenant_id && { tenant_id: draft.tenant_id }),
    });
  };
  const rows = report.data?.pages.flatMap((p) => p.items) ?? [];
  const first = report.data?.pages[0];

  return (
    <section>
      <h1>Reports</h1>
      <form className="filters" onSubmit={apply} noValidate aria-label="Report range">
        <div className="filter">
          <label htmlFor="report-period">Period</label>
          <select
            id="report-period"
            value={draft.period}
            onChange={(e) => setDraft((d) => ({ ...d, period: e.target.value as Period }))}
          >
            {PERIODS.map((p) => (
              <option key={p.value} value={p.value}>
                {p.label}
              </option>
            ))}
          </select>
        </div>
        <div className="filter">
          <label htmlFor="report-from">From (UTC day)</label>
          <input
            id="report-from"
            type="date"
            value={draft.from ?? ''}
            onChange={(e) => setDraft((d) => ({ ...d, from: e.target.value }))}
          />
        </div>
        <div className="filter">
          <label htmlFor="report-to">To (UTC day)</label>
          <input
            id="report-to"
            type="date"
            value={draft.to ?? ''}
            onChange={(e) => setDraft((d) => ({ ...d, to: e.target.value }))}
          />
        </div>
        <div className="filter">
          <label htmlFor="report-tenant">Tenant</label>
          <select
            id="report-tenant"
            value={draft.tenant_id ?? ''}
            onChange={(e) => setDraft((d) => ({ ...d, tenant_id: e.target.value }))}
          >
            <option value="">All tenants</option>
            {tenants.data?.items.map((t) => (
              <option key={t.id} value={t.id}>
                {t.slug}
              </option>
            ))}
          </select>
        </div>
        <div className="filter filter-actions">
          <button type="submit">Show report</button>
        </div>
      </form>
      <p className="exports">
        <a href={exportUrl(query)} download>
          Export CSV
        </a>
      </p>
      {report.isPending ? (
        <Loading />
      ) : report.isError && !report.isFetchNextPageError ? (
        <ErrorState error={report.error} retry={() => void report.refetch()} />
      ) : rows.length === 0 ? (
        <Empty title="No tenant to report on." />
      ) : (
        <>
          {first && (
            <p className="hint">
              {first.from} to {first.to}, UTC; weeks start on Monday. A period cut by the range
              counts only its days inside it.
            </p>
          )}
          <Charts rows={rows} period={query.period} />
          <ScrollTable label="Figures per tenant and period">
            <caption className="visually-hidden">Figures per tenant and period</caption>
            <thead>
              <tr>
                <th scope="col">Tenant</th>
                <th scope="col">Period</th>
                <th scope="col">Alerts</th>
                <th scope="col">Opened</th>
                <th scope="col">Closed</th>
                <th scope="col">Resolved</th>
                <th scope="col">Auto-closed</th>
                <th scope="col">Mean time to acknowledge</th>
                <th scope="col">Mean time to resolve</th>
                <th scope="col">Review wait p50</th>
                <th scope="col">Review wait p95</th>
                <th scope="col">Reviews waiting</th>
                <th scope="col">LLM cost</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={`${r.tenant_id} ${r.period_start}`}>
                  <td>{r.tenant_slug}</td>
                  <td>{r.from === r.to ? r.from : `${r.from} – ${r.to}`}</td>
                  <td>{r.alerts}</td>
                  <td>{r.incidents_opened}</td>
                  <td>{r.incidents_closed}</td>
                  <td>{r.incidents_resolved}</td>
                  <td>{share(r.auto_closed_share)}</td>
                  <td>{duration(r.mean_time_to_acknowledge_seconds)}</td>
                  <td>{duration(r.mean_time_to_resolve_seconds)}</td>
                  <td>{duration(r.review_wait_p50_seconds)}</td>
                  <td>{duration(r.review_wait_p95_seconds)}</td>
                  <td>{r.reviews_waiting}</td>
                  <td>{usd(r.llm_cost_usd)}</td>
                </tr>
              ))}
            </tbody>
          </ScrollTable>
          <LoadMore query={report} shown={rows.length} noun="rows" />
        </>
      )}
    </section>
  );
}
