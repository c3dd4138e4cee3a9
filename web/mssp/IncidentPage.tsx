import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useId, useState } from 'react';
import { Link, useParams } from 'react-router-dom';
import type { Static } from 'typebox';
import { msspContract as M } from '../../contracts/index.ts';
import { ApiError, ok, svc } from '../shared/api.ts';
import { useIdentity } from '../shared/auth.tsx';
import { tenantEventsUrl, useTenantEvents } from '../shared/events.ts';
import { LoadMore } from '../shared/LoadMore.tsx';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, ErrorState, Loading, QueryView } from '../shared/states.tsx';
import { Timeline, type TimelineEntry, when, words } from '../shared/Timeline.tsx';
import { STALE_INCIDENT } from '../shared/texts.ts';
import './incident.css';
import { Modal } from './Modal.tsx';
import { msspKeys } from './query-keys.ts';
import { mayCall } from './roles.ts';

type Detail = Static<(typeof M.incident.responses)[200]>;
type Incident = Detail['incident'];
type Alert = Static<(typeof M.incidentAlerts.responses)[200]>['items'][number];
type Severity = Incident['severity'];
type CloseVerdict = Static<NonNullable<typeof M.closeIncident.body>>['verdict'];

const SEVERITIES: readonly Severity[] = ['info', 'low', 'medium', 'high', 'critical'];
const CLOSE_VERDICTS: readonly CloseVerdict[] = ['false_positive', 'benign', 'true_positive'];
const ALERT_PAGE = 50;

/**
 * One incident of one tenant (docs/investigations.md; docs/web.md "Console pages"): what it is,
 * who works it, its alerts, its timeline from the event store, its indicators, the incidents it
 * shares them with and its review; and the analyst's work on it. Every edit sends the
 * `version` the page shows, so an edit made on an outdated page is refused (409
 * `stale_version`) rather than overwriting what someone else did.
 */
export function IncidentPage() {
  const { tenantId = '', incidentId = '' } = useParams();
  const key = msspKeys.incident(tenantId, incidentId);
  const detail = useQuery({
    queryKey: key,
    queryFn: () => ok(svc.mssp.incident({ params: { tenant_id: tenantId, id: incidentId } })),
  });
  // Whatever the pipeline or another analyst appends to the tenant refreshes the page.
  useTenantEvents(tenantEventsUrl(tenantId), [key]);
  return (
    <section className="incident">
      <p>
        <Link to={`/incidents?tenant=${tenantId}`}>← Incidents of this tenant</Link>
      </p>
      <h1>{detail.data?.incident.title ?? 'Incident'}</h1>
      <QueryView query={detail}>{(d) => <IncidentView tenantId={tenantId} detail={d} />}</QueryView>
    </section>
  );
}

function IncidentView({ tenantId, detail }: { tenantId: string; detail: Detail }) {
  const { incident } = detail;
  return (
    <>
      <Facts tenantId={tenantId} incident={incident} />
      <Work tenantId={tenantId} incident={incident} />
      <Alerts tenantId={tenantId} incidentId={incident.id} />
      <IncidentTimeline timeline={detail.timeline} assignee={incident.assignee} />
      <NoteForm tenantId={tenantId} incident={incident} />
      <Iocs iocs={detail.iocs} />
      <Related tenantId={tenantId} related={detail.related} />
      <Review tenantId={tenantId} review={detail.review} />
    </>
  );
}

function TenantName({ tenantId }: { tenantId: string }) {
  const tenant = useQuery({
    queryKey: msspKeys.tenant(tenantId),
    queryFn: () => ok(svc.mssp.getTenant({ params: { tenant_id: tenantId } })),
  });
  return <Link to={`/tenants/${tenantId}`}>{tenant.data?.tenant.display_name ?? 'Tenant'}</Link>;
}

function Facts({ tenantId, incident }: { tenantId: string; incident: Incident }) {
  return (
    <dl className="facts">
      <dt>Tenant</dt>
      <dd>
        <TenantName tenantId={tenantId} />
      </dd>
      <dt>Status</dt>
      <dd>
        <span className="state-badge">{words(incident.status)}</span>
      </dd>
      <dt>Severity</dt>
      <dd>
        <span className={`severity severity-${incident.severity}`}>{incident.severity}</span>
        {incident.severity_pinned && ' (set by an analyst)'}
      </dd>
      <dt>Verdict</dt>
      <dd>{incident.verdict ? words(incident.verdict) : 'None yet'}</dd>
      <dt>Assignee</dt>
      <dd>{incident.assignee?.email ?? 'Unassigned'}</dd>
      <dt>Alerts</dt>
      <dd>{incident.alert_count}</dd>
      <dt>Opened</dt>
      <dd>{when(incident.opened_at)}</dd>
      <dt>Updated</dt>
      <dd>{when(incident.updated_at)}</dd>
      {incident.closed_at && (
        <>
          <dt>Closed</dt>
          <dd>{when(incident.closed_at)}</dd>
        </>
      )}
      {incident.summary && (
        <>
          <dt>Summary</dt>
          <dd className="wrap">{incident.summary}</dd>
        </>
      )}
      <dt>Reference</dt>
      <dd>
        <code>{incident.id}</code>
      </dd>
    </dl>
  );
}

// --- the analyst's work ---------------------------------------------------------------------

type Edit =
  | { route: 'assignIncident'; body: { assignee_id: string | null } }
  | { route: 'addIncidentNote'; body: { body: string; visibility: 'internal' | 'shared' } }
  | { route: 'closeIncident'; body: { verdict: CloseVerdict; reason: string } }
  | { route: 'reopenIncident'; body: { reason: string } }
  | { route: 'changeIncidentSeverity'; body: { severity: Severity; reason: string } };

/**
 * An edit of the incident at the version the page shows. The answer is the detail after the
 * edit, so the page shows it at once; the lists that show the incident are marked stale.
 */
function useEdit(tenantId: string, incident: Incident, onDone?: () => void) {
  const queries = useQueryClient();
  const key = msspKeys.incident(tenantId, incident.id);
  return useMutation({
    mutationFn: (edit: Edit) => {
      const params = { tenant_id: tenantId, id: incident.id };
      const version = incident.version;
      switch (edit.route) {
        case 'assignIncident':
          return ok(svc.mssp.assignIncident({ params, body: { ...edit.body, version } }));
        case 'addIncidentNote':
          return ok(svc.mssp.addIncidentNote({ params, body: { ...edit.body, version } }));
        case 'closeIncident':
          return ok(svc.mssp.closeIncident({ params, body: { ...edit.body, version } }));
        case 'reopenIncident':
          return ok(svc.mssp.reopenIncident({ params, body: { ...edit.body, version } }));
        case 'changeIncidentSeverity':
          return ok(svc.mssp.changeIncidentSeverity({ params, body: { ...edit.body, version } }));
      }
    },
    onSuccess: (answer) => {
      queries.setQueryData(key, answer);
      void queries.invalidateQueries({ queryKey: msspKeys.incidents() });
      void queries.invalidateQueries({ queryKey: msspKeys.fleet() });
      onDone?.();
    },
  });
}

function isStale(error: unknown): boolean {
  return (
    error instanceof ApiError && error.status === 409 && error.problem.code === 'stale_version'
  );
}

/**
 * An edit's refusal. A stale version says so and offers the current incident: nothing was
 * saved, and what the reader typed stays in the form to send again after the reload.
 */
function EditError({
  error,
  tenantId,
  incidentId,
  reset,
}: {
  error: unknown;
  tenantId: string;
  incidentId: string;
  reset: () => void;
}) {
  const queries = useQueryClient();
  if (!isStale(error)) return <ErrorState error={error} />;
  return (
    <div className="state state-error" role="alert">
      <p>{STALE_INCIDENT} Nothing was saved: reload it, then decide again.</p>
      <button
        type="button"
        onClick={() => {
          reset();
          void queries.invalidateQueries({ queryKey: msspKeys.incident(tenantId, incidentId) });
        }}
      >
        Reload the incident
      </button>
    </div>
  );
}

function Work({ tenantId, incident }: { tenantId: string; incident: Incident }) {
  const { role } = useIdentity();
  const closed = incident.status === 'closed' || incident.status === 'resolved';
  return (
    <section aria-labelledby="incident-work">
      <h2 id="incident-work">Work</h2>
      {mayCall(role, M.assignIncident) && <Assignment tenantId={tenantId} incident={incident} />}
      <div className="actions">
        {!closed && mayCall(role, M.closeIncident) && (
          <CloseForm tenantId={tenantId} incident={incident} />
        )}
        {closed && mayCall(role, M.reopenIncident) && (
          <ReopenForm tenantId={tenantId} incident={incident} />
        )}
        {mayCall(role, M.changeIncidentSeverity) && (
          <SeverityForm tenantId={tenantId} incident={incident} />
        )}
      </div>
    </section>
  );
}

/** Take it, give it to another MSSP user, or give it back. */
function Assignment({ tenantId, incident }: { tenantId: string; incident: Incident }) {
  const me = useIdentity();
  const id = useId();
  const [chosen, setChosen] = useState('');
  const edit = useEdit(tenantId, incident, () => setChosen(''));
  const users = useQuery({
    queryKey: msspKeys.users(),
    queryFn: () => ok(svc.mssp.listUsers()),
    enabled: mayCall(me.role, M.listUsers),
  });
  // Incidents are worked by MSSP staff only; a disabled account takes nothing.
  const staff = (users.data?.items ?? []).filter(
    (u) => u.role !== 'customer_viewer' && u.disabled_at === null && u.id !== incident.assignee?.id,
  );
  const assign = (assignee_id: string | null) =>
    edit.mutate({ route: 'assignIncident', body: { assignee_id } });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (chosen) assign(chosen);
  };
  return (
    <div className="action">
      <div className="actions">
        {incident.assignee?.id !== me.user_id && (
          <button type="button" className="primary" onClick={() => assign(me.user_id)}>
            Take
          </button>
        )}
        {incident.assignee && (
          <button type="button" onClick={() => assign(null)}>
            Unassign
          </button>
        )}
      </div>
      <form className="toolbar assign-form" onSubmit={submit} aria-label="Assign the incident">
        <label htmlFor={id}>Assign to</label>
        <select id={id} value={chosen} onChange={(e) => setChosen(e.target.value)}>
          <option value="">{users.isPending ? 'Loading users…' : 'Choose a user'}</option>
          {staff.map((u) => (
            <option key={u.id} value={u.id}>
              {u.display_name ? `${u.display_name} (${u.email})` : u.email}
            </option>
          ))}
        </select>
        <button type="submit" disabled={!chosen}>
          Assign
        </button>
      </form>
      {edit.isError && (
        <EditError
          error={edit.error}
          tenantId={tenantId}
          incidentId={incident.id}
          reset={edit.reset}
        />
      )}
    </div>
  );
}

/** A required reason: it goes into the timeline and the audit trail with the change. */
function ReasonField({
  id,
  value,
  onChange,
  missing,
}: {
  id: string;
  value: string;
  onChange: (value: string) => void;
  missing: boolean;
}) {
  return (
    <>
      <label htmlFor={`${id}-reason`}>Reason</label>
      <textarea
        id={`${id}-reason`}
        rows={2}
        maxLength={2000}
        required
        aria-invalid={missing || undefined}
        aria-describedby={missing ? `${id}-reason-error` : undefined}
        value={value}
        onChange={(e) => onChange(e.target.value)}
      />
      {missing && (
        <p id={`${id}-reason-error`} className="field-error" role="alert">
          Give a reason: it goes into the timeline and the audit trail.
        </p>
      )}
    </>
  );
}

/**
 * One edit that needs a reason, in a disclosure: `fields` before the reason, `send` with the
 * trimmed reason once there is one.
 */
function ReasonForm(props: {
  tenantId: string;
  incident: Incident;
  summary: string;
  label: string;
  submit: string;
  danger?: boolean;
  fields?: (id: string) => ReactNode;
  send: (reason: string) => Edit;
}) {
  const id = useId();
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const [missing, setMissing] = useState(false);
  const edit = useEdit(props.tenantId, props.incident, () => {
    setReason('');
    setOpen(false);
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!reason.trim()) {
      setMissing(true);
      return;
    }
    setMissing(false);
    edit.mutate(props.send(reason.trim()));
  };
  return (
    <details
      className="card action-form"
      open={open}
      onToggle={(e) => setOpen(e.currentTarget.open)}
    >
      <summary>{props.summary}</summary>
      <form onSubmit={submit} noValidate aria-label={props.label}>
        {props.fields?.(id)}
        <ReasonField id={id} value={reason} onChange={setReason} missing={missing} />
        {edit.isError && (
          <EditError
            error={edit.error}
            tenantId={props.tenantId}
            incidentId={props.incident.id}
            reset={edit.reset}
          />
        )}
        <div className="modal-actions">
          <button
            type="submit"
            className={props.danger ? 'danger' : 'primary'}
            aria-busy={edit.isPending}
            disabled={edit.isPending}
          >
            {props.submit}
          </button>
        </div>
      </form>
    </details>
  );
}

function CloseForm({ tenantId, incident }: { tenantId: string; incident: Incident }) {
  const [verdict, setVerdict] = useState<CloseVerdict>('false_positive');
  return (
    <ReasonForm
      tenantId={tenantId}
      incident={incident}
      summary="Close…"
      label="Close the incident"
      submit="Close incident"
      danger
      fields={(id) => (
        <>
          <label htmlFor={`${id}-verdict`}>Verdict</label>
          <select
            id={`${id}-verdict`}
            value={verdict}
            onChange={(e) => setVerdict(e.target.value as CloseVerdict)}
          >
            {CLOSE_VERDICTS.map((v) => (
              <option key={v} value={v}>
                {words(v)}
              </option>
            ))}
          </select>
        </>
      )}
      send={(reason) => ({ route: 'closeIncident', body: { verdict, reason } })}
    />
  );
}

function ReopenForm({ tenantId, incident }: { tenantId: string; incident: Incident }) {
  return (
    <ReasonForm
      tenantId={tenantId}
      incident={incident}
      summary="Reopen…"
      label="Reopen the incident"
      submit="Reopen incident"
      send={(reason) => ({ route: 'reopenIncident', body: { reason } })}
    />
  );
}

function SeverityForm({ tenantId, incident }: { tenantId: string; incident: Incident }) {
  const [severity, setSeverity] = useState<Severity>(incident.severity);
  return (
    <ReasonForm
      tenantId={tenantId}
      incident={incident}
      summary="Change severity…"
      label="Change the severity"
      submit="Change severity"
      fields={(id) => (
        <>
          <label htmlFor={`${id}-severity`}>Severity</label>
          <select
            id={`${id}-severity`}
            value={severity}
            onChange={(e) => setSeverity(e.target.value as Severity)}
          >
            {SEVERITIES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </>
      )}
      send={(reason) => ({ route: 'changeIncidentSeverity', body: { severity, reason } })}
    />
  );
}

/** A note in markdown: internal to the MSSP, or shared with the customer's portal. */
function NoteForm({ tenantId, incident }: { tenantId: string; incident: Incident }) {
  const { role } = useIdentity();
  const id = useId();
  const [body, setBody] = useState('');
  const [visibility, setVisibility] = useState<'internal' | 'shared'>('internal');
  const [missing, setMissing] = useState(false);
  const edit = useEdit(tenantId, incident, () => setBody(''));
  if (!mayCall(role, M.addIncidentNote)) return null;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!body.trim()) {
      setMissing(true);
      return;
    }
    setMissing(false);
    edit.mutate({ route: 'addIncidentNote', body: { body, visibility } });
  };
  return (
    <form onSubmit={submit} noValidate aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>Add a note</h3>
      <label htmlFor={`${id}-body`}>Note (markdown)</label>
      <textarea
        id={`${id}-body`}
        rows={4}
        maxLength={10000}
        required
        aria-invalid={missing || undefined}
        aria-describedby={missing ? `${id}-body-error` : `${id}-body-hint`}
        value={body}
        onChange={(e) => setBody(e.target.value)}
      />
      <p id={`${id}-body-hint`} className="hint">
        **bold**, *italic*, `code`, lists, &gt; quotes and [links](https://…). Notes cannot be
        edited or deleted.
      </p>
      {missing && (
        <p id={`${id}-body-error`} className="field-error" role="alert">
          Write the note first.
        </p>
      )}
      <fieldset className="plain">
        <legend>Visible to</legend>
        <label className="check">
          <input
            type="radio"
            name={`${id}-visibility`}
            checked={visibility === 'internal'}
            onChange={() => setVisibility('internal')}
          />
          Internal: MSSP staff only
        </label>
        <label className="check">
          <input
            type="radio"
            name={`${id}-visibility`}
            checked={visibility === 'shared'}
            onChange={() => setVisibility('shared')}
          />
          Shared with the customer
        </label>
      </fieldset>
      {edit.isError && (
        <EditError
          error={edit.error}
          tenantId={tenantId}
          incidentId={incident.id}
          reset={edit.reset}
        />
      )}
      <div className="modal-actions">
        <button
          type="submit"
          className="primary"
          aria-busy={edit.isPending}
          disabled={edit.isPending}
        >
          Add note
        </button>
      </div>
    </form>
  );
}

// --- what the incident is made of -------------------------------------------------------------

function Alerts({ tenantId, incidentId }: { tenantId: string; incidentId: string }) {
  const [raw, setRaw] = useState<Alert | undefined>();
  const alerts = useInfiniteQuery({
    queryKey: msspKeys.incidentAlerts(tenantId, incidentId),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      ok(
        svc.mssp.incidentAlerts({
          params: { tenant_id: tenantId, id: incidentId },
          query: { limit: ALERT_PAGE, ...(pageParam ? { cursor: pageParam } : {}) },
        }),
      ),
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
          <ScrollTable label="Alerts, newest first">
            <caption className="visually-hidden">Alerts, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Rule</th>
                <th scope="col">Agent</th>
                <th scope="col">Source</th>
                <th scope="col">Destination</th>
                <th scope="col">MITRE</th>
                <th scope="col">Document</th>
              </tr>
            </thead>
            <tbody>
              {items.map((a) => (
                <tr key={a.id}>
                  <td>{when(a.timestamp)}</td>
                  <td className="wrap">
                    {a.rule.id ?? '—'}
                    {a.rule.level !== null && ` (level ${a.rule.level})`}
                    {a.rule.description && (
                      <>
                        <br />
                        {a.rule.description}
                      </>
                    )}
                  </td>
                  <td>
                    {a.agent.name ?? a.agent.id ?? '—'}
                    {a.agent.ip && (
                      <>
                        <br />
                        {a.agent.ip}
                      </>
                    )}
                  </td>
                  <td>{endpoint(a.source)}</td>
                  <td>{endpoint(a.destination)}</td>
                  <td>{a.mitre.length > 0 ? a.mitre.join(', ') : '—'}</td>
                  <td>
                    <button
                      type="button"
                      aria-label={`Raw document of the alert of ${when(a.timestamp)}`}
                      onClick={() => setRaw(a)}
                    >
                      Raw
                    </button>
                  </td>
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
      <Modal open={raw !== undefined} title="Alert document" onClose={() => setRaw(undefined)}>
        {raw && <RawAlert tenantId={tenantId} incidentId={incidentId} alert={raw} />}
        <div className="modal-actions">
          <button type="button" onClick={() => setRaw(undefined)}>
            Close
          </button>
        </div>
      </Modal>
    </section>
  );
}

function endpoint(at: { ip: string | null; port: string | null }): string {
  if (!at.ip) return '—';
  return at.port ? `${at.ip}:${at.port}` : at.ip;
}

/** The full document of one alert, fetched only when asked for. */
function RawAlert({
  tenantId,
  incidentId,
  alert,
}: {
  tenantId: string;
  incidentId: string;
  alert: Alert;
}) {
  const doc = useQuery({
    queryKey: msspKeys.incidentAlert(tenantId, incidentId, alert.id),
    queryFn: () =>
      ok(
        svc.mssp.incidentAlert({
          params: { tenant_id: tenantId, id: incidentId, alert_id: alert.id },
        }),
      ),
  });
  return (
    <QueryView query={doc}>
      {(d) => (
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take focus
        <section className="evidence" tabIndex={0} aria-label="Alert document as JSON">
          <pre>{JSON.stringify(d.document, null, 2)}</pre>
        </section>
      )}
    </QueryView>
  );
}

/** Who did it: a person by email, the pipeline, or svc itself. */
function actorText(actor: TimelineEntry['actor']): string {
  if (actor.kind === 'user') return actor.email ?? 'A user no longer listed';
  return actor.kind === 'pipeline' ? 'Pipeline' : 'svc';
}

function IncidentTimeline({
  timeline,
  assignee,
}: {
  timeline: TimelineEntry[];
  assignee: Incident['assignee'];
}) {
  const { role } = useIdentity();
  // Assignees by email: the MSSP users the assignment form lists (one request for both).
  const users = useQuery({
    queryKey: msspKeys.users(),
    queryFn: () => ok(svc.mssp.listUsers()),
    enabled: mayCall(role, M.listUsers),
  });
  const person = (id: string) =>
    users.data?.items.find((u) => u.id === id)?.email ??
    (assignee?.id === id ? assignee.email : 'a user no longer listed');
  return (
    <section aria-labelledby="incident-timeline">
      <h2 id="incident-timeline">Timeline</h2>
      <Timeline entries={timeline} actor={actorText} person={person} />
    </section>
  );
}

function Iocs({ iocs }: { iocs: Detail['iocs'] }) {
  return (
    <section aria-labelledby="incident-iocs">
      <h2 id="incident-iocs">Indicators</h2>
      {iocs.length === 0 ? (
        <Empty title="No indicators were found in the alerts." />
      ) : (
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
            {iocs.map((i) => (
              <tr key={`${i.type}:${i.value}`}>
                <td>{i.type}</td>
                <td className="wrap">
                  <code>{i.value}</code>
                </td>
                <td>{i.alerts}</td>
                <td>{when(i.last_seen_at)}</td>
              </tr>
            ))}
          </tbody>
        </ScrollTable>
      )}
    </section>
  );
}

const RELATIONS = { shared_ioc: 'shared indicator', same_agent: 'same agent' } as const;

function Related({ tenantId, related }: { tenantId: string; related: Detail['related'] }) {
  return (
    <section aria-labelledby="incident-related">
      <h2 id="incident-related">Related incidents</h2>
      {related.length === 0 ? (
        <Empty title="No other incident shares an indicator or the agent." />
      ) : (
        <ul>
          {related.map((r) => (
            <li key={r.id}>
              <Link to={`/tenants/${tenantId}/incidents/${r.id}`}>{r.title}</Link>{' '}
              <span className={`severity severity-${r.severity}`}>{r.severity}</span>{' '}
              {words(r.status)}, {r.relations.map((k) => RELATIONS[k]).join(' and ')}, opened{' '}
              {when(r.opened_at)}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Review({ tenantId, review }: { tenantId: string; review: Detail['review'] }) {
  if (!review) return null;
  return (
    <section aria-labelledby="incident-review">
      <h2 id="incident-review">Review</h2>
      <dl className="facts">
        <dt>Proposed action</dt>
        <dd>{words(review.proposed_action)}</dd>
        <dt>Risk</dt>
        <dd>
          <span className={`severity severity-${review.risk}`}>{review.risk}</span>
        </dd>
        <dt>Requested</dt>
        <dd>
          {when(review.requested_at)} by {review.requested_by}
        </dd>
        <dt>Decision</dt>
        <dd>
          {review.decision
            ? `${review.decision} ${when(review.decided_at)}${review.decision_note ? `: ${review.decision_note}` : ''}`
            : 'Waiting'}
        </dd>
      </dl>
      <p className="wrap">{review.rationale}</p>
      {!review.decision && (
        <p>
          <Link to={`/reviews?tenant=${tenantId}`}>Decide it in the review queue</Link>
        </p>
      )}
    </section>
  );
}
