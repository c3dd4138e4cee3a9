import { randomUUID } from 'node:crypto';
import { currentRequestId } from '../../log/index.ts';

export type ActorPrincipal = 'User' | 'Worker' | 'System' | 'Adapter';

/** One row of spec §2.6. tenant_id is null for install-scoped events. */
export interface AuditEntry {
  tenantId: string | null;
  actorPrincipal: ActorPrincipal;
  actorId: string;
  action: string;
  resourceType: string;
  resourceId?: string | null;
  before?: unknown;
  after?: unknown;
  actingAs?: string | null;
  /** Defaults to the request id of the surrounding request (see log/withRequestId). */
  requestId?: string | null;
  details?: Record<string, unknown>;
}

export interface AuditRecord {
  id: string;
}

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
