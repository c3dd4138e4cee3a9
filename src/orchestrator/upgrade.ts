import { ensureIndexerSecrets } from './bootstrap-secrets.ts';
import type { OrchestratorDeps } from './context.ts';
import { ensureEnrollmentTls } from './enrollment-cluster.ts';
import { renderFor } from './release.ts';
import { namespaceOf } from './render.ts';
import { rollOut } from './rollout.ts';
import { bindServiceIdentity } from './service-identity.ts';

/**
 * The orchestrator's half of `POST /api/mssp/tenants/{id}:upgrade` (spec §3.1 last paragraph,
 * §9.4 "Upgrade flow"): the API checked the matrix and recorded the target; here the package is
 * upgraded through the rollout configuration changes share (rollout.ts: helm's watcher bounded
 * by the readiness timeout, rollback to the revision that ran before on failure). The tenant's
 * state does not change either way; the lifecycle records the outcome.
 */
export async function advanceUpgrade(
  deps: OrchestratorDeps,
  tenantId: string,
  signal: AbortSignal,
): Promise<void> {
  const tenant = await deps.provisioning.find(tenantId);
  if (tenant?.state !== 'active' || tenant.upgrade_target === null) return;
  const target = tenant.upgrade_target;
  const namespace = namespaceOf(tenant.slug);
  await bindServiceIdentity(deps, namespace);
  const outcome = await rollOut(
    deps,
    namespace,
    async () => {
      // The indexer PKI and users the package mounts: written for a tenant installed before
      // they existed, re-issued when a certificate has less than 30 days left (the readers
      // rolled, indexer-tls-roll.ts). An indexer whose security index predates them gets svc's
      // users from the chart's security-config sidecar (docs/charts-tenant.md).
      await ensureIndexerSecrets(deps, tenant, namespace);
      // The manager's enrollment certificate, for a tenant installed before svc issued it.
      await ensureEnrollmentTls(deps, tenant);
      return renderFor(deps, tenant, target);
    },
    signal,
  );
  // Compare-and-set on what this run started from (provisioning service finishUpgrade).
  await deps.provisioning.finishUpgrade(tenant, target, outcome);
}
