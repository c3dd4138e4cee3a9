import { useQuery } from '@tanstack/react-query';
import { useId } from 'react';
import { useSearchParams } from 'react-router-dom';
import { OWN_TENANT_EVENTS, useTenantEvents } from '../shared/events.ts';
import { duration, share } from '../shared/report-format.ts';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, QueryView } from '../shared/states.tsx';
import { REPORTS_KEY, reportsQuery } from './queries.ts';
import { ALERTS, dayLabel, OPENED, ReportCharts, type ReportData } from './ReportCharts.tsx';
import { Time } from './Time.tsx';

/** The windows offered; the API takes any 1–90 days (docs/api-tenant.md). */
const WINDOWS = [7, 14, 30, 90] as const;
const DEFAULT_DAYS = 7;

function useWindow(): [number, (days: string) => void] {
  const [params, setParams] = useSearchParams();
  const asked = Number(params.get('days'));
  const days = WINDOWS.find((w) => w === asked) ?? DEFAULT_DAYS;
  return [days, (value) => setParams({ days: value })];
}

/**
 * Reports (GET /api/tenant/reports): the daily rollups of the projections over a chosen
 * window, as charts and as tables, and the running rankings of rules and indicators.
 */
export function ReportsPage() {
  const [days, setDays] = useWindow();
  const report = useQuery(reportsQuery(days));
  useTenantEvents(OWN_TENANT_EVENTS, [REPORTS_KEY]);
  const selectId = useId();
  return (
    <section>
      <h1>Reports</h1>
      <div className="filters">
        <div className="filter">
          <label htmlFor={selectId}>Period</label>
          <select id={selectId} value={days} onChange={(e) => setDays(e.target.value)}>
            {WINDOWS.map((w) => (
              <option key={w} value={w}>
                Last {w} days
              </option>
            ))}
          </select>
        </div>
      </div>
      <QueryView query={report}>{(data) => <Report data={data} />}</QueryView>
    </section>
  );
}

function Report({ data }: { data: ReportData }) {
  return (
    <>
      <p className="hint">
        {dayLabel(data.from)} to {dayLabel(data.to)} (UTC days, today included)
      </p>
      <ul className="stats" aria-label="Totals of the period">
        <li className="stat">
          <span className="stat-value">{data.totals[ALERTS] ?? 0}</span>
          <span className="stat-label">Alerts</span>
        </li>
        <li className="stat">
          <span className="stat-value">{data.totals[OPENED] ?? 0}</span>
          <span className="stat-label">Investigations opened</span>
        </li>
      </ul>
      <ReportCharts report={data} />
      <h2>Response</h2>
      <ScrollTable label={`Response per ${data.period}`}>
        <thead>
          <tr>
            <th scope="col">
              {data.period === 'day' ? 'Day' : data.period === 'week' ? 'Week from' : 'Month from'}
            </th>
            <th scope="col">Incidents opened</th>
            <th scope="col">Closed</th>
            <th scope="col">Resolved</th>
            <th scope="col">Closed automatically</th>
            <th scope="col">Mean time to acknowledge</th>
            <th scope="col">Mean time to resolve</th>
          </tr>
        </thead>
        <tbody>
          {data.figures.map((f) => (
            <tr key={f.period_start}>
              <td>{dayLabel(f.from)}</td>
              <td>{f.incidents_opened}</td>
              <td>{f.incidents_closed}</td>
              <td>{f.incidents_resolved}</td>
              <td>{share(f.auto_closed_share)}</td>
              <td>{duration(f.mean_time_to_acknowledge_seconds)}</td>
              <td>{duration(f.mean_time_to_resolve_seconds)}</td>
            </tr>
          ))}
        </tbody>
      </ScrollTable>
      <h2>Top rules</h2>
      {data.top_rules.length === 0 ? (
        <Empty title="No rule has fired yet." />
      ) : (
        <ScrollTable label="Top rules">
          <thead>
            <tr>
              <th scope="col">Rule</th>
              <th scope="col">Description</th>
              <th scope="col">Fired</th>
              <th scope="col">True positives</th>
              <th scope="col">False positives</th>
              <th scope="col">Last fired</th>
            </tr>
          </thead>
          <tbody>
            {data.top_rules.map((r) => (
              <tr key={r.rule_id}>
                <td>{r.rule_id}</td>
                <td className="cell-title">{r.rule_name ?? '–'}</td>
                <td>{r.fired}</td>
                <td>{r.true_positives}</td>
                <td>{r.false_positives}</td>
                <td>
                  <Time at={r.last_fired_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </ScrollTable>
      )}
      <h2>Top indicators</h2>
      {data.top_iocs.length === 0 ? (
        <Empty title="No indicators seen yet." />
      ) : (
        <ScrollTable label="Top indicators">
          <thead>
            <tr>
              <th scope="col">Type</th>
              <th scope="col">Value</th>
              <th scope="col">Hits</th>
              <th scope="col">Malicious verdicts</th>
              <th scope="col">First seen</th>
              <th scope="col">Last seen</th>
            </tr>
          </thead>
          <tbody>
            {data.top_iocs.map((i) => (
              <tr key={`${i.ioc_type} ${i.ioc_value}`}>
                <td>{i.ioc_type}</td>
                <td className="cell-title">
                  <code className="break">{i.ioc_value}</code>
                </td>
                <td>{i.hits}</td>
                <td>{i.malicious_verdicts}</td>
                <td>
                  <Time at={i.first_seen_at} />
                </td>
                <td>
                  <Time at={i.last_seen_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </ScrollTable>
      )}
      <p className="hint">
        Rankings count every alert since monitoring began, not only this period.
      </p>
    </>
  );
}
