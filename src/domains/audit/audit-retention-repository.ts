import type { SystemTx } from '../../db/tenant-context.ts';

/**
 * Deletes up to `limit` audit rows older than `before`, oldest first, and returns how many.
 * sql/0024_audit_retention.sql's audit_purge_batch is the only way to delete audit rows: no
 * login role holds DELETE on audit_log, and only svc_mssp (the system gate) may call it.
 */
export async function purgeAuditBatch(tx: SystemTx, before: Date, limit: number): Promise<number> {
  const { rows } = await tx.query<{ deleted: number }>(
    'SELECT audit_purge_batch($1, $2) AS deleted',
    [before, limit],
  );
  return rows[0]?.deleted ?? 0;
}
