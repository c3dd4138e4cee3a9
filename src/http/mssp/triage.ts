import { type Context, Hono } from 'hono';
import { msspTriageContract as contract } from '../../../contracts/mssp.ts';
import type { TriageService } from '../../domains/triage/triage-service.ts';
import type { AnalystVerdict, ReviewDecision } from '../../domains/triage/triage-types.ts';
import { implement } from '../contract.ts';
import { DEFAULT_LIMIT, decodeCursor, nextCursor } from '../cursor.ts';
import { tenantOfRequest } from '../guards.ts';

/** Analyst work on one tenant (spec §1 item 6, §5.8), through the triage domain. */
export function triageRoutes(triage: TriageService): Hono {
  const app = new Hono();

  implement(
    app,
    contract.tenantIncidents,
  )(async (c, { params, query }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const page = {
      after: decodeCursor('mssp-incidents', query.cursor),
      limit: query.limit ?? DEFAULT_LIMIT,
    };
    const identity = c.get('identity');
    const filters = {
      status: query.status,
      severity: query.severity,
      assigneeId: query.assignee === 'me' ? identity.user_id : undefined,
      unassigned: query.assignee === 'none',
      openedAfter: query.opened_after,
      openedBefore: query.opened_before,
    };
    const result = await triage.listIncidents(tenantId, filters, page);
    return {
      status: 200,
      body: {
        items: result.rows,
        next_cursor: nextCursor('mssp-incidents', result.next),
      },
    };
  });

  implement(
    app,
    contract.tenantReviews,
  )(async (c, { params, query }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const page = {
      after: decodeCursor('reviews', query.cursor),
      limit: query.limit ?? DEFAULT_LIMIT,
    };
    const result = await triage.listOpenReviews(tenantId, page);
    return {
      status: 200,
      body: { items: result.rows, next_cursor: nextCursor('reviews', result.next) },
    };
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
    const review = await triage.decide(
      tenantId,
      params.review_id,
      decision,
      decider,
      note,
      verdict,
    );
    return { status: 200 as const, body: { review } };
  };

  implement(
    app,
    contract.approveReview,
  )((c, { params, body }) => decide(c, params, body.note, 'approved'));
  implement(
    app,
    contract.rejectReview,
  )((c, { params, body }) => decide(c, params, body.note, 'rejected', body.verdict));
  return app;
}
