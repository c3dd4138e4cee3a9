import type { Static } from 'typebox';
import type { AuditEntry, AuditQuery } from '../../../contracts/tenant.ts';
import type { Transaction } from '../../db/tenant-context.ts';
import { DEFAULT_LIMIT, type Position, SORT_KEY_FORMAT, toPage } from '../cursor.ts';

type Query = Static<typeof AuditQuery>;
type AuditBody = Static<typeof AuditEntry>;

interface AuditRow extends Omit<AuditBody, 'timestamp' | 'impersonated'> {
  timestamp: Date;
  sort_key: string;
}

// No tenant filter: policy audit_read shows exactly the context tenant's rows (spec §5.7
// item 3), impersonation rows included, and nothing install-scoped.
const LIST = `
  SELECT id, "timestamp", actor_principal, actor_id, action, resource_type, resource_id,
         before, after, acting_as, request_id, details,
         to_char("timestamp" AT TIME ZONE 'UTC', '${SORT_KEY_FORMAT}') AS sort_key
    FROM audit_log
   WHERE ($1::text IS NULL OR action = $1)
     AND ($2::timestamptz IS NULL OR "timestamp" >= $2)
     AND ($3::timestamptz IS NULL OR ("timestamp", id) < ($3, $4::uuid))
   ORDER BY "timestamp" DESC, id DESC
   LIMIT $5`;

function toEntry({ sort_key: _, ...row }: AuditRow): AuditBody {
  return {
    ...row,
    timestamp: row.timestamp.toISOString(),
    impersonated: row.acting_as !== null,
  };
}

/** The audit trail of the transaction's tenant, newest first, after `after`. */
export async function listAudit(
  tx: Transaction,
  query: Query,
  after: Position | undefined,
): Promise<{ items: AuditBody[]; next_cursor: string | null }> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const { rows } = await tx.query<AuditRow>(LIST, [
    query.action ?? null,
    query.since ?? null,
    after?.at ?? null,
    after?.id ?? null,
    limit + 1,
  ]);
  const page = toPage('audit', rows, limit);
  return { items: page.rows.map(toEntry), next_cursor: page.next_cursor };
}
