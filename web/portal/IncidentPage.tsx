import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link, useParams } from 'react-router-dom';
import type { Static } from 'typebox';
import type { IncidentDetail } from '../../contracts/tenant.ts';
import { ApiError } from '../shared/api.ts';
import { OWN_TENANT_EVENTS, useTenantEvents } from '../shared/events.ts';
import { LoadMore } from '../shared/LoadMore.tsx';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, ErrorState, Loading, QueryView } from '../shared/states.tsx';
import { Timeline, type TimelineEntry } from '../shared/Timeline.tsx';
import {
  INCIDENTS_KEY,
  incidentAlertsKey,
  incidentAlertsPage,
  incidentDetail,
  incidentKey,
} from './queries.ts';
import { SeverityTag } from './SeverityTag.tsx';
import { Time } from './Time.tsx';
import { STATUS_LABELS, VERDICT_LABELS } from './terms.ts';

type Detail = Static<typeof IncidentDetail>;
type Row = Detail['incident'];

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="field">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** An address that names no incident of this tenant: 404, or 400 for an id that is no UUID. */
function isNotFound(error: unknown): boolean {
  return error instanceof ApiError && (error.status === 404 || error.status === 400);
}

/**
 * One incident as the customer may see it (`GET /api/tenant/incidents/{id}`; docs/investigations.md
 * "What the customer sees"): its fields, what happened (the timeline with the notes the MSSP
 * shared; internal notes never reach this API), its alerts and indicators. Live events refresh it.
 */
export function IncidentPage() {
  const { incidentId = '' } = useParams();
  const incident = useQuery({
    queryKey: incidentKey(incidentId),
    queryFn: () => incidentDetail(incidentId),
  });
  useTenantEvents(OWN_TENANT_EVENTS, [INCIDENTS_KEY]);
  const missing = incident.isError && isNotFound(incident.error);
  return (
    <section>
      <p>
        <Link to="/incidents">← All incidents</Link>
      </p>
      <h1>{incident.data?.incident.title ?? (missing ? 'Incident not found' : 'Incident')}</h1>
      {missing ? (
        <Empty title="Your organisation has no incident at this address." />
      ) : (
        <QueryView query={incident}>{(d) => <IncidentView detail={d} />}</QueryView>
      )}
    </section>
  );
}

/** Who did it, as the customer reads it: people are "Your security team" (no identities). */
function actorText(actor: TimelineEntry['actor']): string {
  if (actor.kind === 'user') return 'Your security team';
  return actor.kind === 'pipeline' ? 'Automatic triage' : 'The platform';
}

function IncidentView({ detail }: { detail: Detail }) {
  const row = detail.incident;
  return (
    <>
      {row.summary ? (
        <p className="summary">{row.summary}</p>
      ) : (
        <p className="hint">No summary yet.</p>
      )}
      <Fields row={row} />
      <section aria-labelledby="incident-timeline">
        <h2 id="incident-timeline">What happened</h2>
        <Timeline entries={detail.timeline} actor={actorText} />
      </section>
      <Alerts id={row.id} />
      {detail.iocs.length > 0 && (
        <section aria-labelledby="incident-iocs">
          <h2 id="incident-iocs">Indicators</h2>
          <ScrollTable label="Indicators">
            <thead>
              <tr>
                <th scope="col">Type</th>
                <th scope="col">Value</th>
                <th scope="col">Alerts</th>
                <th scope="col">Last seen</th>
              </tr>
            </thead>
            <tbody>
              {detail.iocs.map((i) => (
                <tr key={`${i.type}:${i.value}`}>
                  <td>{i.type}</td>
                  <td>
                    <code className="break">{i.value}</code>
                  </td>
                  <td>{i.alerts}</td>
                  <td>
                    <Time at={i.last_seen_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </ScrollTable>
        </section>
      )}
      {detail.related.length > 0 && (
        <section aria-labelledby="incident-related">
          <h2 id="incident-related">Related incidents</h2>
          <ul>
            {detail.related.map((r) => (
              <li key={r.id}>
                <Link to={`/incidents/${r.id}`}>{r.title}</Link>{' '}
                <SeverityTag severity={r.severity} /> {STATUS_LABELS[r.status]}
              </li>
            ))}
          </ul>
        </section>
      )}
    </>
  );
}

function Fields({ row }: { row: Row }) {
  return (
    <dl className="fields">
      <Field label="Severity">
        <SeverityTag severity={row.severity} />
      </Field>
      <Field label="Status">{STATUS_LABELS[row.status]}</Field>
      <Field label="Verdict">{row.verdict ? VERDICT_LABELS[row.verdict] : 'None yet'}</Field>
      <Field label="Being worked on">{row.assigned ? 'Yes' : 'Not yet'}</Field>
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
  );
}

function Alerts({ id }: { id: string }) {
  const alerts = useInfiniteQuery({
    queryKey: incidentAlertsKey(id),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) => incidentAlertsPage(id, pageParam),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  let body: ReactNode;
  if (alerts.isPending) body = <Loading />;
  else if (alerts.isError && !alerts.isFetchNextPageError) {
    body = <ErrorState error={alerts.error} retry={() => void alerts.refetch()} />;
  } else {
    const items = alerts.data?.pages.flatMap((p) => p.items) ?? [];
    body =
      items.length === 0 ? (
        <Empty title="No alerts are stored for this incident." />
      ) : (
        <>
          <ScrollTable label="Alerts of this incident">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Rule</th>
                <th scope="col">Agent</th>
                <th scope="col">Source</th>
                <th scope="col">Destination</th>
              </tr>
            </thead>
            <tbody>
              {items.map((a) => (
                <tr key={a.id}>
                  <td>
                    <Time at={a.timestamp} />
                  </td>
                  <td className="break">{a.rule.description ?? a.rule.id ?? '–'}</td>
                  <td>{a.agent.name ?? a.agent.id ?? '–'}</td>
                  <td>{a.source.ip ?? '–'}</td>
                  <td>{a.destination.ip ?? '–'}</td>
                </tr>
              ))}
            </tbody>
          </ScrollTable>
          <LoadMore query={alerts} shown={items.length} noun="alerts" />
        </>
      );
  }
  return (
    <section aria-labelledby="incident-alerts">
      <h2 id="incident-alerts">Alerts</h2>
      {body}
    </section>
  );
}
