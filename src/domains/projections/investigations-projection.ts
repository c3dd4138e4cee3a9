import type * as s from 'zapatos/schema';
import type { EventType } from '../../../contracts/event-types.ts';
import { isUuid } from '../../../contracts/uuid.ts';
import type { StoredEvent } from '../events/event-repository.ts';
import { alertSeverity, later, object, type PayloadObject, text } from './event-fields.ts';
import {
  type ChangeRow,
  type Fold,
  isSeverity,
  type ProjectionModule,
  SEVERITIES,
  type Severity,
  STATUSES,
  type Status,
  VERDICTS,
  type Verdict,
} from './projection-types.ts';

// The investigation read model (spec §2.3; docs/projections.md): opened by
// `investigation.opened`, counted by `alert.received`, moved by the triage pipeline's events.

type Row = s.investigations.JSONSelectable;

/**
 * A new (or, on a second `investigation.opened` for the same id, restarted) investigation row.
 */
export type InvestigationOpen = ChangeRow<
  Row,
  'id' | 'title' | 'severity' | 'source' | 'source_ref' | 'opened_at' | 'last_event_id'
> & { severity: Severity };

/** What a batch's alert.received events add to one investigation (`alerts`: to alert_count). */
export type InvestigationAlerts = ChangeRow<
  Row,
  'id' | 'severity' | 'last_alert_at' | 'last_event_id'
> & { severity: Severity; alerts: number };

/**
 * Where a batch's pipeline events leave an investigation that was in one status before the
 * batch. A timestamp key present sets the column (null clears it); absent leaves it.
 */
export type StatusOutcome = Partial<ChangeRow<Row, 'closed_at' | 'resolved_at'>> & {
  status: Status;
};

/**
 * What a batch's pipeline events (triage, reviews, closing, cases) do to one investigation.
 * A status move depends on the status before it, which only the table knows when the batch
 * starts, so the fold gives the outcome for every status the row may be in; the statement
 * picks the row's own. Verdict and summary do not depend on it: the latest readable one wins.
 */
export type InvestigationWorkflow = ChangeRow<
  Row,
  'id' | 'verdict' | 'summary' | 'updated_at' | 'last_event_id'
> & {
  verdict: Verdict | null;
  outcomes: Record<Status, StatusOutcome>;
  /** Present when the batch (un)assigned it: the last assignee, null for unassigned. */
  assignee?: { id: string | null };
  /** The analyst's last severity in the batch: it replaces the row's and pins it. */
  pinned_severity: Severity | null;
};

/**
 * One batch's changes, one entry per id. Investigations opened in the batch are written before
 * the alerts and pipeline events that follow them; those two go to the table in one statement.
 */
export interface InvestigationChanges {
  opened: InvestigationOpen[];
  alerts: InvestigationAlerts[];
  workflow: InvestigationWorkflow[];
}

const TITLE_MAX = 500;
const SUMMARY_MAX = 4000;

/** The triage pipeline's events on an investigation's own stream (docs/projections.md). */
const WORKFLOW_EVENTS: readonly EventType[] = [
  'triage.started',
  'triage.completed',
  'triage.failed',
  'enrichment.completed',
  'decision.made',
  'review.requested',
  'review.approved',
  'review.rejected',
  'investigation.closed',
  'case.opened',
  'action.failed',
  // The analyst's work (docs/investigations.md).
  'investigation.assigned',
  'note.added',
  'investigation.reopened',
  'investigation.severity_changed',
];
const VERDICT_EVENTS: ReadonlySet<string> = new Set([
  'triage.completed',
  'review.rejected',
  'investigation.closed',
]);

function isVerdict(value: unknown): value is Verdict {
  return typeof value === 'string' && (VERDICTS as readonly string[]).includes(value);
}

export function maxSeverity(a: Severity, b: Severity): Severity {
  return SEVERITIES.indexOf(a) >= SEVERITIES.indexOf(b) ? a : b;
}

/** A status move: what one event changes for a row in `from`; undefined when it stays. */
type Move = (from: Status) => Partial<StatusOutcome> | undefined;

/** Closed and resolved are final: only a rejected review that reopens leaves them. */
function isFinal(status: Status): boolean {
  return status === 'closed' || status === 'resolved';
}

function closing(at: string): Move {
  return (from) => (isFinal(from) ? undefined : { status: 'closed', closed_at: at });
}

function statusMove(type: string, payload: PayloadObject, at: string): Move | undefined {
  switch (type) {
    case 'triage.started':
      return (from) => (from === 'open' ? { status: 'triaging' } : undefined);
    case 'review.requested':
      return (from) => (isFinal(from) ? undefined : { status: 'awaiting_review' });
    case 'investigation.closed':
      return closing(at);
    case 'investigation.reopened':
      // Only a closed or resolved investigation reopens; it then carries no closing time.
      return (from) =>
        isFinal(from) ? { status: 'open', closed_at: null, resolved_at: null } : undefined;
    case 'case.opened':
      return (from) => (isFinal(from) ? undefined : { status: 'resolved', resolved_at: at });
    case 'action.failed':
      // The approved action did not happen: the investigation is the analysts' again.
      return (from) => (isFinal(from) ? undefined : { status: 'open' });
    case 'review.rejected':
      // A reopened investigation is open again, so it carries no closing or resolution time.
      return payload.reopen === true
        ? () => ({ status: 'open', closed_at: null, resolved_at: null })
        : closing(at);
    default:
      return undefined;
  }
}

function summaryOf(type: string, payload: PayloadObject): string | undefined {
  if (type === 'triage.completed')
    return text(payload.rationale, Number.POSITIVE_INFINITY)?.slice(0, SUMMARY_MAX);
  const failed =
    type === 'triage.failed'
      ? 'Triage failed'
      : type === 'action.failed'
        ? 'Approved action failed'
        : undefined;
  if (failed === undefined) return undefined;
  // A failure is worth showing even when its reason cannot be read.
  const reason = text(payload.reason, Number.POSITIVE_INFINITY);
  const summary = reason === undefined ? failed : `${failed}: ${reason}`;
  return summary.slice(0, SUMMARY_MAX);
}

/** The investigation a pipeline event is about: its payload says, else its own stream. */
function investigationOf(event: StoredEvent, payload: PayloadObject): string | undefined {
  if (isUuid(payload.investigation_id)) return payload.investigation_id.toLowerCase();
  return event.streamType === 'investigation' && isUuid(event.streamId)
    ? event.streamId.toLowerCase()
    : undefined;
}

function unmoved(id: string, at: string, eventId: string): InvestigationWorkflow {
  const outcomes = Object.fromEntries(STATUSES.map((s) => [s, { status: s }])) as Record<
    Status,
    StatusOutcome
  >;
  return {
    id,
    outcomes,
    verdict: null,
    summary: null,
    updated_at: at,
    last_event_id: eventId,
    pinned_severity: null,
  };
}

class InvestigationsFold implements Fold<InvestigationChanges> {
  readonly #opened = new Map<string, InvestigationOpen>();
  readonly #alerts = new Map<string, InvestigationAlerts>();
  readonly #workflow = new Map<string, InvestigationWorkflow>();

  add(event: StoredEvent): void {
    const payload = object(event.payload) ?? {};
    if (event.type === 'investigation.opened') this.#open(event, payload);
    else if (event.type === 'alert.received') this.#alert(event, payload);
    else this.#move(event, payload);
  }

  changes(): InvestigationChanges {
    return {
      opened: [...this.#opened.values()],
      alerts: [...this.#alerts.values()],
      workflow: [...this.#workflow.values()],
    };
  }

  #open(event: StoredEvent, payload: PayloadObject): void {
    const id = isUuid(payload.investigation_id) ? payload.investigation_id : event.streamId;
    const key = id.toLowerCase();
    // A second opening of the same id restarts the row; alerts folded before it are dropped
    // with it, exactly as the incremental fold of the same events would; so are the pipeline's
    // moves (the opening resets the workflow columns).
    this.#alerts.delete(key);
    this.#workflow.delete(key);
    this.#opened.set(key, {
      id: key,
      title: text(payload.title, Number.POSITIVE_INFINITY)?.slice(0, TITLE_MAX) ?? 'Untitled',
      severity: isSeverity(payload.severity) ? payload.severity : 'info',
      source: text(payload.source, 200) ?? null,
      source_ref: text(payload.source_ref, 500) ?? null,
      opened_at: event.occurredAt.toISOString(),
      last_event_id: event.id,
    });
  }

  #alert(event: StoredEvent, payload: PayloadObject): void {
    if (!isUuid(payload.investigation_id)) return;
    const id = payload.investigation_id.toLowerCase();
    const severity = alertSeverity(payload);
    const at = event.occurredAt.toISOString();
    const row = this.#alerts.get(id);
    if (row) {
      row.alerts += 1;
      row.severity = maxSeverity(row.severity, severity);
      row.last_alert_at = later(row.last_alert_at, at);
      row.last_event_id = event.id;
    } else {
      this.#alerts.set(id, { id, alerts: 1, severity, last_alert_at: at, last_event_id: event.id });
    }
  }

  /** One pipeline event, applied to every status the row may have been in before the batch. */
  #move(event: StoredEvent, payload: PayloadObject): void {
    const id = investigationOf(event, payload);
    if (id === undefined) return;
    const at = event.occurredAt.toISOString();
    const row = this.#workflow.get(id) ?? unmoved(id, at, event.id);
    const move = statusMove(event.type, payload, at);
    if (move)
      for (const outcome of Object.values(row.outcomes))
        Object.assign(outcome, move(outcome.status));
    if (VERDICT_EVENTS.has(event.type) && isVerdict(payload.verdict)) row.verdict = payload.verdict;
    if (event.type === 'investigation.assigned') {
      if (payload.assignee_id === null) row.assignee = { id: null };
      else if (isUuid(payload.assignee_id))
        row.assignee = { id: payload.assignee_id.toLowerCase() };
    }
    if (event.type === 'investigation.severity_changed' && isSeverity(payload.to))
      row.pinned_severity = payload.to;
    row.summary = summaryOf(event.type, payload) ?? row.summary;
    row.updated_at = later(row.updated_at, at);
    row.last_event_id = event.id;
    this.#workflow.set(id, row);
  }
}

// An opening (re)starts every event-derived column, the workflow ones (status, verdict,
// summary, resolved/closed, assignee, pinned severity) included, so a rebuild in place refolds
// them from the store.
const OPEN = `
  INSERT INTO investigations AS i (tenant_id, id, title, severity, status, source, source_ref,
                                   opened_at, updated_at, alert_count, last_alert_at, last_event_id)
  SELECT $1, r.id, r.title, r.severity, 'open', r.source, r.source_ref,
         r.opened_at, r.opened_at, 0, NULL, r.last_event_id
    FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, title text, severity text, source text,
         source_ref text, opened_at timestamptz, last_event_id bigint)
  ON CONFLICT (tenant_id, id) DO UPDATE
     SET title = excluded.title, severity = excluded.severity, source = excluded.source,
         source_ref = excluded.source_ref, opened_at = excluded.opened_at,
         updated_at = excluded.updated_at, alert_count = 0, last_alert_at = NULL,
         status = 'open', verdict = NULL, summary = NULL, resolved_at = NULL, closed_at = NULL,
         assignee_id = NULL, severity_pinned = false, last_event_id = excluded.last_event_id`;

// What alerts ($2) and pipeline events ($3) did to investigations, joined per id into one
// statement. A status move reads the row's status before it (r.outcomes -> i.status): every
// SET expression sees the old row. Where a side has no entry its columns are NULL and keep the
// row's value (greatest() ignores NULL; so does the severity comparison). An analyst's severity
// replaces the row's and pins it: alerts raise only an unpinned severity.
const ALERTS_AND_MOVES = `
  UPDATE investigations AS i
     SET alert_count = i.alert_count + coalesce(r.alerts, 0),
         severity = CASE
           WHEN r.pinned_severity IS NOT NULL THEN r.pinned_severity
           WHEN i.severity_pinned THEN i.severity
           WHEN array_position('{info,low,medium,high,critical}'::text[], r.severity)
              > array_position('{info,low,medium,high,critical}'::text[], i.severity)
           THEN r.severity ELSE i.severity END,
         severity_pinned = i.severity_pinned OR r.pinned_severity IS NOT NULL,
         assignee_id = CASE WHEN r.assignee ? 'id'
           THEN (r.assignee ->> 'id')::uuid ELSE i.assignee_id END,
         last_alert_at = greatest(i.last_alert_at, r.last_alert_at),
         status = coalesce((r.outcomes -> i.status) ->> 'status', i.status),
         closed_at = CASE WHEN (r.outcomes -> i.status) ? 'closed_at'
           THEN ((r.outcomes -> i.status) ->> 'closed_at')::timestamptz ELSE i.closed_at END,
         resolved_at = CASE WHEN (r.outcomes -> i.status) ? 'resolved_at'
           THEN ((r.outcomes -> i.status) ->> 'resolved_at')::timestamptz ELSE i.resolved_at END,
         verdict = coalesce(r.verdict, i.verdict),
         summary = coalesce(r.summary, i.summary),
         updated_at = greatest(i.updated_at, r.last_alert_at, r.updated_at),
         last_event_id = greatest(i.last_event_id, r.alert_event_id, r.workflow_event_id)
    FROM (SELECT id, a.alerts, a.severity, a.last_alert_at, a.last_event_id AS alert_event_id,
                 w.outcomes, w.verdict, w.summary, w.updated_at, w.assignee, w.pinned_severity,
                 w.last_event_id AS workflow_event_id
            FROM jsonb_to_recordset($2::jsonb) AS a(id uuid, alerts integer, severity text,
                 last_alert_at timestamptz, last_event_id bigint)
            FULL JOIN jsonb_to_recordset($3::jsonb) AS w(id uuid, outcomes jsonb, verdict text,
                 summary text, updated_at timestamptz, assignee jsonb, pinned_severity text,
                 last_event_id bigint) USING (id)) AS r
   WHERE i.tenant_id = $1 AND i.id = r.id`;

export const investigations: ProjectionModule<
  'investigations',
  InvestigationChanges,
  'investigations'
> = {
  name: 'investigations',
  table: 'investigations',
  key: ['id'],
  // pending_reviews refer to investigations: a rebuild keeps the rows and the openings reset
  // them (docs/projections.md "Rebuild").
  rebuild: 'in-place',
  events: new Set<EventType>(['investigation.opened', 'alert.received', ...WORKFLOW_EVENTS]),
  fold: () => new InvestigationsFold(),
  writes: [
    { label: 'projections.open', text: OPEN, rows: (c) => [c.opened] },
    {
      label: 'projections.investigations',
      text: ALERTS_AND_MOVES,
      rows: (c) => [c.alerts, c.workflow],
    },
  ],
};
