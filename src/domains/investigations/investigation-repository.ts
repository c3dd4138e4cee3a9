import { type KeysetPage, type KeysetRequest, keyset, toKeysetPage } from '../../db/keyset.ts';
import { prepared } from '../../db/prepared.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import type {
  CustomerInvestigationRow,
  IncidentFilters,
  OverviewRow,
} from './investigation-types.ts';

// One statement, so every number comes from the same snapshot. RLS confines every scan to the
// transaction's tenant; the explicit `tenant_id = $2` beside it gives the planner the tenant's
// statistics (an RLS condition is a runtime parameter to it) and cannot widen anything. The
// tenants row is install-scoped (no RLS): it must also be the transaction's tenant.
const OVERVIEW = `
  WITH open_counts AS (
    SELECT severity, status, count(*)::int AS n
      FROM investigations
     WHERE tenant_id = $2 AND status IN ('open', 'triaging', 'awaiting_review')
     GROUP BY severity, status
  )
  SELECT t.id, t.display_name, t.state,
         (SELECT coalesce(jsonb_agg(o), '[]') FROM open_counts o) AS open_counts,
         (SELECT count(*)::int FROM pending_reviews
           WHERE tenant_id = $2 AND decision IS NULL
             AND (expires_at IS NULL OR expires_at > $1)) AS pending_reviews,
         (SELECT count(*)::int FROM events
           WHERE tenant_id = $2
             AND occurred_at > $1::timestamptz - interval '24 hours') AS events_last_24h,
         (SELECT count(*)::int FROM investigations
           WHERE tenant_id = $2
             AND resolved_at > $1::timestamptz - interval '7 days') AS resolved_last_7d
    FROM tenants t
   WHERE t.id = $2::uuid
     AND t.id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid)`;

/** The dashboard numbers of the transaction's tenant as of `now`; undefined once it is gone. */
export async function readOverview(
  tx: TenantTx,
  tenantId: string,
  now: Date,
): Promise<OverviewRow | undefined> {
  const { rows } = await tx.query<OverviewRow>(
    prepared('investigations.overview', OVERVIEW, [now, tenantId]),
  );
  return rows[0];
}

/** Investigations of the transaction's tenant, newest opened first, in the customer's columns. */
export async function listCustomerInvestigations(
  tx: TenantTx,
  filters: IncidentFilters,
  page: KeysetRequest,
): Promise<KeysetPage<CustomerInvestigationRow>> {
  const k = keyset('opened_at', page, 3);
  const { rows } = await tx.query<CustomerInvestigationRow & { sort_key: string }>(
    prepared(
      'investigations.customer-list',
      `SELECT id, title, summary, status, severity, verdict, source, source_ref,
              opened_at, updated_at, resolved_at, closed_at, alert_count, last_alert_at,
              ${k.sortKey}
         FROM investigations
        WHERE ($1::text IS NULL OR status = $1)
          AND ($2::text IS NULL OR severity = $2)
          AND ${k.after}
        ${k.orderLimit}`,
      [filters.status ?? null, filters.severity ?? null, ...k.params],
    ),
  );
  return toKeysetPage(rows, page.limit);
}
