import type { Static } from 'typebox';
import type { Incident, IncidentsQuery } from '../../../contracts/tenant.ts';
import type { Transaction } from '../../db/tenant-context.ts';
import { DEFAULT_LIMIT, type Position, SORT_KEY_FORMAT, toPage } from '../cursor.ts';

type Query = Static<typeof IncidentsQuery>;
type IncidentBody = Static<typeof Incident>;

interface InvestigationRow {
  id: string;
  title: string;
  summary: string | null;
  status: IncidentBody['status'];
  severity: IncidentBody['severity'];
  verdict: IncidentBody['verdict'];
  source: string | null;
  source_ref: string | null;
  opened_at: Date;
  updated_at: Date;
  resolved_at: Date | null;
  closed_at: Date | null;
  sort_key: string;
}

// Columns a customer may see: assignee_id (an MSSP staff id) and last_event_id (projection
// bookkeeping) stay inside.
const LIST = `
  SELECT id, title, summary, status, severity, verdict, source, source_ref,
         opened_at, updated_at, resolved_at, closed_at,
         to_char(opened_at AT TIME ZONE 'UTC', '${SORT_KEY_FORMAT}') AS sort_key
    FROM investigations
   WHERE ($1::text IS NULL OR status = $1)
     AND ($2::text IS NULL OR severity = $2)
     AND ($3::timestamptz IS NULL OR (opened_at, id) < ($3, $4::uuid))
   ORDER BY opened_at DESC, id DESC
   LIMIT $5`;

function toIncident({ sort_key: _, ...row }: InvestigationRow): IncidentBody {
  return {
    ...row,
    opened_at: row.opened_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    resolved_at: row.resolved_at?.toISOString() ?? null,
    closed_at: row.closed_at?.toISOString() ?? null,
  };
}

/** Investigations of the transaction's tenant, newest opened first, after `after`. */
export async function listIncidents(
  tx: Transaction,
  query: Query,
  after: Position | undefined,
): Promise<{ items: IncidentBody[]; next_cursor: string | null }> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const { rows } = await tx.query<InvestigationRow>(LIST, [
    query.status ?? null,
    query.severity ?? null,
    after?.at ?? null,
    after?.id ?? null,
    limit + 1,
  ]);
  const page = toPage('incidents', rows, limit);
  return { items: page.rows.map(toIncident), next_cursor: page.next_cursor };
}
