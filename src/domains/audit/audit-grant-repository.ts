import type { InstallTx } from '../../db/tenant-context.ts';

/**
 * SQL on `audit_grants` (sql/0028): the tenant one `svc psql` session may read. Only the
 * SHA-256 of the grant's secret is stored; the secret travels to psql in `app.audit_grant`.
 * Minting also clears grants that expired (a killed `svc psql` leaves its grant behind).
 */
export async function insertAuditGrant(
  tx: InstallTx,
  grant: { secretHash: string; tenantId: string; ttlSeconds: number },
): Promise<void> {
  await tx.query('DELETE FROM audit_grants WHERE expires_at <= now()');
  await tx.query(
    `INSERT INTO audit_grants (secret_hash, audited_tenant, expires_at)
     VALUES ($1, $2, now() + make_interval(secs => $3))`,
    [grant.secretHash, grant.tenantId, grant.ttlSeconds],
  );
}

export async function deleteAuditGrant(tx: InstallTx, secretHash: string): Promise<void> {
  await tx.query('DELETE FROM audit_grants WHERE secret_hash = $1', [secretHash]);
}
