import { isCanonicalUuid } from '../../contracts/uuid.ts';
import type { SecretStore } from '../cluster/secrets.ts';
import type { ProvisioningService } from '../domains/provisioning/provisioning-service.ts';
import { installSecretNames } from '../domains/tenants/tenant-creation.ts';
import type { Logger } from '../log/index.ts';

/**
 * Longer than any creating transaction can stay open (it holds the Secrets it wrote until it
 * commits), with room for clock skew between svc and the API server.
 */
export const ORPHAN_GRACE_MS = 15 * 60_000;

/**
 * Tenant creation writes its install-namespace Secrets inside the transaction that inserts the
 * tenant row (tenant-creation.ts); if svc dies before the commit, the Secrets stay and the row never
 * existed. This removes such orphans: a Secret is collected only when svc made it (label
 * `managed-by=svc`, a `tenant-id` label holding a tenant id, and exactly the name svc gives that
 * tenant's Secrets), no tenant row with that id exists, and it is older than the grace period.
 * Anything else in the namespace is never touched. The delete is conditional on the uid, so a
 * Secret recreated meanwhile survives. Returns the names removed.
 */
export async function collectOrphanSecrets(
  deps: {
    provisioning: Pick<ProvisioningService, 'existingTenantIds'>;
    secrets: SecretStore;
    now: () => Date;
    logger: Logger;
  },
  graceMs: number = ORPHAN_GRACE_MS,
): Promise<string[]> {
  const candidates = (await deps.secrets.list('managed-by=svc,tenant-id')).filter((s) => {
    const id = s.labels['tenant-id'] ?? '';
    return (
      isCanonicalUuid(id) &&
      Object.values(installSecretNames(id)).includes(s.name) &&
      deps.now().getTime() - s.createdAt.getTime() >= graceMs
    );
  });
  if (candidates.length === 0) return [];
  const ids = [...new Set(candidates.map((s) => s.labels['tenant-id'] ?? ''))];
  const existing = await deps.provisioning.existingTenantIds(ids);
  const removed: string[] = [];
  for (const secret of candidates) {
    if (existing.has(secret.labels['tenant-id'] ?? '')) continue;
    try {
      await deps.secrets.remove(secret.name, secret.uid);
      removed.push(secret.name);
    } catch (error) {
      deps.logger.warn(
        { err: error, secret: secret.name },
        'orphan Secret not removed; retried later',
      );
    }
  }
  if (removed.length > 0)
    deps.logger.info(
      { namespace: deps.secrets.namespace, secrets: removed },
      'removed Secrets of tenant creations that never committed',
    );
  return removed;
}
