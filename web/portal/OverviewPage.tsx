import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router-dom';
import { ok, svc } from '../shared/api.ts';
import { OWN_TENANT_EVENTS, useTenantEvents } from '../shared/events.ts';
import { QueryView } from '../shared/states.tsx';
import { OVERVIEW_KEY, REPORTS_KEY, reportsQuery } from './queries.ts';
import { ReportCharts } from './ReportCharts.tsx';
import { SEVERITIES, SEVERITY_LABELS, STATUS_LABELS } from './terms.ts';

/** The window of the landing page's charts; the Reports page offers others. */
const CHART_DAYS = 30;
const OPEN_STATUSES = ['open', 'triaging', 'awaiting_review'] as const;

function Stat({ label, value, to }: { label: string; value: number; to?: string }) {
  return (
    <li className="stat">
      <span className="stat-value">{value}</span>
      {to ? (
        <Link className="stat-label" to={to}>
          {label}
        </Link>
      ) : (
        <span className="stat-label">{label}</span>
      )}
    </li>
  );
}

/**
 * The portal's landing page: the tenant's numbers and the charts of its projections, kept
 * current by its event stream. The numbers lead to the incidents they count.
 */
export function OverviewPage() {
  const overview = useQuery({ queryKey: OVERVIEW_KEY, queryFn: () => ok(svc.tenant.overview()) });
  const reports = useQuery(reportsQuery(CHART_DAYS));
  useTenantEvents(OWN_TENANT_EVENTS, [OVERVIEW_KEY, REPORTS_KEY]);
  return (
    <section>
      <h1>Overview</h1>
      <QueryView query={overview}>
        {(data) => (
          <>
            <p className="hint">{data.tenant.display_name}</p>
            <ul className="stats" aria-label="Activity">
              <Stat label="Open investigations" value={data.open_investigations.total} />
              <Stat label="Pending reviews" value={data.pending_reviews} />
              <Stat label="Events, last 24 h" value={data.events_last_24h} />
              <Stat label="Resolved, last 7 days" value={data.resolved_last_7d} />
            </ul>
            <h2>Open investigations by severity</h2>
            <ul className="stats" aria-label="Open investigations by severity">
              {SEVERITIES.map((s) => (
                <Stat
                  key={s}
                  label={SEVERITY_LABELS[s]}
                  value={data.open_investigations.by_severity[s]}
                />
              ))}
            </ul>
            <h2>Open investigations by status</h2>
            <ul className="stats" aria-label="Open investigations by status">
              {OPEN_STATUSES.map((s) => (
                <Stat
                  key={s}
                  label={STATUS_LABELS[s]}
                  value={data.open_investigations.by_status[s]}
                  to={`/incidents?status=${s}`}
                />
              ))}
            </ul>
            <p className="hint">
              As of <time dateTime={data.as_of}>{new Date(data.as_of).toLocaleString()}</time>
            </p>
          </>
        )}
      </QueryView>
      <h2>Last {CHART_DAYS} days</h2>
      <QueryView query={reports}>{(report) => <ReportCharts report={report} />}</QueryView>
      <p>
        <Link to="/reports">All reports</Link>
      </p>
    </section>
  );
}
