import { useInfiniteQuery } from '@tanstack/react-query';
import { useId } from 'react';
import { Link, useSearchParams } from 'react-router-dom';
import { OWN_TENANT_EVENTS, useTenantEvents } from '../shared/events.ts';
import { LoadMore } from '../shared/LoadMore.tsx';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, QueryView } from '../shared/states.tsx';
import { INCIDENTS_KEY, type IncidentFilter, incidentsPage } from './queries.ts';
import { SeverityTag } from './SeverityTag.tsx';
import { Time } from './Time.tsx';
import {
  oneOf,
  SEVERITIES,
  SEVERITY_LABELS,
  type Severity,
  STATUS_LABELS,
  STATUSES,
  type Status,
} from './terms.ts';

/** The filters live in the URL, so a filtered list can be bookmarked, shared and reloaded. */
function useIncidentFilter(): [IncidentFilter, (name: 'status' | 'severity', v: string) => void] {
  const [params, setParams] = useSearchParams();
  const status = oneOf(STATUSES, params.get('status'));
  const severity = oneOf(SEVERITIES, params.get('severity'));
  const filter: IncidentFilter = { ...(status && { status }), ...(severity && { severity }) };
  const set = (name: 'status' | 'severity', value: string) =>
    setParams((current) => {
      const next = new URLSearchParams(current);
      if (value) next.set(name, value);
      else next.delete(name);
      return next;
    });
  return [filter, set];
}

function FilterSelect<T extends string>(props: {
  label: string;
  value: T | undefined;
  options: readonly T[];
  labels: Record<T, string>;
  onChange: (value: string) => void;
}) {
  const id = useId();
  return (
    <div className="filter">
      <label htmlFor={id}>{props.label}</label>
      <select id={id} value={props.value ?? ''} onChange={(e) => props.onChange(e.target.value)}>
        <option value="">Any</option>
        {props.options.map((o) => (
          <option key={o} value={o}>
            {props.labels[o]}
          </option>
        ))}
      </select>
    </div>
  );
}

/**
 * The tenant's incidents (investigations), newest first, filtered by status and severity and
 * paged with the API's cursors. The tenant's event stream keeps the loaded pages current.
 */
export function IncidentsPage() {
  const [filter, setFilter] = useIncidentFilter();
  const incidents = useInfiniteQuery({
    queryKey: [...INCIDENTS_KEY, 'list', filter],
    queryFn: ({ pageParam }) => incidentsPage(filter, pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  useTenantEvents(OWN_TENANT_EVENTS, [INCIDENTS_KEY]);
  const filtered = filter.status !== undefined || filter.severity !== undefined;
  return (
    <section>
      <h1>Incidents</h1>
      <search className="filters" aria-label="Filter incidents">
        <FilterSelect<Status>
          label="Status"
          value={filter.status}
          options={STATUSES}
          labels={STATUS_LABELS}
          onChange={(v) => setFilter('status', v)}
        />
        <FilterSelect<Severity>
          label="Severity"
          value={filter.severity}
          options={SEVERITIES}
          labels={SEVERITY_LABELS}
          onChange={(v) => setFilter('severity', v)}
        />
      </search>
      <QueryView
        query={incidents}
        isEmpty={(data) => data.pages[0]?.items.length === 0}
        empty={
          <Empty title={filtered ? 'No incidents match these filters.' : 'No incidents yet.'}>
            {!filtered && (
              <p>Incidents appear here when alerts from your environment are investigated.</p>
            )}
          </Empty>
        }
      >
        {(data) => {
          const rows = data.pages.flatMap((p) => p.items);
          return (
            <>
              <ScrollTable label="Incidents">
                <thead>
                  <tr>
                    <th scope="col">Incident</th>
                    <th scope="col">Severity</th>
                    <th scope="col">Status</th>
                    <th scope="col">Alerts</th>
                    <th scope="col">Opened</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((i) => (
                    <tr key={i.id}>
                      <td className="cell-title">
                        <Link to={`/incidents/${i.id}`}>{i.title}</Link>
                      </td>
                      <td>
                        <SeverityTag severity={i.severity} />
                      </td>
                      <td>{STATUS_LABELS[i.status]}</td>
                      <td>{i.alert_count}</td>
                      <td>
                        <Time at={i.opened_at} />
                      </td>
                      <td>
                        <Time at={i.updated_at} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </ScrollTable>
              <LoadMore query={incidents} shown={rows.length} noun="incidents" />
            </>
          );
        }}
      </QueryView>
    </section>
  );
}
