import { useQuery } from '@tanstack/react-query';
import { ok, svc } from '../shared/api.ts';
import { OWN_TENANT_EVENTS, useTenantEvents } from '../shared/events.ts';
import { QueryView } from '../shared/states.tsx';

const OVERVIEW = ['tenant', 'overview'] as const;
const SEVERITIES = ['critical', 'high', 'medium', 'low', 'info'] as const;

function Stat({ label, value }: { label: string; value: number }) {
  return (
    <li className="stat">
      <span className="stat-value">{value}</span>
      <span className="stat-label">{label}</span>
    </li>
  );
}

/** The portal's landing page: the tenant's numbers, kept current by its event stream. */
export function OverviewPage() {
  const overview = useQuery({
    queryKey: OVERVIEW,
    queryFn: () => ok(svc.tenant.overview()),
  });
  useTenantEvents(OWN_TENANT_EVENTS, [OVERVIEW]);
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
                <Stat key={s} label={s} value={data.open_investigations.by_severity[s]} />
              ))}
            </ul>
            <p className="hint">As of {new Date(data.as_of).toLocaleString()}</p>
          </>
        )}
      </QueryView>
    </section>
  );
}
