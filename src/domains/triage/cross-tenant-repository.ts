import { type KeysetPage, type KeysetRequest, keyset, toKeysetPage } from '../../db/keyset.ts';
import { prepared } from '../../db/prepared.ts';
import type { SystemTx } from '../../db/tenant-context.ts';
import type { FleetIncident, FleetIncidentFilters, FleetReview } from './triage-types.ts';

/**
 * SQL on `investigations` and `pending_reviews` across tenants, for the system gate only
 * (SystemTx: BYPASSRLS). A soft-deleted tenant's rows are left out, as on the fleet summary:
 * nothing there is the analysts' work any more.
 */

/**
 * Every tenant's investigations, newest opened first. Each tenant contributes at most one
 * page from its own (tenant_id, opened_at) index, and only those are merged: the cost follows
 * tenants × page size, not the install's whole history, and the indexes stay tenant-led.
 */
export async function listFleetIncidents(
  tx: SystemTx,
  filters: FleetIncidentFilters,
  page: KeysetRequest,
): Promise<KeysetPage<FleetIncident>> {
  const k = keyset('i.opened_at', page, 8, 'i.id');
  const { rows } = await tx.query<FleetIncident & { sort_key: string }>(
    prepared(
      'investigations.fleet-list',
      `SELECT x.* FROM tenants t
       CROSS JOIN LATERAL (
         SELECT i.tenant_id, t.slug AS tenant_slug, i.id, i.title, i.status, i.severity,
                i.verdict, i.opened_at, i.updated_at, i.alert_count, i.last_alert_at,
                i.assignee_id, ${k.sortKey}
           FROM investigations i
          WHERE i.tenant_id = t.id
            AND ($1::text IS NULL OR i.status = $1)
            AND ($2::text IS NULL OR i.severity = $2)
            AND ($4::uuid IS NULL OR i.assignee_id = $4)
            AND (NOT $5::boolean OR i.assignee_id IS NULL)
            AND ($6::timestamptz IS NULL OR i.opened_at >= $6)
            AND ($7::timestamptz IS NULL OR i.opened_at < $7)
            AND ${k.after}
          ${k.orderLimit}
       ) x
       WHERE t.state <> 'soft-deleted' AND ($3::uuid IS NULL OR t.id = $3)
       ORDER BY x.opened_at DESC, x.id DESC
       LIMIT $10`,
      [
        filters.status ?? null,
        filters.severity ?? null,
        filters.tenantId ?? null,
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
 * Reviews awaiting a decision in every tenant, oldest first, a keyset page at a time. As with
 * the incidents, each tenant contributes at most one page from its own open-queue index
 * (pending_reviews_tenant_open_idx) and only those are merged.
 */
export async function listFleetOpenReviews(
  tx: SystemTx,
  page: KeysetRequest,
): Promise<KeysetPage<FleetReview>> {
  const k = keyset('r.requested_at', page, 1, 'r.id', 'asc');
  const { rows } = await tx.query<FleetReview & { sort_key: string }>(
    prepared(
      'reviews.fleet-list',
      `SELECT x.* FROM tenants t
       CROSS JOIN LATERAL (
         SELECT r.tenant_id, t.slug AS tenant_slug, r.id, r.investigation_id, r.proposed_action,
                r.action_params, r.rationale, r.evidence, r.risk, r.confidence, r.requested_by,
                r.requested_at, r.expires_at, r.decision, r.decided_by, r.decided_at,
                r.decision_note, ${k.sortKey}
           FROM pending_reviews r
          WHERE r.tenant_id = t.id AND r.decision IS NULL AND ${k.after}
          ${k.orderLimit}
       ) x
       WHERE t.state <> 'soft-deleted'
       ORDER BY x.requested_at, x.id
       LIMIT $3`,
      k.params,
    ),
  );
  return toKeysetPage(rows, page.limit);
}
