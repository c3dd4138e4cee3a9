import type { TenantTx } from '../../db/tenant-context.ts';
import type { Review, ReviewDecision } from './triage-types.ts';

/** SQL on `pending_reviews`, tenant-scoped: every function runs under RLS. */

const REVIEW_COLUMNS = `id, investigation_id, proposed_action, action_params, rationale, evidence, risk,
  confidence, requested_by, requested_at, expires_at, decision, decided_by, decided_at, decision_note`;

/** Reviews awaiting a decision, oldest first; the queue is bounded, not paged. */
export async function listOpenReviews(tx: TenantTx): Promise<Review[]> {
  const { rows } = await tx.query<Review>(
    `SELECT ${REVIEW_COLUMNS} FROM pending_reviews
      WHERE decision IS NULL ORDER BY requested_at, id LIMIT 500`,
  );
  return rows;
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
