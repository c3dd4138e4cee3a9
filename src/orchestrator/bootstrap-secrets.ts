import { ADAPTER_BOOTSTRAP_SECRET } from '../domains/adapter/adapter-types.ts';
import { installSecretNames } from '../domains/tenants/tenant-creation.ts';
import type { Tenant } from '../domains/tenants/tenant-types.ts';
import type { OrchestratorDeps } from './context.ts';
import { ensureIndexerPki, INDEXER_TLS_SECRET } from './indexer-pki.ts';
import {
  ADAPTER_INDEXER_SECRET,
  ensureIndexerUsers,
  INDEXER_SECURITY_SECRET,
} from './indexer-security.ts';
import { rollIndexerTlsReaders } from './indexer-tls-roll.ts';
import { ADAPTER_TOKEN_SECRET, COMPONENT_BOOTSTRAP_SECRET } from './render.ts';
import { StepFailure } from './step-failure.ts';

/** What writing the indexer's PKI and users (and rolling their readers) needs. */
type IndexerSecretDeps = Pick<
  OrchestratorDeps,
  'namespaces' | 'now' | 'logger' | 'provisioning' | 'kubeConfig'
>;

const missing = (message: string) =>
  new StepFailure('bootstrap_secrets_written', 'install_secrets_missing', message);

/**
 * Spec §9.4 items 4 and 6: the data-plane credentials move from the install-namespace
 * bootstrap Secret into the tenant namespace; the adapter gets its exchange credential and a
 * first JWT. svc also issues the indexer's PKI (indexer-pki.ts) and its users (the adapter's
 * read-only login, indexer-security.ts), keeping what is still fit on a retry or resume. The
 * database records where they are (namespace, name, version), never the values. Also how the
 * reconciler refills a namespace it recreated.
 */
export async function putBootstrapSecrets(
  deps: IndexerSecretDeps & Pick<OrchestratorDeps, 'secrets' | 'tokens'>,
  tenant: Pick<Tenant, 'id'>,
  namespace: string,
): Promise<{ secrets: string[]; adapter_token_expires_at: string }> {
  const names = installSecretNames(tenant.id);
  // A bootstrap Secret lost with its cluster (docs/orchestrator.md "Creation and the cluster") is issued anew, with a fresh
  // adapter credential: the namespace it fills is being built, so nothing holds the old ones.
  await deps.provisioning.restoreBootstrapSecret(deps.secrets, tenant.id);
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
  const indexer = await ensureIndexerSecrets(deps, tenant, namespace);
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
  await deps.provisioning.recordSecretRefs(
    tenant.id,
    namespace,
    refs.map(([purpose, name]) => ({ purpose, name })),
  );
  return {
    secrets: [...refs.map(([, name]) => name), ...indexer.secrets],
    adapter_token_expires_at: new Date(minted.claims.exp * 1000).toISOString(),
  };
}

/**
 * The tenant indexer's PKI (indexer-pki.ts) and its users (indexer-security.ts) in `namespace`,
 * each kept while still fit, and their references. Part of putBootstrapSecrets; also run before
 * a package upgrade or configuration change, so a tenant installed before they existed gets them
 * and certificates with less than 30 days left are re-issued, their readers rolled
 * (docs/charts-tenant.md "Indexer TLS and users"). The indexer's admin password is the one
 * svc-bootstrap already holds in the namespace.
 */
export async function ensureIndexerSecrets(
  deps: IndexerSecretDeps,
  tenant: Pick<Tenant, 'id'>,
  namespace: string,
): Promise<{ secrets: string[]; pki: 'kept' | 'issued' }> {
  const labels = { 'managed-by': 'svc', 'tenant-id': tenant.id };
  const components = await deps.namespaces.readSecret(namespace, COMPONENT_BOOTSTRAP_SECRET);
  const adminPassword = components?.['monitor-bootstrap-password'];
  if (!adminPassword)
    throw missing(
      `monitor-bootstrap-password missing from ${namespace}/${COMPONENT_BOOTSTRAP_SECRET}`,
    );
  const pki = await ensureIndexerPki(deps.namespaces, namespace, labels, deps.now());
  if (pki.action === 'issued') {
    deps.logger.info(
      { tenant_id: tenant.id, namespace, reason: pki.reason },
      'issued the indexer PKI',
    );
  }
  await ensureIndexerUsers(deps.namespaces, namespace, adminPassword, labels);
  // Before an upgrade or a configuration change the workloads exist: a new set rolls its
  // readers (indexer-tls-roll.ts). At provisioning and refill nothing is installed yet.
  const rolled = await rollIndexerTlsReaders(deps, namespace, pki.data);
  if (rolled.length > 0) {
    deps.logger.info(
      { tenant_id: tenant.id, namespace, rolled },
      'rolled the readers of the indexer PKI',
    );
  }
  const refs = [INDEXER_TLS_SECRET, ADAPTER_INDEXER_SECRET, INDEXER_SECURITY_SECRET];
  await deps.provisioning.recordSecretRefs(tenant.id, namespace, refs);
  return { secrets: refs.map((r) => r.name), pki: pki.action };
}
