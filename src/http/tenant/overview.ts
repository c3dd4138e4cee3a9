import type { Static } from 'typebox';
import type { Overview } from '../../../contracts/tenant.ts';
import type { Transaction } from '../../db/tenant-context.ts';
import { ProblemError } from '../problem.ts';

type OverviewBody = Static<typeof Overview>;
type OpenStatus = keyof OverviewBody['open_investigations']['by_status'];
type Severity = keyof OverviewBody['open_investigations']['by_severity'];

interface OverviewRow {
  id: string;
  display_name: string;
  state: OverviewBody['tenant']['state'];
  open_counts: { severity: Severity; status: OpenStatus; n: number }[];
  pending_reviews: number;
  events_last_24h: number;
  resolved_last_7d: number;
}

// One statement, so every number comes from the same snapshot. The tenants row is
// install-scoped (no RLS); it is picked by the transaction's tenant context, never by a value
// from the request.
const OVERVIEW = `
  WITH open_counts AS (
    SELECT severity, status, count(*)::int AS n
      FROM investigations
     WHERE status IN ('open', 'triaging', 'awaiting_review')
     GROUP BY severity, status
  )
  SELECT t.id, t.display_name, t.state,
         (SELECT coalesce(jsonb_agg(o), '[]') FROM open_counts o) AS open_counts,
         (SELECT count(*)::int FROM pending_reviews
           WHERE decision IS NULL AND (expires_at IS NULL OR expires_at > $1)) AS pending_reviews,
         (SELECT count(*)::int FROM events
           WHERE occurred_at > $1::timestamptz - interval '24 hours') AS events_last_24h,
         (SELECT count(*)::int FROM investigations
           WHERE resolved_at > $1::timestamptz - interval '7 days') AS resolved_last_7d
    FROM tenants t
   WHERE t.id = (SELECT NULLIF(current_setting('app.current_tenant_id', true), '')::uuid)`;

function breakdown(counts: OverviewRow['open_counts']): OverviewBody['open_investigations'] {
  const result: OverviewBody['open_investigations'] = {
    total: 0,
    by_severity: { info: 0, low: 0, medium: 0, high: 0, critical: 0 },
    by_status: { open: 0, triaging: 0, awaiting_review: 0 },
  };
  for (const { severity, status, n } of counts) {
    result.total += n;
    result.by_severity[severity] += n;
    result.by_status[status] += n;
  }
  return result;
}

/** The dashboard numbers of the transaction's tenant as of `now`. */
export async function readOverview(tx: Transaction, now: Date): Promise<OverviewBody> {
  const { rows } = await tx.query<OverviewRow>(OVERVIEW, [now]);
  const row = rows[0];
  if (!row) throw new ProblemError(404, 'tenant_not_found', 'Your tenant no longer exists');
  return {
    tenant: { id: row.id, display_name: row.display_name, state: row.state },
    open_investigations: breakdown(row.open_counts),
    pending_reviews: row.pending_reviews,
    events_last_24h: row.events_last_24h,
    resolved_last_7d: row.resolved_last_7d,
    as_of: now.toISOString(),
  };
}
