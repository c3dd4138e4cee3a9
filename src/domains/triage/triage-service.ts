// The triage domain owns the analyst's work on one tenant: its incident list, its queue of
// proposed actions awaiting a human, and the decisions on them (spec §1 item 6, §5.8).
import type { EventPayload } from '../../../contracts/events.ts';
import type { KeysetPage, KeysetRequest } from '../../db/keyset.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { appendToStream } from '../events/event-repository.ts';
import { enqueueJobs } from '../jobs/job-repository.ts';
import { findTenant } from '../tenants/tenant-repository.ts';
import { TenantNotFoundError } from '../tenants/tenant-types.ts';
import {
  decideOpenReview,
  findReviewDecision,
  listOpenReviews,
  listTenantIncidents,
} from './triage-repository.ts';
import {
  type AnalystVerdict,
  type Decider,
  type IncidentSummary,
  type Review,
  ReviewClosedError,
  type ReviewDecision,
  ReviewNotFoundError,
  type TenantIncidentFilters,
} from './triage-types.ts';

const AUDIT_ACTION: Record<ReviewDecision, string> = {
  approved: 'investigation.approve',
  rejected: 'investigation.reject',
};

/**
 * Every read and decision runs under the tenant's context and stays RLS-subject; decisions are
 * audited for the tenant to see.
 */
export function createTriageService(deps: {
  db: Pick<AppDatabase, 'withTenant'>;
  now: () => Date;
}) {
  return {
    listIncidents(
      tenantId: string,
      filters: TenantIncidentFilters,
      page: KeysetRequest,
    ): Promise<KeysetPage<IncidentSummary>> {
      return deps.db.withTenant(tenantId, async (tx) => {
        await requireTenant(tx, tenantId);
        return listTenantIncidents(tx, tenantId, filters, page);
      });
    },

    /** The queue, oldest first, a page at a time (no cap: every open review is reachable). */
    listOpenReviews(tenantId: string, page: KeysetRequest): Promise<KeysetPage<Review>> {
      return deps.db.withTenant(tenantId, async (tx) => {
        await requireTenant(tx, tenantId);
        return listOpenReviews(tx, tenantId, page);
      });
    },

    /**
     * Decides an open review, once: the decision, its event and its audit row commit together.
     * A review of another tenant is not found (RLS), not forbidden.
     */
    decide(
      tenantId: string,
      reviewId: string,
      decision: ReviewDecision,
      decider: Decider,
      note: string,
      verdict?: AnalystVerdict,
    ): Promise<Review> {
      const at = deps.now();
      return deps.db.withTenant(tenantId, async (tx) => {
        const review = await decideOpenReview(tx, {
          reviewId,
          decision,
          decidedBy: decider.userId,
          at,
          note,
        });
        if (!review) throw await whyClosed(tx, reviewId);
        await recordDecision(tx, { tenantId, review, decision, decider, note, verdict });
        return review;
      });
    },
  };
}

export type TriageService = ReturnType<typeof createTriageService>;

/**
 * Acting on a review retries with the queue's exponential backoff (e^n seconds): 10 attempts
 * span about three and a half hours, long enough to outlast a restart of the case component.
 */
const ACT_ATTEMPTS = 10;

/**
 * What a rejection means for the investigation: a rejected case proposal closes it with the
 * analyst's verdict (false_positive unless they said otherwise); a rejected closure sends it
 * back to the analysts (open), with their verdict when they gave one.
 */
function rejection(
  review: Review,
  verdict: AnalystVerdict | undefined,
): { reopen: boolean; verdict?: AnalystVerdict } {
  return review.proposed_action === 'close_investigation'
    ? { reopen: true, ...(verdict ? { verdict } : {}) }
    : { verdict: verdict ?? 'false_positive', reopen: false };
}

async function requireTenant(tx: TenantTx, tenantId: string): Promise<void> {
  if (!(await findTenant(tx, tenantId))) throw new TenantNotFoundError(tenantId);
}

async function whyClosed(tx: TenantTx, reviewId: string): Promise<Error> {
  const current = await findReviewDecision(tx, reviewId);
  if (!current) return new ReviewNotFoundError(reviewId);
  return new ReviewClosedError(reviewId, current.decision ?? 'expired');
}

interface DecisionRecord {
  tenantId: string;
  review: Review;
  decision: ReviewDecision;
  decider: Decider;
  note: string;
  verdict: AnalystVerdict | undefined;
}

async function recordDecision(
  tx: TenantTx,
  { tenantId, review, decision, decider, note, verdict }: DecisionRecord,
): Promise<void> {
  // On the investigation's stream, after the pipeline's steps: the read model follows it.
  const decided = {
    review_id: review.id,
    investigation_id: review.investigation_id,
    // Reviews are written by the pipeline's decide step only, with one of its two actions.
    action: review.proposed_action as EventPayload<'review.approved'>['action'],
  };
  await appendToStream<'review.approved' | 'review.rejected'>(tx, {
    tenantId,
    streamType: 'investigation',
    streamId: review.investigation_id,
    ...(decision === 'approved'
      ? { type: 'review.approved', payload: decided }
      : { type: 'review.rejected', payload: { ...decided, ...rejection(review, verdict) } }),
    actor: `user:${decider.userId}`,
  });
  // The approved action runs as a job, committed with the approval; its key makes a second
  // enqueue of the same review (there is none: a review is decided once) a no-op.
  if (decision === 'approved')
    await enqueueJobs(tx, [
      {
        tenantId,
        jobType: 'act',
        input: { review_id: review.id },
        jobKey: `act:${review.id}`,
        maxAttempts: ACT_ATTEMPTS,
      },
    ]);
  await writeAudit(tx, {
    tenantId,
    actorPrincipal: 'User',
    actorId: decider.userId,
    action: AUDIT_ACTION[decision],
    resourceType: 'pending_review',
    resourceId: review.id,
    before: { decision: null },
    after: { decision, note, ...(verdict ? { verdict } : {}) },
    actingAs: decider.actingAs,
  });
}
