import { randomUUID } from 'node:crypto';
import { type Context, Hono } from 'hono';
import { msspTriageContract as contract } from '../../../contracts/mssp.ts';
import { MSSP_ROLES } from '../../auth/identity.ts';
import type { Transaction } from '../../db/tenant-context.ts';
import { writeAudit } from '../../domains/audit/audit-repository.ts';
import { appendEvent } from '../../domains/events/index.ts';
import type { ApiDeps } from '../app.ts';
import { requireRole, tenantOfRequest } from '../authenticate.ts';
import { implement } from '../contract.ts';
import { DEFAULT_LIMIT, decodeCursor, SORT_KEY_FORMAT, toPage } from '../cursor.ts';
import { ProblemError } from '../problem.ts';

interface ReviewRow {
  id: string;
  investigation_id: string;
  proposed_action: string;
  action_params: Record<string, unknown>;
  rationale: string;
  evidence: unknown;
  risk: string;
  confidence: number | null;
  requested_by: string;
  requested_at: Date;
  expires_at: Date | null;
  decision: string | null;
  decided_by: string | null;
  decided_at: Date | null;
  decision_note: string | null;
}

const REVIEW_COLUMNS = `id, investigation_id, proposed_action, action_params, rationale, evidence, risk,
  confidence, requested_by, requested_at, expires_at, decision, decided_by, decided_at, decision_note`;

const iso = (d: Date | null) => d?.toISOString() ?? null;
const reviewJson = (r: ReviewRow) => ({
  ...r,
  requested_at: r.requested_at.toISOString(),
  expires_at: iso(r.expires_at),
  decided_at: iso(r.decided_at),
});

async function requireTenant(tx: Transaction, tenantId: string): Promise<void> {
  const { rowCount } = await tx.query('SELECT 1 FROM tenants WHERE id = $1', [tenantId]);
  if (!rowCount) throw new ProblemError(404, 'tenant_not_found', 'No such tenant');
}

const anyMssp = requireRole(...MSSP_ROLES);

/**
 * Analyst work on one tenant (spec §1 item 6, §5.8): reads and decisions run under that
 * tenant's context and stay RLS-subject; decisions are audited for the tenant to see.
 */
export function triageRoutes(api: ApiDeps): Hono {
  const app = new Hono();

  implement(app, contract.tenantIncidents, [anyMssp])(async (c, { params, query }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = decodeCursor('mssp-incidents', query.cursor);
    const rows = await api.db.withTenant(tenantId, async (tx) => {
      await requireTenant(tx, tenantId);
      const { rows } = await tx.query<{
        id: string;
        title: string;
        status: string;
        severity: string;
        verdict: string | null;
        opened_at: Date;
        updated_at: Date;
        sort_key: string;
      }>(
        `SELECT id, title, status, severity, verdict, opened_at, updated_at,
                to_char(opened_at AT TIME ZONE 'UTC', '${SORT_KEY_FORMAT}') AS sort_key
           FROM investigations
          WHERE ($1::timestamptz IS NULL OR (opened_at, id) < ($1, $2::uuid))
          ORDER BY opened_at DESC, id DESC LIMIT $3`,
        [after?.at ?? null, after?.id ?? null, limit + 1],
      );
      return rows;
    });
    const result = toPage('mssp-incidents', rows, limit);
    return {
      status: 200,
      body: {
        items: result.rows.map(({ sort_key: _, ...r }) => ({
          ...r,
          opened_at: r.opened_at.toISOString(),
          updated_at: r.updated_at.toISOString(),
        })),
        next_cursor: result.next_cursor,
      },
    };
  });

  implement(app, contract.tenantReviews, [anyMssp])(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const rows = await api.db.withTenant(tenantId, async (tx) => {
      await requireTenant(tx, tenantId);
      const { rows } = await tx.query<ReviewRow>(
        `SELECT ${REVIEW_COLUMNS} FROM pending_reviews WHERE decision IS NULL ORDER BY requested_at, id LIMIT 500`,
      );
      return rows;
    });
    return { status: 200, body: { items: rows.map(reviewJson) } };
  });

  async function decide(
    c: Context,
    params: { tenant_id: string; review_id: string },
    body: { note: string },
    decision: 'approved' | 'rejected',
  ) {
    const identity = c.get('identity');
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const review = await api.db.withTenant(tenantId, async (tx) => {
      const { rows } = await tx.query<ReviewRow>(
        `UPDATE pending_reviews
              SET decision = $2, decided_by = $3, decided_at = $4, decision_note = $5
            WHERE id = $1 AND decision IS NULL AND (expires_at IS NULL OR expires_at > $4)
            RETURNING ${REVIEW_COLUMNS}`,
        [params.review_id, decision, identity.user_id, api.now(), body.note],
      );
      const updated = rows[0];
      if (!updated) {
        const current = await tx.query<{ decision: string | null }>(
          'SELECT decision FROM pending_reviews WHERE id = $1',
          [params.review_id],
        );
        if (!current.rowCount)
          throw new ProblemError(404, 'review_not_found', 'No such review in this tenant');
        throw new ProblemError(
          409,
          'review_closed',
          'This review was already decided or has expired',
          {
            decision: current.rows[0]?.decision ?? 'expired',
          },
        );
      }
      await appendEvent(tx, {
        tenantId,
        streamType: 'review',
        streamId: randomUUID(),
        streamSeq: 1,
        type: `review.${decision}`,
        payload: {
          review_id: updated.id,
          investigation_id: updated.investigation_id,
          action: updated.proposed_action,
        },
        actor: `user:${identity.user_id}`,
      });
      await writeAudit(tx, {
        tenantId,
        actorPrincipal: 'User',
        actorId: identity.user_id,
        action: decision === 'approved' ? 'investigation.approve' : 'investigation.reject',
        resourceType: 'pending_review',
        resourceId: updated.id,
        before: { decision: null },
        after: { decision, note: body.note },
        actingAs: identity.current_tenant,
      });
      return updated;
    });
    return reviewJson(review);
  }

  implement(app, contract.approveReview, [anyMssp])(async (c, { params, body }) => ({
    status: 200,
    body: { review: await decide(c, params, body, 'approved') },
  }));
  implement(app, contract.rejectReview, [anyMssp])(async (c, { params, body }) => ({
    status: 200,
    body: { review: await decide(c, params, body, 'rejected') },
  }));
  return app;
}
