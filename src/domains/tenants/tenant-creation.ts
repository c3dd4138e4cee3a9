import { randomBytes, randomUUID } from 'node:crypto';
import type { TenantConfig } from '../../../contracts/tenant-config.ts';
import type { Identity } from '../../auth/identity.ts';
import type { SecretStore } from '../../cluster/secrets.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { integrationCredentials, withoutSecrets } from './config-secrets.ts';
import { type ConfigChecks, validateTenantConfig } from './tenant-config.ts';
import { insertBranding, insertIntegration, upsertSecretRef } from './tenant-config-repository.ts';
import { insertLifecycleEvent, insertTenant } from './tenant-repository.ts';
import type { BootstrapCredentialIssuer } from './tenant-types.ts';

/** Spec §2.9 naming: Secrets in the install namespace carry the tenant id. */
export function installSecretNames(tenantId: string) {
  return {
    llm: `tenant-${tenantId}-llm`,
    integrations: `tenant-${tenantId}-integrations`,
    bootstrap: `tenant-${tenantId}-bootstrap`,
    /** svc's CA for the tenant's agent enrollment (src/orchestrator/enrollment-pki.ts). */
    enrollmentCa: `tenant-${tenantId}-enrollment-ca`,
  };
}

const secret = () => randomBytes(24).toString('base64url');

/**
 * Spec §9.4 step 2: the per-tenant credentials of the data plane. They wait in the install
 * namespace until the orchestrator has created `tenant-<slug>` (step 4) and copies them there.
 */
function bootstrapBundle(adapterCredential: string, tenantId: string): Record<string, string> {
  return {
    'monitor-bootstrap-password': secret(),
    'cases-admin-password': secret(),
    'analysis-admin-password': secret(),
    'store-password': secret(),
    'monitor-enrollment-secret': secret(),
    'adapter-bootstrap-credential': adapterCredential,
    'tenant-id': tenantId,
  };
}

async function insertConfigRows(
  tx: TenantTx,
  tenantId: string,
  config: TenantConfig,
  namespace: string,
  written: string[],
): Promise<void> {
  const secretIds = new Map<string, string>();
  for (const [purpose, name] of Object.entries(installSecretNames(tenantId))) {
    if (!written.includes(name)) continue;
    secretIds.set(
      purpose,
      await upsertSecretRef(tx, { tenant_id: tenantId, purpose, namespace, name }),
    );
  }
  const b = config.branding;
  if (b) {
    await insertBranding(tx, {
      tenant_id: tenantId,
      app_name: b.app_name,
      logo_url: b.logo_url ?? null,
      primary_color: b.primary_color,
      secondary_color: b.secondary_color,
      favicon: b.favicon ?? '',
    });
  }
  for (const item of config.integrations?.items ?? []) {
    await insertIntegration(tx, {
      tenant_id: tenantId,
      kind: item.kind,
      name: item.name,
      endpoint_url: item.endpoint_url ?? null,
      settings: item.settings ?? {},
      thresholds: item.thresholds ?? {},
      secret_id: item.credential === undefined ? null : (secretIds.get('integrations') ?? null),
    });
  }
}

async function recordCreation(
  tx: TenantTx,
  tenantId: string,
  config: TenantConfig,
  namespace: string,
  written: string[],
  actor: Identity,
): Promise<void> {
  const actorId = `user:${actor.user_id}`;
  await insertLifecycleEvent(tx, tenantId, {
    kind: 'config_revision',
    config_revision: 1,
    details: { config: withoutSecrets(config) },
    actor: actorId,
  });
  await insertLifecycleEvent(tx, tenantId, {
    kind: 'step',
    step: 'install_secrets_written',
    details: { namespace, secrets: written },
    actor: actorId,
  });
  await writeAudit(tx, {
    tenantId,
    actorPrincipal: 'User',
    actorId: actor.user_id,
    action: 'tenant.create',
    resourceType: 'tenant',
    resourceId: tenantId,
    after: { slug: config.slug, display_name: config.display_name, state: 'pending' },
  });
}

export interface CreationDeps {
  db: AppDatabase;
  secrets: SecretStore;
  checks: ConfigChecks;
  issueBootstrapCredential: BootstrapCredentialIssuer;
}

/**
 * Spec §3.1 row 1 and §9.4 steps 1-5. First the whole configuration is checked
 * (tenant-config.ts): a refusal writes nothing. Then, in one transaction: the tenant row (its
 * slug is the uniqueness check), the adapter's bootstrap credential, the Secrets in the install
 * namespace (named by the fresh tenant id and labelled with it), then the Secret references and
 * the first lifecycle events. If anything fails, the transaction rolls back and the Secrets
 * already written are removed. If the process dies before the commit, the Secrets outlive a row
 * that never existed: the orphan collection (orphans.ts) removes them after a grace period.
 * The orchestrator continues from `pending`.
 */
export async function createTenant(
  deps: CreationDeps,
  config: TenantConfig,
  actor: Identity,
): Promise<{ id: string }> {
  const tenantId = randomUUID();
  await validateTenantConfig(config, tenantId, deps.checks);
  const names = installSecretNames(tenantId);
  const labels = { 'tenant-id': tenantId };
  const attempted: string[] = [];
  const write = async (name: string, data: Record<string, string>) => {
    // Recorded before the call: a timed-out create may still have happened.
    attempted.push(name);
    await deps.secrets.create(name, data, labels);
  };
  try {
    return await deps.db.withTenant(tenantId, async (tx) => {
      await insertTenant(tx, {
        id: tenantId,
        slug: config.slug,
        display_name: config.display_name,
      });
      const { secret: adapterCredential } = await deps.issueBootstrapCredential(tx, tenantId);
      await write(names.bootstrap, bootstrapBundle(adapterCredential, tenantId));
      if (config.llm?.api_key !== undefined)
        await write(names.llm, { api_key: config.llm.api_key });
      const credentials = integrationCredentials(config);
      if (Object.keys(credentials).length > 0) await write(names.integrations, credentials);
      await insertConfigRows(tx, tenantId, config, deps.secrets.namespace, attempted);
      await recordCreation(tx, tenantId, config, deps.secrets.namespace, attempted, actor);
      return { id: tenantId };
    });
  } catch (error) {
    await Promise.all(attempted.map((name) => deps.secrets.remove(name).catch(() => undefined)));
    throw error;
  }
}

/**
 * docs/orchestrator.md "Reconciliation": the install-namespace bootstrap Secret of an existing
 * tenant is gone (a replaced cluster, a namespace recreated by hand). Its content is svc's own
 * making, so it can be made again: fresh component passwords and a new adapter bootstrap credential
 * (the old one is replaced in the same transaction, so the database and the Secret always agree).
 * Only for a tenant whose data plane is being (re)provisioned: running components keep the
 * passwords they were installed with. The LLM key and integration credentials cannot be recreated;
 * they exist nowhere else. Returns false when the Secret exists (nothing to do).
 */
export async function restoreBootstrapSecret(
  deps: Pick<CreationDeps, 'db' | 'secrets' | 'issueBootstrapCredential'>,
  tenantId: string,
): Promise<boolean> {
  const name = installSecretNames(tenantId).bootstrap;
  if ((await deps.secrets.read(name)) !== undefined) return false;
  let created = false;
  try {
    await deps.db.withTenant(tenantId, async (tx) => {
      const { secret: adapterCredential } = await deps.issueBootstrapCredential(tx, tenantId);
      await deps.secrets.create(name, bootstrapBundle(adapterCredential, tenantId), {
        'tenant-id': tenantId,
      });
      created = true;
      await upsertSecretRef(tx, {
        tenant_id: tenantId,
        purpose: 'bootstrap',
        namespace: deps.secrets.namespace,
        name,
      });
    });
  } catch (error) {
    // A Secret whose credential the rolled-back transaction never stored would lock the adapter out.
    if (created) await deps.secrets.remove(name).catch(() => undefined);
    throw error;
  }
  return true;
}
