import { useQuery } from '@tanstack/react-query';
import { ok, svc } from '../shared/api.ts';
import { Empty, QueryView } from '../shared/states.tsx';

const STATES = ['pending', 'provisioning', 'active', 'decommissioning', 'soft-deleted'] as const;

/** The console's landing page: every tenant by state, with its open incidents and reviews. */
export function FleetPage() {
  const fleet = useQuery({
    queryKey: ['mssp', 'fleet'],
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
        empty={<Empty title="No tenants yet." />}
      >
        {(data) => (
          <>
            <ul className="stats" aria-label="Tenants by state">
              {STATES.map((state) => (
                <li className="stat" key={state}>
                  <span className="stat-value">{data.tenants_by_state[state] ?? 0}</span>
                  <span className="stat-label">{state}</span>
                </li>
              ))}
            </ul>
            <div className="table-scroll">
              <table>
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
                      <td>{t.slug}</td>
                      <td>{t.state}</td>
                      <td>{t.open_incidents}</td>
                      <td>{t.pending_reviews}</td>
                      <td>{t.last_event_at ? new Date(t.last_event_at).toLocaleString() : '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
      </QueryView>
    </section>
  );
}
