import { useInfiniteQuery } from '@tanstack/react-query';
import { ok, svc } from '../shared/api.ts';
import { tenantEventsUrl, useTenantEvents } from '../shared/events.ts';
import { LoadMore } from '../shared/LoadMore.tsx';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, ErrorState, Loading } from '../shared/states.tsx';
import { TenantPicker, useTenantParam } from './TenantPicker.tsx';

const PAGE = 50;

/**
 * Incidents of one tenant at a time (`GET /api/mssp/tenants/{id}/incidents`): the API has no
 * cross-tenant incident list, so the fleet's counts are on the Fleet page and this page asks
 * for a tenant.
 */
export function IncidentsPage() {
  const [tenantId, choose] = useTenantParam();
  return (
    <section>
      <h1>Incidents</h1>
      <TenantPicker value={tenantId} onChange={choose} />
      {tenantId ? (
        <TenantIncidents tenantId={tenantId} />
      ) : (
        <Empty title="Choose a tenant to see its incidents." />
      )}
    </section>
  );
}

function TenantIncidents({ tenantId }: { tenantId: string }) {
  const key = ['mssp', 'incidents', tenantId];
  const incidents = useInfiniteQuery({
    queryKey: key,
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      ok(
        svc.mssp.tenantIncidents({
          params: { tenant_id: tenantId },
          query: { limit: PAGE, ...(pageParam ? { cursor: pageParam } : {}) },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  useTenantEvents(tenantEventsUrl(tenantId), [key]);
  if (incidents.isPending) return <Loading />;
  if (incidents.isError && !incidents.isFetchNextPageError) {
    return <ErrorState error={incidents.error} retry={() => void incidents.refetch()} />;
  }
  const items = incidents.data.pages.flatMap((p) => p.items);
  if (items.length === 0) return <Empty title="This tenant has no incidents." />;
  return (
    <>
      <ScrollTable label="Incidents, newest first">
        <caption className="visually-hidden">Incidents, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Incident</th>
            <th scope="col">Severity</th>
            <th scope="col">Status</th>
            <th scope="col">Verdict</th>
            <th scope="col">Alerts</th>
            <th scope="col">Opened</th>
            <th scope="col">Updated</th>
          </tr>
        </thead>
        <tbody>
          {items.map((i) => (
            <tr key={i.id}>
              <td className="wrap">{i.title}</td>
              <td>
                <span className={`severity severity-${i.severity}`}>{i.severity}</span>
              </td>
              <td>{i.status}</td>
              <td>{i.verdict ?? '—'}</td>
              <td>{i.alert_count}</td>
              <td>{new Date(i.opened_at).toLocaleString()}</td>
              <td>{new Date(i.updated_at).toLocaleString()}</td>
            </tr>
          ))}
        </tbody>
      </ScrollTable>
      <LoadMore query={incidents} shown={items.length} noun="incidents" />
    </>
  );
}
