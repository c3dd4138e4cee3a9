import { randomUUID } from 'node:crypto';
import { type KeysetPage, type KeysetRequest, keyset, toKeysetPage } from '../../db/keyset.ts';
import type { SystemTx, TenantTx } from '../../db/tenant-context.ts';
import { currentRequestId } from '../../log/index.ts';
import type { AuditEntry, AuditFilters, AuditRecord, AuditRow } from './audit-types.ts';

/** A transaction or the system gate's own pool (its entry row commits on its own). */
interface Queryable {
  query<R extends object>(text: string, values?: unknown[]): Promise<{ rows: R[] }>;
}

const json = (value: unknown): string | null =>
  value === undefined ? null : JSON.stringify(value);

/**
 * Appends one audit row inside the caller's transaction, so the row commits or rolls back
 * with the mutation it describes. RLS lets it write only into the current tenant (or an
 * install-scoped row); the caller chooses the transaction that carries that context.
 */
export async function writeAudit(db: Queryable, entry: AuditEntry): Promise<AuditRecord> {
  // No RETURNING: it would need read access to the new row, which the writer of an
  // install-scoped row does not have (policy audit_read).
  const id = randomUUID();
  await db.query(
    `INSERT INTO audit_log (id, tenant_id, actor_principal, actor_id, action, resource_type,
       resource_id, before, after, acting_as, request_id, details)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10, $11, $12::jsonb)`,
    [
      id,
      entry.tenantId,
      entry.actorPrincipal,
      entry.actorId,
      entry.action,
      entry.resourceType,
      entry.resourceId ?? null,
      json(entry.before),
      json(entry.after),
      entry.actingAs ?? null,
      entry.requestId ?? currentRequestId() ?? null,
      JSON.stringify(entry.details ?? {}),
    ],
  );
  return { id };
}

/**
 * Audit rows newest first. Under a TenantTx, policy audit_read shows exactly the context
 * tenant's rows (impersonation rows included, nothing install-scoped); a SystemTx sees all.
 */
export async function listAudit(
  tx: TenantTx | SystemTx,
  f: AuditFilters,
  page: KeysetRequest,
): Promise<KeysetPage<AuditRow>> {
  const k = keyset('"timestamp"', page, 6);
  const { rows } = await tx.query<AuditRow & { sort_key: string }>(
    `SELECT id, "timestamp", tenant_id, actor_principal, actor_id, action, resource_type,
            resource_id, before, after, acting_as, request_id, details, ${k.sortKey}
       FROM audit_log
      WHERE ($1::uuid IS NULL OR tenant_id = $1)
        AND ($2::text IS NULL OR action = $2)
        AND ($3::text IS NULL OR actor_id = $3)
        AND ($4::timestamptz IS NULL OR "timestamp" >= $4)
        AND ($5::timestamptz IS NULL OR "timestamp" < $5)
        AND ${k.after}
      ${k.orderLimit}`,
    [
      f.tenant_id ?? null,
      f.action ?? null,
      f.actor_id ?? null,
      f.since ?? null,
      f.until ?? null,
      ...k.params,
    ],
  );
  return toKeysetPage(rows, page.limit);
}
