import {
  type InfiniteData,
  type UseInfiniteQueryResult,
  useInfiniteQuery,
} from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link } from 'react-router-dom';
import type { Static } from 'typebox';
import type { msspContract } from '../../contracts/index.ts';
import { ok, svc } from '../shared/api.ts';
import { tenantEventsUrl, useTenantEvents } from '../shared/events.ts';
import { LoadMore } from '../shared/LoadMore.tsx';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, ErrorState, Loading } from '../shared/states.tsx';
import { msspKeys } from './query-keys.ts';
import { TenantPicker, useTenantParam } from './TenantPicker.tsx';

const PAGE = 50;

type Incident = Static<(typeof msspContract.tenantIncidents.responses)[200]>['items'][number];
type FleetIncident = Static<(typeof msspContract.allIncidents.responses)[200]>['items'][number];
interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/**
 * Incidents of every tenant (`GET /api/mssp/incidents`) with the tenant each belongs to, or of
 * the one tenant the picker narrows to (`GET /api/mssp/tenants/{id}/incidents`).
 */
export function IncidentsPage() {
  const [tenantId, choose] = useTenantParam();
  return (
    <section>
      <h1>Incidents</h1>
      <TenantPicker value={tenantId} onChange={choose} allLabel="All tenants" />
      {tenantId ? <TenantIncidents tenantId={tenantId} /> : <AllIncidents />}
    </section>
  );
}

function AllIncidents() {
  const incidents = useInfiniteQuery({
    queryKey: msspKeys.allIncidents(),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      ok(
        svc.mssp.allIncidents({
          query: { limit: PAGE, ...(pageParam ? { cursor: pageParam } : {}) },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
    // Cross-tenant: no single tenant stream covers it, so it is polled, as the fleet is.
    refetchInterval: 30_000,
  });
  return (
    <IncidentList<FleetIncident>
      query={incidents}
      empty="No tenant has incidents."
      tenantCell={(i) => <Link to={`/tenants/${i.tenant_id}`}>{i.tenant_slug}</Link>}
    />
  );
}

function TenantIncidents({ tenantId }: { tenantId: string }) {
  const key = msspKeys.tenantIncidents(tenantId);
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
  return <IncidentList<Incident> query={incidents} empty="This tenant has no incidents." />;
}

function IncidentList<T extends Incident>(props: {
  query: UseInfiniteQueryResult<InfiniteData<Page<T>>>;
  empty: string;
  /** The Tenant column, on the list across tenants only. */
  tenantCell?: (incident: T) => ReactNode;
}) {
  const { query, tenantCell } = props;
  if (query.isPending) return <Loading />;
  if (query.isError && !query.isFetchNextPageError) {
    return <ErrorState error={query.error} retry={() => void query.refetch()} />;
  }
  const items = query.data.pages.flatMap((p) => p.items);
  if (items.length === 0) return <Empty title={props.empty} />;
  return (
    <>
      <ScrollTable label="Incidents, newest first">
        <caption className="visually-hidden">Incidents, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Incident</th>
            {tenantCell && <th scope="col">Tenant</th>}
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
              {tenantCell && <td>{tenantCell(i)}</td>}
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
      <LoadMore query={query} shown={items.length} noun="incidents" />
    </>
  );
}
