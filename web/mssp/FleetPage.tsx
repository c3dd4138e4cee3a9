import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router-dom';
import { ok, svc } from '../shared/api.ts';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, QueryView } from '../shared/states.tsx';
import { msspKeys } from './query-keys.ts';
import { TENANT_STATES } from './tenant-states.ts';

/** The console's landing page: every tenant by state, with its open incidents and reviews. */
export function FleetPage() {
  const fleet = useQuery({
    queryKey: msspKeys.fleet(),
    queryFn: () => ok(svc.mssp.fleetSummary()),
    // Cross-tenant: no single tenant stream covers it, so it is polled.
    refetchInterval: 30_000,
  });
  return (
    <section>
      <h1>Fleet</h1>
      <QueryView
        query={fleet}
        isEmpty={(data) => data.tenants.length === 0}
        empty={
          <Empty title="No tenants yet.">
            <p>
              <Link to="/tenants">Go to tenants</Link>
            </p>
          </Empty>
        }
      >
        {(data) => {
          const incidents = data.tenants.reduce((sum, t) => sum + t.open_incidents, 0);
          const reviews = data.tenants.reduce((sum, t) => sum + t.pending_reviews, 0);
          return (
            <>
              <h2>Tenants by state</h2>
              <ul className="stats" aria-label="Tenants by state">
                {TENANT_STATES.map((state) => (
                  <li className="stat" key={state}>
                    <span className="stat-value">{data.tenants_by_state[state] ?? 0}</span>
                    <span className="stat-label">{state}</span>
                  </li>
                ))}
              </ul>
              <h2>Work across the fleet</h2>
              <ul className="stats" aria-label="Work across the fleet">
                <li className="stat">
                  <span className="stat-value">{incidents}</span>
                  <span className="stat-label">open incidents</span>
                </li>
                <li className="stat">
                  <span className="stat-value">{reviews}</span>
                  <span className="stat-label">pending reviews</span>
                </li>
              </ul>
              <ScrollTable label="Tenants">
                <caption className="visually-hidden">Tenants</caption>
                <thead>
                  <tr>
                    <th scope="col">Tenant</th>
                    <th scope="col">State</th>
                    <th scope="col">Open incidents</th>
                    <th scope="col">Pending reviews</th>
                    <th scope="col">Last event</th>
                  </tr>
                </thead>
                <tbody>
                  {data.tenants.map((t) => (
                    <tr key={t.tenant_id}>
                      <td>
                        <Link to={`/tenants/${t.tenant_id}`}>{t.slug}</Link>
                      </td>
                      <td>{t.state}</td>
                      <td>
                        <Link
                          to={`/incidents?tenant=${t.tenant_id}`}
                          aria-label={`${t.open_incidents} open incidents of ${t.slug}`}
                        >
                          {t.open_incidents}
                        </Link>
                      </td>
                      <td>
                        <Link
                          to={`/reviews?tenant=${t.tenant_id}`}
                          aria-label={`${t.pending_reviews} pending reviews of ${t.slug}`}
                        >
                          {t.pending_reviews}
                        </Link>
                      </td>
                      <td>{t.last_event_at ? new Date(t.last_event_at).toLocaleString() : '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </ScrollTable>
            </>
          );
        }}
      </QueryView>
    </section>
  );
}
