import type { OrchestratorDeps } from './context.ts';
import { ADAPTER_TOKEN_SECRET, namespaceOf } from './render.ts';
import { bindServiceIdentity } from './service-identity.ts';

/**
 * Spec §5.2/§8: the adapter's JWT is refreshed weekly by rewriting its Secret in the tenant
 * namespace (the token lives 8 days, so a refresh that runs late still lands in time). Only
 * the reference's version and time go to the database.
 */
export async function refreshAdapterToken(
  deps: Pick<
    OrchestratorDeps,
    'provisioning' | 'now' | 'timing' | 'namespaces' | 'install' | 'tokens'
  >,
  tenantId: string,
): Promise<boolean> {
  const tenant = await deps.provisioning.find(tenantId);
  const holders = ['provisioning', 'active', 'suspended'];
  if (!tenant || !holders.includes(tenant.state)) return false;
  const ref = await deps.provisioning.adapterTokenRef(tenantId);
  if (!ref) return false;
  if (deps.now().getTime() - ref.written_at.getTime() < deps.timing.adapterTokenRefreshMs)
    return false;
  const namespace = namespaceOf(tenant.slug);
  await bindServiceIdentity(deps, namespace);
  const minted = await deps.tokens.mintAdapter({ tenantId });
  await deps.namespaces.putSecret(
    namespace,
    ADAPTER_TOKEN_SECRET.name,
    { [ADAPTER_TOKEN_SECRET.key]: minted.token },
    { 'managed-by': 'svc', 'tenant-id': tenantId },
  );
  await deps.provisioning.recordAdapterToken(tenantId, {
    namespace,
    name: ADAPTER_TOKEN_SECRET.name,
    expiresAt: new Date(minted.claims.exp * 1000),
    version: ref.version + 1,
  });
  return true;
}
