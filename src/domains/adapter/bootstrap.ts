import type { AppDatabase } from '../../db/pools.ts';
import type { TokenService } from '../../tokens/index.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { recordBootstrapUse, verifyBootstrapCredential } from './credentials.ts';

export interface BootstrapDeps {
  db: Pick<AppDatabase, 'withTenant'>;
  tokens: Pick<TokenService, 'mintAdapter'>;
}

export interface AdapterToken {
  token: string;
  expiresAt: Date;
}

/**
 * Trades a tenant's bootstrap credential for an adapter JWT. Everything happens under the
 * claimed tenant's RLS context, so the credential of tenant A can only ever be compared with
 * A's own row: presenting it with B's id compares it with B's hash and fails. The token is
 * returned only after its audit row (spec §5.8: the adapter writes audit via bootstrap) and
 * last_used_at commit with it; undefined means "refuse", whatever the reason.
 */
export async function exchangeBootstrapCredential(
  deps: BootstrapDeps,
  tenantId: string,
  credential: string,
): Promise<AdapterToken | undefined> {
  return deps.db.withTenant(tenantId, async (tx) => {
    if (!(await verifyBootstrapCredential(tx, tenantId, credential))) return undefined;
    const { token, claims } = await deps.tokens.mintAdapter({ tenantId });
    const expiresAt = new Date(claims.exp * 1000);
    await recordBootstrapUse(tx, tenantId);
    await writeAudit(tx, {
      tenantId,
      actorPrincipal: 'Adapter',
      actorId: tenantId,
      action: 'adapter.bootstrap',
      resourceType: 'adapter_credential',
      resourceId: tenantId,
      details: { jti: claims.jti, expires_at: expiresAt.toISOString() },
    });
    return { token, expiresAt };
  });
}
