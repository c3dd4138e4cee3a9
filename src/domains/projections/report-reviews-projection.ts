import type * as s from 'zapatos/schema';
import { isUuid } from '../../../contracts/uuid.ts';
import type { StoredEvent } from '../events/event-repository.ts';
import { earlier, object } from './event-fields.ts';
import type { ChangeRow, Fold, ProjectionModule } from './projection-types.ts';

// One row per review for the reports' review SLA (docs/reports.md): when it was requested and
// when it was decided. Rows rather than a histogram: the percentiles are exact, and reviews are
// few (at most a handful per investigation).

type Decision = 'approved' | 'rejected';

export type ReportReviewDelta = ChangeRow<
  s.report_reviews.JSONSelectable,
  'review_id' | 'investigation_id' | 'requested_at' | 'decided_at' | 'decision' | 'last_event_id'
> & { decision: Decision | null };

class ReportReviewsFold implements Fold<ReportReviewDelta[]> {
  readonly #rows = new Map<string, ReportReviewDelta>();

  add(event: StoredEvent): void {
    const payload = object(event.payload) ?? {};
    if (!isUuid(payload.review_id)) return;
    const id = payload.review_id.toLowerCase();
    const at = event.occurredAt.toISOString();
    const row = this.#rows.get(id) ?? {
      review_id: id,
      investigation_id: null,
      requested_at: null,
      decided_at: null,
      decision: null,
      last_event_id: event.id,
    };
    row.last_event_id = event.id;
    if (event.type === 'review.requested') {
      row.requested_at = row.requested_at === null ? at : earlier(row.requested_at, at);
      const investigation = isUuid(payload.investigation_id)
        ? payload.investigation_id
        : event.streamType === 'investigation' && isUuid(event.streamId)
          ? event.streamId
          : undefined;
      row.investigation_id ??= investigation?.toLowerCase() ?? null;
    } else if (row.decided_at === null) {
      // A review is decided once; the first decision folded is the one.
      row.decided_at = at;
      row.decision = event.type === 'review.approved' ? 'approved' : 'rejected';
    }
    this.#rows.set(id, row);
  }

  changes(): ReportReviewDelta[] {
    return [...this.#rows.values()];
  }
}

// The first request and the first decision win: a row that has one keeps it.
const REVIEWS = `
  INSERT INTO report_reviews AS v (tenant_id, review_id, investigation_id, requested_at,
                                   decided_at, decision, last_event_id)
  SELECT $1, r.review_id, r.investigation_id, r.requested_at, r.decided_at, r.decision,
         r.last_event_id
    FROM jsonb_to_recordset($2::jsonb) AS r(review_id uuid, investigation_id uuid,
         requested_at timestamptz, decided_at timestamptz, decision text, last_event_id bigint)
  ON CONFLICT (tenant_id, review_id) DO UPDATE
     SET investigation_id = coalesce(v.investigation_id, excluded.investigation_id),
         requested_at = least(v.requested_at, excluded.requested_at),
         decided_at = coalesce(v.decided_at, excluded.decided_at),
         decision = coalesce(v.decision, excluded.decision),
         last_event_id = greatest(v.last_event_id, excluded.last_event_id)`;

export const reportReviews: ProjectionModule<
  'report_reviews',
  ReportReviewDelta[],
  'report_reviews'
> = {
  name: 'report_reviews',
  table: 'report_reviews',
  key: ['review_id'],
  rebuild: 'delete',
  events: new Set(['review.requested', 'review.approved', 'review.rejected']),
  fold: () => new ReportReviewsFold(),
  writes: [{ label: 'projections.report-reviews', text: REVIEWS, rows: (c) => [c] }],
};
