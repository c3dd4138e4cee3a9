import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Transaction } from '../../db/tenant-context.ts';

/**
 * 256 bits of entropy: guessing is hopeless even without a rate limit, which is why the
 * unauthenticated exchange needs none and why a fast hash (not argon2) is the right store.
 */
const BOOTSTRAP_SECRET_BYTES = 32;

/**
 * Where the MSSP tenant-creation flow puts the secret (spec §9.4 step 6): a Secret in
 * `tenant-<slug>` the adapter mounts, with the tenant id beside it so the adapter needs no
 * other configuration, and a `tenant_secrets` reference under this purpose.
 */
export const ADAPTER_BOOTSTRAP_SECRET = {
  name: 'svc-adapter-bootstrap',
  purpose: 'adapter-bootstrap',
  keys: { tenantId: 'tenant-id', credential: 'credential' },
} as const;

/** Compared against when a tenant has no credential, so both failures cost the same work. */
const NO_CREDENTIAL = Buffer.alloc(32);

function digest(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** The stored form: hex SHA-256 of the secret exactly as the adapter presents it. */
function hashBootstrapSecret(secret: string): string {
  return digest(secret).toString('hex');
}

/**
 * Creates the tenant's bootstrap credential, or replaces it (re-issuing rotates: the old
 * secret stops working at commit). Returns the secret, which is stored nowhere in the database;
 * the caller writes it into the tenant's Secret and then forgets it. `tx` must carry the
 * tenant's context (`withTenant(tenantId, …)`): RLS refuses the row otherwise.
 */
export async function issueBootstrapCredential(
  tx: Transaction,
  tenantId: string,
): Promise<{ secret: string }> {
  const secret = randomBytes(BOOTSTRAP_SECRET_BYTES).toString('base64url');
  await tx.query(
    `INSERT INTO adapter_credentials (tenant_id, credential_hash) VALUES ($1, $2)
     ON CONFLICT (tenant_id) DO UPDATE
       SET credential_hash = excluded.credential_hash, rotated_at = now(), last_used_at = NULL`,
    [tenantId, hashBootstrapSecret(secret)],
  );
  return { secret };
}

/**
 * True when `presented` is the tenant's current credential and the tenant is not deleted.
 * A tenant without a credential (unknown, deleted, never issued) takes the same path: one
 * query, one hash, one constant-time comparison, so the answer's timing does not tell a prober
 * which tenant ids exist. `tx` must carry the tenant's context.
 */
export async function verifyBootstrapCredential(
  tx: Transaction,
  tenantId: string,
  presented: string,
): Promise<boolean> {
  const { rows } = await tx.query<{ credential_hash: string }>(
    `SELECT c.credential_hash FROM adapter_credentials c JOIN tenants t ON t.id = c.tenant_id
      WHERE c.tenant_id = $1 AND t.deleted_at IS NULL`,
    [tenantId],
  );
  const stored = rows[0] ? Buffer.from(rows[0].credential_hash, 'hex') : NO_CREDENTIAL;
  const matches = timingSafeEqual(digest(presented), stored);
  return matches && rows[0] !== undefined;
}

/** Records a successful exchange, so an operator can see when the adapter last bootstrapped. */
export async function recordBootstrapUse(tx: Transaction, tenantId: string): Promise<void> {
  await tx.query('UPDATE adapter_credentials SET last_used_at = now() WHERE tenant_id = $1', [
    tenantId,
  ]);
}
