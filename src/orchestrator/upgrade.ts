import { writeAudit } from '../domains/audit/audit-repository.ts';
import {
  completeUpgrade,
  dropUpgradeTarget,
} from '../domains/provisioning/provisioning-repository.ts';
import { findTenant } from '../domains/tenants/tenant-repository.ts';
import { ensureIndexerSecrets } from './bootstrap-secrets.ts';
import { ORCHESTRATOR_ACTOR, type OrchestratorDeps } from './context.ts';
import { renderFor } from './release.ts';
import { namespaceOf } from './render.ts';
import { rollOut } from './rollout.ts';
import { bindServiceIdentity } from './service-identity.ts';
import { recordStep } from './steps.ts';

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
  const tenant = await deps.db.withoutTenant((tx) => findTenant(tx, tenantId));
  if (tenant?.state !== 'active' || tenant.upgrade_target === null) return;
  const target = tenant.upgrade_target;
  const namespace = namespaceOf(tenant.slug);
  await bindServiceIdentity(deps, namespace);
  const outcome = await rollOut(
    deps,
    namespace,
    async () => {
      // The indexer PKI and users the package mounts: written for a tenant installed before
      // they existed, re-issued when a certificate has less than 30 days left.
      await ensureIndexerSecrets(deps, tenant, namespace);
      return renderFor(deps, tenant, target);
    },
    signal,
  );
  await deps.db.withTenant(tenant.id, async (tx) => {
    const from = tenant.chart_version;
    if (outcome.ok) {
      // Compare-and-set on what this run started from: the chart version is only written for
      // the upgrade still asked for on a tenant still active.
      await completeUpgrade(tx, tenant.id, target);
      await recordStep(tx, tenant.id, 'upgraded', ORCHESTRATOR_ACTOR, { from, to: target });
    } else {
      await dropUpgradeTarget(tx, tenant.id, target);
      await recordStep(tx, tenant.id, 'upgrade_failed', ORCHESTRATOR_ACTOR, {
        from,
        to: target,
        error: outcome.error,
        rolled_back_to_revision: outcome.rolledBackTo,
      });
    }
    await writeAudit(tx, {
      tenantId: tenant.id,
      actorPrincipal: 'System',
      actorId: ORCHESTRATOR_ACTOR,
      action: outcome.ok ? 'tenant.upgrade.complete' : 'tenant.upgrade.fail',
      resourceType: 'tenant',
      resourceId: tenant.id,
      before: { chart_version: from },
      after: { chart_version: outcome.ok ? target : from },
      details: outcome.ok ? {} : { error: outcome.error },
    });
  });
}
