import {
  type InfiniteData,
  type UseInfiniteQueryResult,
  useInfiniteQuery,
} from '@tanstack/react-query';
import { type ReactNode, useId } from 'react';
import { Link, useSearchParams } from 'react-router-dom';
import type { Static } from 'typebox';
import type { msspContract } from '../../contracts/index.ts';
import { ok, svc } from '../shared/api.ts';
import { useIdentity } from '../shared/auth.tsx';
import { tenantEventsUrl, useTenantEvents } from '../shared/events.ts';
import { LoadMore } from '../shared/LoadMore.tsx';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, ErrorState, Loading } from '../shared/states.tsx';
import { msspKeys } from './query-keys.ts';
import { TenantPicker, useTenantParam } from './TenantPicker.tsx';

const PAGE = 50;

type Incident = Static<(typeof msspContract.tenantIncidents.responses)[200]>['items'][number];
type FleetIncident = Static<(typeof msspContract.allIncidents.responses)[200]>['items'][number];
type Query = Static<NonNullable<typeof msspContract.tenantIncidents.query>>;
interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

const STATUSES = ['open', 'triaging', 'awaiting_review', 'resolved', 'closed'] as const;
const SEVERITIES = ['critical', 'high', 'medium', 'low', 'info'] as const;
const ASSIGNEES = { me: 'Assigned to me', none: 'Unassigned' } as const;
const DAY = 24 * 60 * 60 * 1000;
/** Age choices: which side of "now minus days" the opening time must fall. */
const AGES = {
  '1d': { label: 'Opened in the last 24 hours', days: 1, side: 'after' },
  '7d': { label: 'Opened in the last 7 days', days: 7, side: 'after' },
  'older-7d': { label: 'Opened more than 7 days ago', days: 7, side: 'before' },
  'older-30d': { label: 'Opened more than 30 days ago', days: 30, side: 'before' },
} as const;
type Age = keyof typeof AGES;

/** The list's filters as the URL keeps them, so a filtered list survives a reload. */
interface Filters {
  status?: (typeof STATUSES)[number];
  severity?: (typeof SEVERITIES)[number];
  assignee?: keyof typeof ASSIGNEES;
  age?: Age;
}
type FilterName = keyof Filters;

function oneOf<T extends string>(allowed: readonly T[], value: string | null): T | undefined {
  return allowed.find((a) => a === value);
}

function useFilters(): [Filters, (name: FilterName, value: string) => void] {
  const [params, setParams] = useSearchParams();
  const filters: Filters = {};
  const status = oneOf(STATUSES, params.get('status'));
  const severity = oneOf(SEVERITIES, params.get('severity'));
  const assignee = oneOf(
    Object.keys(ASSIGNEES) as (keyof typeof ASSIGNEES)[],
    params.get('assignee'),
  );
  const age = oneOf(Object.keys(AGES) as Age[], params.get('age'));
  if (status) filters.status = status;
  if (severity) filters.severity = severity;
  if (assignee) filters.assignee = assignee;
  if (age) filters.age = age;
  const set = (name: FilterName, value: string) =>
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        if (value) next.set(name, value);
        else next.delete(name);
        return next;
      },
      { replace: true },
    );
  return [filters, set];
}

/** The API's query for the filters; the age becomes a time bound when a page is fetched. */
function apiQuery(filters: Filters, cursor: string | undefined): Query {
  const { age, ...rest } = filters;
  const query: Query = { ...rest, limit: PAGE, ...(cursor ? { cursor } : {}) };
  if (age) {
    const bound = new Date(Date.now() - AGES[age].days * DAY).toISOString();
    if (AGES[age].side === 'after') query.opened_after = bound;
    else query.opened_before = bound;
  }
  return query;
}

/**
 * Incidents of every tenant (`GET /api/mssp/incidents`) with the tenant each belongs to, or of
 * the one tenant the picker narrows to (`GET /api/mssp/tenants/{id}/incidents`); filtered by
 * assignee, state, severity and age (all kept in the URL); each row opens the incident.
 */
export function IncidentsPage() {
  const [tenantId, choose] = useTenantParam();
  const [filters, set] = useFilters();
  return (
    <section>
      <h1>Incidents</h1>
      <TenantPicker value={tenantId} onChange={choose} allLabel="All tenants" />
      <FilterBar filters={filters} set={set} />
      {tenantId ? (
        <TenantIncidents tenantId={tenantId} filters={filters} />
      ) : (
        <AllIncidents filters={filters} />
      )}
    </section>
  );
}

function FilterBar({
  filters,
  set,
}: {
  filters: Filters;
  set: (name: FilterName, value: string) => void;
}) {
  const id = useId();
  const select = (
    name: FilterName,
    label: string,
    all: string,
    options: readonly (readonly [string, string])[],
  ) => (
    <div className="filter">
      <label htmlFor={`${id}-${name}`}>{label}</label>
      <select
        id={`${id}-${name}`}
        value={filters[name] ?? ''}
        onChange={(e) => set(name, e.target.value)}
      >
        <option value="">{all}</option>
        {options.map(([value, text]) => (
          <option key={value} value={value}>
            {text}
          </option>
        ))}
      </select>
    </div>
  );
  return (
    <fieldset className="filters plain">
      <legend className="visually-hidden">Filters</legend>
      {select('assignee', 'Assignee', 'Anyone or no one', Object.entries(ASSIGNEES))}
      {select(
        'status',
        'State',
        'Any state',
        STATUSES.map((s) => [s, s.replace('_', ' ')] as const),
      )}
      {select(
        'severity',
        'Severity',
        'Any severity',
        SEVERITIES.map((s) => [s, s] as const),
      )}
      {select(
        'age',
        'Age',
        'Any age',
        Object.entries(AGES).map(([k, v]) => [k, v.label] as const),
      )}
    </fieldset>
  );
}

function AllIncidents({ filters }: { filters: Filters }) {
  const incidents = useInfiniteQuery({
    queryKey: msspKeys.allIncidents(filters),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) => ok(svc.mssp.allIncidents({ query: apiQuery(filters, pageParam) })),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
    // Cross-tenant: no single tenant stream covers it, so it is polled, as the fleet is.
    refetchInterval: 30_000,
  });
  return (
    <IncidentList<FleetIncident>
      query={incidents}
      empty={
        Object.keys(filters).length > 0
          ? 'No incident matches these filters.'
          : 'No tenant has incidents.'
      }
      tenantOf={(i) => i.tenant_id}
      tenantCell={(i) => <Link to={`/tenants/${i.tenant_id}`}>{i.tenant_slug}</Link>}
    />
  );
}

function TenantIncidents({ tenantId, filters }: { tenantId: string; filters: Filters }) {
  const incidents = useInfiniteQuery({
    queryKey: msspKeys.tenantIncidents(tenantId, filters),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      ok(
        svc.mssp.tenantIncidents({
          params: { tenant_id: tenantId },
          query: apiQuery(filters, pageParam),
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  useTenantEvents(tenantEventsUrl(tenantId), [msspKeys.tenantIncidents(tenantId)]);
  return (
    <IncidentList<Incident>
      query={incidents}
      empty={
        Object.keys(filters).length > 0
          ? 'No incident of this tenant matches these filters.'
          : 'This tenant has no incidents.'
      }
      tenantOf={() => tenantId}
    />
  );
}

function IncidentList<T extends Incident>(props: {
  query: UseInfiniteQueryResult<InfiniteData<Page<T>>>;
  empty: string;
  tenantOf: (incident: T) => string;
  /** The Tenant column, on the list across tenants only. */
  tenantCell?: (incident: T) => ReactNode;
}) {
  const { query, tenantCell, tenantOf } = props;
  const me = useIdentity().user_id;
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
            <th scope="col">Assigned</th>
            <th scope="col">Alerts</th>
            <th scope="col">Opened</th>
            <th scope="col">Updated</th>
          </tr>
        </thead>
        <tbody>
          {items.map((i) => (
            <tr key={i.id}>
              <td className="wrap">
                <Link to={`/tenants/${tenantOf(i)}/incidents/${i.id}`}>{i.title}</Link>
              </td>
              {tenantCell && <td>{tenantCell(i)}</td>}
              <td>
                <span className={`severity severity-${i.severity}`}>{i.severity}</span>
              </td>
              <td>{i.status}</td>
              <td>{i.verdict ?? '—'}</td>
              <td>{i.assignee_id === null ? '—' : i.assignee_id === me ? 'You' : 'Someone'}</td>
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
