import { type KeysetPage, type KeysetRequest, keyset, toKeysetPage } from '../../db/keyset.ts';
import { prepared } from '../../db/prepared.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import type {
  IncidentSummary,
  Review,
  ReviewDecision,
  TenantIncidentFilters,
} from './triage-types.ts';

/** SQL on `pending_reviews`, tenant-scoped: every function runs under RLS. */

const REVIEW_COLUMNS = `id, investigation_id, proposed_action, action_params, rationale, evidence, risk,
  confidence, requested_by, requested_at, expires_at, decision, decided_by, decided_at, decision_note`;

/**
 * Reviews awaiting a decision, oldest first, a keyset page at a time
 * (pending_reviews_tenant_open_idx). The explicit tenant beside RLS gives the planner the index.
 */
export async function listOpenReviews(
  tx: TenantTx,
  tenantId: string,
  page: KeysetRequest,
): Promise<KeysetPage<Review>> {
  const k = keyset('requested_at', page, 2, 'id', 'asc');
  const { rows } = await tx.query<Review & { sort_key: string }>(
    prepared(
      'triage.open-reviews',
      `SELECT ${REVIEW_COLUMNS}, ${k.sortKey} FROM pending_reviews
        WHERE tenant_id = $1 AND decision IS NULL AND ${k.after}
        ${k.orderLimit}`,
      [tenantId, ...k.params],
    ),
  );
  return toKeysetPage(rows, page.limit);
}

/**
 * One tenant's investigations for the MSSP's list, newest opened first, by status, severity,
 * assignee and age (investigations_tenant_assignee_idx serves "assigned to me", sql/0029).
 */
export async function listTenantIncidents(
  tx: TenantTx,
  tenantId: string,
  filters: TenantIncidentFilters,
  page: KeysetRequest,
): Promise<KeysetPage<IncidentSummary>> {
  const k = keyset('opened_at', page, 8);
  const { rows } = await tx.query<IncidentSummary & { sort_key: string }>(
    prepared(
      'triage.tenant-incidents',
      `SELECT id, title, status, severity, verdict, opened_at, updated_at, alert_count,
              last_alert_at, assignee_id, ${k.sortKey}
         FROM investigations
        WHERE tenant_id = $1
          AND ($2::text IS NULL OR status = $2)
          AND ($3::text IS NULL OR severity = $3)
          AND ($4::uuid IS NULL OR assignee_id = $4)
          AND (NOT $5::boolean OR assignee_id IS NULL)
          AND ($6::timestamptz IS NULL OR opened_at >= $6)
          AND ($7::timestamptz IS NULL OR opened_at < $7)
          AND ${k.after}
        ${k.orderLimit}`,
      [
        tenantId,
        filters.status ?? null,
        filters.severity ?? null,
        filters.assigneeId ?? null,
        filters.unassigned ?? false,
        filters.openedAfter ?? null,
        filters.openedBefore ?? null,
        ...k.params,
      ],
    ),
  );
  return toKeysetPage(rows, page.limit);
}

/**
 * Records the decision if the review is still open at `at`; undefined when it is not (decided,
 * expired or not this tenant's). The condition is in the UPDATE, so two deciders racing each
 * other decide once.
 */
export async function decideOpenReview(
  tx: TenantTx,
  input: { reviewId: string; decision: ReviewDecision; decidedBy: string; at: Date; note: string },
): Promise<Review | undefined> {
  const { rows } = await tx.query<Review>(
    `UPDATE pending_reviews
        SET decision = $2, decided_by = $3, decided_at = $4, decision_note = $5
      WHERE id = $1 AND decision IS NULL AND (expires_at IS NULL OR expires_at > $4)
      RETURNING ${REVIEW_COLUMNS}`,
    [input.reviewId, input.decision, input.decidedBy, input.at, input.note],
  );
  return rows[0];
}

export async function findReviewDecision(
  tx: TenantTx,
  reviewId: string,
): Promise<Pick<Review, 'decision'> | undefined> {
  const { rows } = await tx.query<Pick<Review, 'decision'>>(
    'SELECT decision FROM pending_reviews WHERE id = $1',
    [reviewId],
  );
  return rows[0];
}
