import * as db from 'zapatos/db';
import type * as s from 'zapatos/schema';
import type { InstallTx } from '../../db/tenant-context.ts';

type Sql = s.audit_grants.SQL;

/**
 * SQL on `audit_grants` (sql/0028): the tenant one `svc psql` session may read. Only the
 * SHA-256 of the grant's secret is stored; the secret travels to psql in `app.audit_grant`.
 * Minting also clears grants that expired (a killed `svc psql` leaves its grant behind).
 */
export async function insertAuditGrant(
  tx: InstallTx,
  grant: { secretHash: string; tenantId: string; ttlSeconds: number },
): Promise<void> {
  await db.sql<Sql>`DELETE FROM ${'audit_grants'} WHERE ${'expires_at'} <= now()`.run(tx);
  await db.sql<Sql>`
    INSERT INTO ${'audit_grants'} (${'secret_hash'}, ${'audited_tenant'}, ${'expires_at'})
    VALUES (${db.param(grant.secretHash)}, ${db.param(grant.tenantId)},
            now() + make_interval(secs => ${db.param(grant.ttlSeconds)}))`.run(tx);
}

export async function deleteAuditGrant(tx: InstallTx, secretHash: string): Promise<void> {
  await db.sql<Sql>`
    DELETE FROM ${'audit_grants'} WHERE ${'secret_hash'} = ${db.param(secretHash)}`.run(tx);
}
