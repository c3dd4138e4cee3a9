import { randomBytes, randomUUID } from 'node:crypto';
import type { TenantConfig } from '../../../contracts/tenant-config.ts';
import type { Identity } from '../../auth/identity.ts';
import type { SecretStore } from '../../cluster/secrets.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { Transaction } from '../../db/tenant-context.ts';
import { issueBootstrapCredential } from '../adapter/index.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { integrationCredentials, withoutSecrets } from './config-secrets.ts';
import { type ConfigChecks, validateTenantConfig } from './tenant-config.ts';

export class SlugTakenError extends Error {
  override name = 'SlugTakenError';
}

/** Spec §2.9 naming: Secrets in the install namespace carry the tenant id. */
export function installSecretNames(tenantId: string) {
  return {
    llm: `tenant-${tenantId}-llm`,
    integrations: `tenant-${tenantId}-integrations`,
    bootstrap: `tenant-${tenantId}-bootstrap`,
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

async function insertTenantRows(
  tx: Transaction,
  tenantId: string,
  config: TenantConfig,
  namespace: string,
  written: string[],
  actor: Identity,
): Promise<void> {
  const names = installSecretNames(tenantId);
  const secretIds = new Map<string, string>();
  for (const [purpose, name] of Object.entries(names)) {
    if (!written.includes(name)) continue;
    const { rows } = await tx.query<{ id: string }>(
      'INSERT INTO tenant_secrets (tenant_id, purpose, namespace, name) VALUES ($1, $2, $3, $4) RETURNING id',
      [tenantId, purpose, namespace, name],
    );
    secretIds.set(purpose, rows[0]?.id ?? '');
  }
  if (config.branding) {
    const b = config.branding;
    await tx.query(
      `INSERT INTO branding_configs (tenant_id, app_name, logo_url, primary_color, secondary_color, favicon)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        tenantId,
        b.app_name,
        b.logo_url ?? null,
        b.primary_color,
        b.secondary_color,
        b.favicon ?? '',
      ],
    );
  }
  for (const item of config.integrations?.items ?? []) {
    await tx.query(
      `INSERT INTO integration_configs (tenant_id, kind, name, endpoint_url, settings, thresholds, secret_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        tenantId,
        item.kind,
        item.name,
        item.endpoint_url ?? null,
        JSON.stringify(item.settings ?? {}),
        JSON.stringify(item.thresholds ?? {}),
        item.credential === undefined ? null : (secretIds.get('integrations') ?? null),
      ],
    );
  }
  const actorId = `user:${actor.user_id}`;
  await tx.query(
    `INSERT INTO tenant_lifecycle_events (tenant_id, kind, config_revision, details, actor)
     VALUES ($1, 'config_revision', 1, $2, $3)`,
    [tenantId, JSON.stringify({ config: withoutSecrets(config) }), actorId],
  );
  await tx.query(
    `INSERT INTO tenant_lifecycle_events (tenant_id, kind, step, details, actor)
     VALUES ($1, 'step', 'install_secrets_written', $2, $3)`,
    [tenantId, JSON.stringify({ namespace, secrets: written }), actorId],
  );
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

async function insertTenant(
  tx: Transaction,
  tenantId: string,
  config: TenantConfig,
): Promise<void> {
  try {
    await tx.query('INSERT INTO tenants (id, slug, display_name) VALUES ($1, $2, $3)', [
      tenantId,
      config.slug,
      config.display_name,
    ]);
  } catch (error) {
    if ((error as { constraint?: string }).constraint === 'tenants_slug_key') {
      throw new SlugTakenError(config.slug);
    }
    throw error;
  }
}

/**
 * Spec §3.1 row 1 and §9.4 steps 1-5. First the whole configuration is checked
 * (validate-config.ts): a refusal writes nothing. Then, in one transaction: the tenant row (its
 * slug is the uniqueness check), the adapter's bootstrap credential, the Secrets in the install
 * namespace (named by the fresh tenant id and labelled with it), then the Secret references and
 * the first lifecycle events. If anything fails, the transaction rolls back and the Secrets
 * already written are removed. If the process dies before the commit, the Secrets outlive a row
 * that never existed: the orphan collection (orphans.ts) removes them after a grace period.
 * The orchestrator continues from `pending`.
 */
export async function createTenant(
  deps: { db: AppDatabase; secrets: SecretStore; checks: ConfigChecks },
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
      await insertTenant(tx, tenantId, config);
      const { secret: adapterCredential } = await issueBootstrapCredential(tx, tenantId);
      await write(names.bootstrap, bootstrapBundle(adapterCredential, tenantId));
      if (config.llm?.api_key !== undefined)
        await write(names.llm, { api_key: config.llm.api_key });
      const credentials = integrationCredentials(config);
      if (Object.keys(credentials).length > 0) await write(names.integrations, credentials);
      await insertTenantRows(tx, tenantId, config, deps.secrets.namespace, attempted, actor);
      return { id: tenantId };
    });
  } catch (error) {
    await Promise.all(attempted.map((name) => deps.secrets.remove(name).catch(() => undefined)));
    throw error;
  }
}

/**
 * Issue 18 item 8: the install-namespace bootstrap Secret of an existing tenant is gone (a
 * replaced cluster, a namespace recreated by hand). Its content is svc's own making, so it can
 * be made again: fresh component passwords and a new adapter bootstrap credential (the old one
 * is replaced in the same transaction, so the database and the Secret always agree). Only for
 * a tenant whose data plane is being (re)provisioned: running components keep the passwords
 * they were installed with. The LLM key and integration credentials cannot be recreated; they
 * exist nowhere else. Returns false when the Secret exists (nothing to do).
 */
export async function restoreBootstrapSecret(
  deps: { db: AppDatabase; secrets: SecretStore },
  tenantId: string,
): Promise<boolean> {
  const name = installSecretNames(tenantId).bootstrap;
  if ((await deps.secrets.read(name)) !== undefined) return false;
  let created = false;
  try {
    await deps.db.withTenant(tenantId, async (tx) => {
      const { secret: adapterCredential } = await issueBootstrapCredential(tx, tenantId);
      await deps.secrets.create(name, bootstrapBundle(adapterCredential, tenantId), {
        'tenant-id': tenantId,
      });
      created = true;
      await tx.query(
        `INSERT INTO tenant_secrets (tenant_id, purpose, namespace, name) VALUES ($1, 'bootstrap', $2, $3)
       ON CONFLICT (tenant_id, purpose) DO UPDATE
         SET namespace = excluded.namespace, name = excluded.name,
             version = tenant_secrets.version + 1, rotated_at = now()`,
        [tenantId, deps.secrets.namespace, name],
      );
    });
  } catch (error) {
    // A Secret whose credential the rolled-back transaction never stored would lock the adapter out.
    if (created) await deps.secrets.remove(name).catch(() => undefined);
    throw error;
  }
  return true;
}
