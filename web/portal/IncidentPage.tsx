import { type InfiniteData, useQuery, useQueryClient } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link, useParams } from 'react-router-dom';
import { OWN_TENANT_EVENTS, useTenantEvents } from '../shared/events.ts';
import { Empty, QueryView } from '../shared/states.tsx';
import { findIncident, INCIDENTS_KEY, type IncidentRow } from './queries.ts';
import { SeverityTag } from './SeverityTag.tsx';
import { Time } from './Time.tsx';
import { STATUS_LABELS, VERDICT_LABELS } from './terms.ts';

type ListPage = { items: IncidentRow[]; next_cursor: string | null };

/** The row as a list already loaded it, so a click from the list shows it at once. */
function useListedIncident(id: string): { row: IncidentRow; at: number } | undefined {
  const queries = useQueryClient();
  for (const [key, data] of queries.getQueriesData<InfiniteData<ListPage>>({
    queryKey: [...INCIDENTS_KEY, 'list'],
  })) {
    const row = data?.pages.flatMap((p) => p.items).find((i) => i.id === id);
    if (row) return { row, at: queries.getQueryState(key)?.dataUpdatedAt ?? 0 };
  }
  return undefined;
}

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="field">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/**
 * One incident: every field the customer API gives it. There is no detail endpoint, so the
 * page shows the list's row (docs/web.md "Portal pages"); live events refresh it.
 */
export function IncidentPage() {
  const { incidentId = '' } = useParams();
  const listed = useListedIncident(incidentId);
  const incident = useQuery({
    queryKey: [...INCIDENTS_KEY, 'detail', incidentId],
    queryFn: () => findIncident(incidentId),
    ...(listed && { initialData: listed.row, initialDataUpdatedAt: listed.at }),
  });
  useTenantEvents(OWN_TENANT_EVENTS, [INCIDENTS_KEY]);
  return (
    <section>
      <p>
        <Link to="/incidents">← All incidents</Link>
      </p>
      <h1>
        {incident.data?.title ?? (incident.data === null ? 'Incident not found' : 'Incident')}
      </h1>
      <QueryView
        query={incident}
        isEmpty={(row) => row === null}
        empty={<Empty title="Your organisation has no incident at this address." />}
      >
        {(row) => row && <IncidentDetail row={row} />}
      </QueryView>
    </section>
  );
}

function IncidentDetail({ row }: { row: IncidentRow }) {
  return (
    <>
      {row.summary ? (
        <p className="summary">{row.summary}</p>
      ) : (
        <p className="hint">No summary yet.</p>
      )}
      <dl className="fields">
        <Field label="Severity">
          <SeverityTag severity={row.severity} />
        </Field>
        <Field label="Status">{STATUS_LABELS[row.status]}</Field>
        <Field label="Verdict">{row.verdict ? VERDICT_LABELS[row.verdict] : 'None yet'}</Field>
        <Field label="Alerts grouped">{row.alert_count}</Field>
        <Field label="Last alert">
          <Time at={row.last_alert_at} fallback="None" />
        </Field>
        <Field label="Opened">
          <Time at={row.opened_at} />
        </Field>
        <Field label="Updated">
          <Time at={row.updated_at} />
        </Field>
        <Field label="Resolved">
          <Time at={row.resolved_at} fallback="Not yet" />
        </Field>
        <Field label="Closed">
          <Time at={row.closed_at} fallback="Not yet" />
        </Field>
        <Field label="Source">{row.source ?? '–'}</Field>
        <Field label="Source reference">
          <span className="break">{row.source_ref ?? '–'}</span>
        </Field>
        <Field label="Reference">
          <code className="break">{row.id}</code>
        </Field>
      </dl>
    </>
  );
}
