import { adapterTokenRef } from '../domains/provisioning/provisioning-repository.ts';
import { upsertSecretRef } from '../domains/tenants/tenant-config-repository.ts';
import { findTenant } from '../domains/tenants/tenant-repository.ts';
import { ORCHESTRATOR_ACTOR, type OrchestratorDeps } from './context.ts';
import { ADAPTER_TOKEN_SECRET, namespaceOf } from './render.ts';
import { bindServiceIdentity } from './service-identity.ts';
import { recordStep } from './steps.ts';

/**
 * Spec §5.2/§8: the adapter's JWT is refreshed weekly by rewriting its Secret in the tenant
 * namespace (the token lives 8 days, so a refresh that runs late still lands in time). Only
 * the reference's version and time go to the database.
 */
export async function refreshAdapterToken(
  deps: OrchestratorDeps,
  tenantId: string,
): Promise<boolean> {
  const tenant = await deps.db.withoutTenant((tx) => findTenant(tx, tenantId));
  const holders = ['provisioning', 'active', 'suspended'];
  if (!tenant || !holders.includes(tenant.state)) return false;
  const ref = await deps.db.withTenant(tenantId, (tx) => adapterTokenRef(tx, tenantId));
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
  await deps.db.withTenant(tenantId, async (tx) => {
    await upsertSecretRef(tx, {
      tenant_id: tenantId,
      purpose: 'adapter-token',
      namespace,
      name: ADAPTER_TOKEN_SECRET.name,
    });
    await recordStep(tx, tenantId, 'adapter_token_written', ORCHESTRATOR_ACTOR, {
      namespace,
      expires_at: new Date(minted.claims.exp * 1000).toISOString(),
      version: ref.version + 1,
    });
  });
  return true;
}
