import type { TenantTx } from '../../db/tenant-context.ts';

/** The version of one of the tenant's Secret references (tenant_secrets), undefined without one. */
export async function secretVersion(
  tx: TenantTx,
  tenantId: string,
  purpose: string,
): Promise<number | undefined> {
  const { rows } = await tx.query<{ version: number }>(
    'SELECT version FROM tenant_secrets WHERE tenant_id = $1 AND purpose = $2',
    [tenantId, purpose],
  );
  return rows[0]?.version;
}

/** A new version of a Secret whose content svc replaced; undefined when there is no reference. */
export async function bumpSecretVersion(
  tx: TenantTx,
  tenantId: string,
  purpose: string,
): Promise<number | undefined> {
  const { rows } = await tx.query<{ version: number }>(
    `UPDATE tenant_secrets SET version = version + 1, rotated_at = now()
      WHERE tenant_id = $1 AND purpose = $2 RETURNING version`,
    [tenantId, purpose],
  );
  return rows[0]?.version;
}
