import { ADAPTER_BOOTSTRAP_SECRET } from '../domains/adapter/adapter-types.ts';
import { upsertSecretRef } from '../domains/tenants/tenant-config-repository.ts';
import { installSecretNames, restoreBootstrapSecret } from '../domains/tenants/tenant-creation.ts';
import type { Tenant } from '../domains/tenants/tenant-types.ts';
import type { OrchestratorDeps } from './context.ts';
import { ADAPTER_TOKEN_SECRET, COMPONENT_BOOTSTRAP_SECRET } from './render.ts';
import { StepFailure } from './step-failure.ts';

const missing = (message: string) =>
  new StepFailure('bootstrap_secrets_written', 'install_secrets_missing', message);

/**
 * Spec §9.4 items 4 and 6: the data-plane credentials move from the install-namespace
 * bootstrap Secret into the tenant namespace; the adapter gets its exchange credential and a
 * first JWT. The database records where they are (namespace, name, version), never the values.
 * Also how the reconciler refills a namespace it recreated.
 */
export async function putBootstrapSecrets(
  deps: OrchestratorDeps,
  tenant: Pick<Tenant, 'id'>,
  namespace: string,
): Promise<{ secrets: string[]; adapter_token_expires_at: string }> {
  const names = installSecretNames(tenant.id);
  // A bootstrap Secret lost with its cluster (issue 18 item 8) is issued anew, with a fresh
  // adapter credential: the namespace it fills is being built, so nothing holds the old ones.
  await restoreBootstrapSecret(deps, tenant.id);
  const bundle = await deps.secrets.read(names.bootstrap);
  if (!bundle) throw missing(`Secret ${deps.secrets.namespace}/${names.bootstrap} is missing`);
  const labels = { 'managed-by': 'svc', 'tenant-id': tenant.id };
  const { 'adapter-bootstrap-credential': credential, 'tenant-id': _, ...components } = bundle;
  if (!credential) throw missing('adapter credential missing from the bootstrap Secret');
  await deps.namespaces.putSecret(namespace, COMPONENT_BOOTSTRAP_SECRET, components, labels);
  await deps.namespaces.putSecret(
    namespace,
    ADAPTER_BOOTSTRAP_SECRET.name,
    {
      [ADAPTER_BOOTSTRAP_SECRET.keys.tenantId]: tenant.id,
      [ADAPTER_BOOTSTRAP_SECRET.keys.credential]: credential,
    },
    labels,
  );
  const minted = await deps.tokens.mintAdapter({ tenantId: tenant.id });
  await deps.namespaces.putSecret(
    namespace,
    ADAPTER_TOKEN_SECRET.name,
    { [ADAPTER_TOKEN_SECRET.key]: minted.token },
    labels,
  );
  const refs = [
    ['component-bootstrap', COMPONENT_BOOTSTRAP_SECRET],
    [ADAPTER_BOOTSTRAP_SECRET.purpose, ADAPTER_BOOTSTRAP_SECRET.name],
    ['adapter-token', ADAPTER_TOKEN_SECRET.name],
  ] as const;
  await deps.db.withTenant(tenant.id, async (tx) => {
    for (const [purpose, name] of refs) {
      await upsertSecretRef(tx, { tenant_id: tenant.id, purpose, namespace, name });
    }
  });
  return {
    secrets: refs.map(([, name]) => name),
    adapter_token_expires_at: new Date(minted.claims.exp * 1000).toISOString(),
  };
}
