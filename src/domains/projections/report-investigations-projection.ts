import type * as s from 'zapatos/schema';
import type { EventType } from '../../../contracts/event-types.ts';
import { isUuid } from '../../../contracts/uuid.ts';
import type { StoredEvent } from '../events/event-repository.ts';
import { earlier, object, type PayloadObject } from './event-fields.ts';
import type { ChangeRow, Fold, ProjectionModule } from './projection-types.ts';

// What the reports read per investigation (docs/reports.md): when it opened, when an analyst
// first acted on it and how it ended. Served to the mean times, the opened/closed counts and the
// auto-closed share without scanning the event store.

type Row = s.report_investigations.JSONSelectable;
type EndedAs = 'closed' | 'resolved';
type EndedBy = 'pipeline' | 'review' | 'analyst';

/**
 * One batch's changes to one investigation. `reset`: a reopen happened in the batch, so the
 * ending is the batch's own (possibly none); otherwise the batch's first ending applies only
 * to a row that has none (closed and resolved are final until a reopen, as on the
 * investigations read model).
 */
export type ReportInvestigationDelta = ChangeRow<
  Row,
  | 'investigation_id'
  | 'opened_at'
  | 'acknowledged_at'
  | 'ended_at'
  | 'ended_as'
  | 'ended_by'
  | 'last_event_id'
> & { reset: boolean; ended_as: EndedAs | null; ended_by: EndedBy | null };

/**
 * The first analyst event on an investigation acknowledges it (docs/reports.md): taken by
 * someone, a note, a manual close, a reopen, a severity change or a review decision.
 */
function acknowledges(type: string, payload: PayloadObject): boolean {
  switch (type) {
    case 'investigation.assigned':
      return isUuid(payload.assignee_id);
    case 'investigation.closed':
      return payload.by === 'analyst';
    case 'note.added':
    case 'investigation.reopened':
    case 'investigation.severity_changed':
    case 'review.approved':
    case 'review.rejected':
      return true;
    default:
      return false;
  }
}

function endingOf(
  type: string,
  payload: PayloadObject,
): { as: EndedAs; by: EndedBy | null } | 'reopen' | undefined {
  switch (type) {
    case 'investigation.closed':
      return {
        as: 'closed',
        by:
          payload.by === 'pipeline' || payload.by === 'review' || payload.by === 'analyst'
            ? payload.by
            : null,
      };
    case 'case.opened':
      return { as: 'resolved', by: isUuid(payload.review_id) ? 'review' : 'pipeline' };
    case 'review.rejected':
      return payload.reopen === true ? 'reopen' : { as: 'closed', by: 'review' };
    case 'investigation.reopened':
      return 'reopen';
    default:
      return undefined;
  }
}

/** The investigation an event is about: its payload says, else its own stream. */
function investigationOf(event: StoredEvent, payload: PayloadObject): string | undefined {
  if (isUuid(payload.investigation_id)) return payload.investigation_id.toLowerCase();
  return event.streamType === 'investigation' && isUuid(event.streamId)
    ? event.streamId.toLowerCase()
    : undefined;
}

function minimum(a: string | null, b: string): string {
  return a === null ? b : earlier(a, b);
}

class ReportInvestigationsFold implements Fold<ReportInvestigationDelta[]> {
  readonly #rows = new Map<string, ReportInvestigationDelta>();

  add(event: StoredEvent): void {
    const payload = object(event.payload) ?? {};
    const id = investigationOf(event, payload);
    if (id === undefined) return;
    const at = event.occurredAt.toISOString();
    const row = this.#rows.get(id) ?? {
      investigation_id: id,
      opened_at: null,
      acknowledged_at: null,
      reset: false,
      ended_at: null,
      ended_as: null,
      ended_by: null,
      last_event_id: event.id,
    };
    row.last_event_id = event.id;
    if (event.type === 'investigation.opened') row.opened_at = minimum(row.opened_at, at);
    if (acknowledges(event.type, payload)) row.acknowledged_at = minimum(row.acknowledged_at, at);
    const ending = endingOf(event.type, payload);
    if (ending === 'reopen') {
      row.reset = true;
      row.ended_at = null;
      row.ended_as = null;
      row.ended_by = null;
    } else if (ending !== undefined && row.ended_at === null) {
      row.ended_at = at;
      row.ended_as = ending.as;
      row.ended_by = ending.by;
    }
    this.#rows.set(id, row);
  }

  changes(): ReportInvestigationDelta[] {
    return [...this.#rows.values()];
  }
}

const RECORDSET = `jsonb_to_recordset($2::jsonb) AS r(investigation_id uuid,
         opened_at timestamptz, acknowledged_at timestamptz, reset boolean, ended_at timestamptz,
         ended_as text, ended_by text, last_event_id bigint)`;

// Rows that exist: the earliest opening and acknowledgement win (least() ignores NULL); the
// ending follows the rule of ReportInvestigationDelta. Every SET expression sees the old row.
const UPDATE_EXISTING = `
  UPDATE report_investigations AS i
     SET opened_at = least(i.opened_at, r.opened_at),
         acknowledged_at = least(i.acknowledged_at, r.acknowledged_at),
         ended_at = CASE WHEN r.reset OR i.ended_at IS NULL THEN r.ended_at ELSE i.ended_at END,
         ended_as = CASE WHEN r.reset OR i.ended_at IS NULL THEN r.ended_as ELSE i.ended_as END,
         ended_by = CASE WHEN r.reset OR i.ended_at IS NULL THEN r.ended_by ELSE i.ended_by END,
         last_event_id = greatest(i.last_event_id, r.last_event_id)
    FROM ${RECORDSET}
   WHERE i.tenant_id = $1 AND i.investigation_id = r.investigation_id`;

// Rows the batch starts: the update above found none, so the batch's values are the row. Both
// statements are idempotent, so the order in which they meet an id does not matter.
const INSERT_NEW = `
  INSERT INTO report_investigations (tenant_id, investigation_id, opened_at, acknowledged_at,
                                     ended_at, ended_as, ended_by, last_event_id)
  SELECT $1, r.investigation_id, r.opened_at, r.acknowledged_at, r.ended_at, r.ended_as,
         r.ended_by, r.last_event_id
    FROM ${RECORDSET}
  ON CONFLICT (tenant_id, investigation_id) DO NOTHING`;

const EVENTS: EventType[] = [
  'investigation.opened',
  'investigation.assigned',
  'note.added',
  'investigation.closed',
  'investigation.reopened',
  'investigation.severity_changed',
  'review.approved',
  'review.rejected',
  'case.opened',
];

export const reportInvestigations: ProjectionModule<
  'report_investigations',
  ReportInvestigationDelta[],
  'report_investigations'
> = {
  name: 'report_investigations',
  table: 'report_investigations',
  key: ['investigation_id'],
  rebuild: 'delete',
  events: new Set(EVENTS),
  fold: () => new ReportInvestigationsFold(),
  writes: [
    { label: 'projections.report-investigations.update', text: UPDATE_EXISTING, rows: (c) => [c] },
    { label: 'projections.report-investigations.insert', text: INSERT_NEW, rows: (c) => [c] },
  ],
};
