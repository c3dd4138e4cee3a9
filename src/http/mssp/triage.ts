import { type Context, Hono } from 'hono';
import { msspTriageContract as contract } from '../../../contracts/mssp.ts';
import { MSSP_ROLES } from '../../auth/identity.ts';
import { TenantNotFoundError } from '../../domains/tenants/tenant-types.ts';
import type { TriageService } from '../../domains/triage/triage-service.ts';
import {
  type AnalystVerdict,
  type Review,
  ReviewClosedError,
  type ReviewDecision,
  ReviewNotFoundError,
} from '../../domains/triage/triage-types.ts';
import { implement } from '../contract.ts';
import { DEFAULT_LIMIT, decodeCursor, nextCursor } from '../cursor.ts';
import { requireRole, tenantOfRequest } from '../guards.ts';
import { ProblemError } from '../problem.ts';

const iso = (d: Date | null) => d?.toISOString() ?? null;
/** A review as the contracts show it; the cross-tenant queue adds its tenant (cross-tenant.ts). */
export const reviewJson = (r: Review) => ({
  ...r,
  requested_at: r.requested_at.toISOString(),
  expires_at: iso(r.expires_at),
  decided_at: iso(r.decided_at),
});

/** The triage domain's refusals as the problems of contracts/mssp.ts. */
async function problems<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof TenantNotFoundError)
      throw new ProblemError(404, 'tenant_not_found', 'No such tenant');
    if (error instanceof ReviewNotFoundError)
      throw new ProblemError(404, 'review_not_found', error.message);
    if (error instanceof ReviewClosedError)
      throw new ProblemError(409, 'review_closed', error.message, { decision: error.decision });
    throw error;
  }
}

const anyMssp = requireRole(...MSSP_ROLES);

/** Analyst work on one tenant (spec §1 item 6, §5.8), through the triage domain. */
export function triageRoutes(triage: TriageService): Hono {
  const app = new Hono();

  implement(app, contract.tenantIncidents, [anyMssp])(async (c, { params, query }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const page = {
      after: decodeCursor('mssp-incidents', query.cursor),
      limit: query.limit ?? DEFAULT_LIMIT,
    };
    const result = await problems(triage.listIncidents(tenantId, page));
    return {
      status: 200,
      body: {
        items: result.rows.map((r) => ({
          ...r,
          opened_at: r.opened_at.toISOString(),
          updated_at: r.updated_at.toISOString(),
          last_alert_at: r.last_alert_at?.toISOString() ?? null,
        })),
        next_cursor: nextCursor('mssp-incidents', result.next),
      },
    };
  });

  implement(app, contract.tenantReviews, [anyMssp])(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const reviews = await problems(triage.listOpenReviews(tenantId));
    return { status: 200, body: { items: reviews.map(reviewJson) } };
  });

  const decide = async (
    c: Context,
    params: { tenant_id: string; review_id: string },
    note: string,
    decision: ReviewDecision,
    verdict?: AnalystVerdict,
  ) => {
    const identity = c.get('identity');
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const decider = { userId: identity.user_id, actingAs: identity.current_tenant };
    const review = await problems(
      triage.decide(tenantId, params.review_id, decision, decider, note, verdict),
    );
    return { status: 200 as const, body: { review: reviewJson(review) } };
  };

  implement(app, contract.approveReview, [anyMssp])((c, { params, body }) =>
    decide(c, params, body.note, 'approved'),
  );
  implement(app, contract.rejectReview, [anyMssp])((c, { params, body }) =>
    decide(c, params, body.note, 'rejected', body.verdict),
  );
  return app;
}
