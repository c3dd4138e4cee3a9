import type { TenantTx } from '../db/tenant-context.ts';
import { writeAudit } from '../domains/audit/audit-repository.ts';
import {
  deleteTenantRows,
  lockSoftDeleted,
  releaseEdgePortPair,
  setErrorDetails,
} from '../domains/provisioning/provisioning-repository.ts';
import { installSecretNames } from '../domains/tenants/tenant-creation.ts';
import { tryTransition } from '../domains/tenants/tenant-lifecycle.ts';
import { findTenant } from '../domains/tenants/tenant-repository.ts';
import type { Tenant } from '../domains/tenants/tenant-types.ts';
import { ORCHESTRATOR_ACTOR, type OrchestratorDeps } from './context.ts';
import { syncEdgeProxyAfter } from './edge-proxy.ts';
import { inspectNamespace } from './reconcile.ts';
import { RELEASE_NAME } from './release.ts';
import { namespaceLabels, namespaceOf } from './render.ts';
import { describeFailure, StepFailure, shortMessage } from './step-failure.ts';
import { completedSteps, recordError, recordStep } from './steps.ts';

/**
 * Spec §3.1 rows 5–6: once the grace period is over (the orchestrator only calls this then),
 * the package is uninstalled, the namespace deleted, the install-namespace Secrets removed and
 * the tenant soft-deleted. Each cluster step is idempotent, so a crash in between repeats it.
 * The rows stay until the retention window ends (purgeTenant).
 *
 * The same path removes a tenant that never became active (issue 18 item 4): whatever its
 * attempts left is removed, what svc never created is not looked at. A decommission that
 * cannot finish (a namespace replaced by one without svc's labels, the cluster refusing) is
 * kept as the tenant's `error_details` and an `error` lifecycle event (item 9), and tried
 * again on every pass, so it completes by itself once the cause is gone.
 */
export async function advanceDecommission(deps: OrchestratorDeps, tenantId: string): Promise<void> {
  const tenant = await deps.db.withoutTenant((tx) => findTenant(tx, tenantId));
  if (tenant?.state !== 'decommissioning') return;
  let removed: Removed;
  try {
    removed = await removeClusterObjects(deps, tenant);
  } catch (error) {
    await recordStall(deps, tenant, describeFailure('decommissioned', error));
    return;
  }
  const retentionEndsAt = new Date(deps.now().getTime() + deps.timing.retentionMs);
  await deps.db.withTenant(tenant.id, (tx) =>
    recordSoftDelete(tx, tenant, removed, retentionEndsAt),
  );
  // Its pair is released: the proxy stops listening on it.
  if (tenant.edge_port_pair !== null) await syncEdgeProxyAfter(deps, 'decommissioned', tenant.id);
}

type Removed = Awaited<ReturnType<typeof removeClusterObjects>>;

/** Spec §3.1 row 6: the cluster objects are gone; the tenant's rows wait for the purge. */
async function recordSoftDelete(
  tx: TenantTx,
  tenant: Tenant,
  removed: Removed,
  retentionEndsAt: Date,
): Promise<void> {
  const namespace = namespaceOf(tenant.slug);
  await recordStep(tx, tenant.id, 'decommissioned', ORCHESTRATOR_ACTOR, {
    namespace,
    release: RELEASE_NAME,
    ...removed,
  });
  await releaseEdgePortPair(tx, tenant.id);
  const moved = await tryTransition(tx, {
    tenantId: tenant.id,
    trigger: 'grace_period_ended',
    actor: ORCHESTRATOR_ACTOR,
    details: { namespace, retention_ends_at: retentionEndsAt.toISOString() },
    errorDetails: null,
  });
  if (!moved) return;
  await writeAudit(tx, {
    tenantId: tenant.id,
    actorPrincipal: 'System',
    actorId: ORCHESTRATOR_ACTOR,
    action: 'tenant.soft_delete',
    resourceType: 'tenant',
    resourceId: tenant.id,
    before: { state: 'decommissioning' },
    after: { state: 'soft-deleted' },
    details: { namespace, removed_secrets: removed.removed_secrets },
  });
}

/**
 * Uninstall and namespace delete only in a namespace carrying svc's labels for this tenant
 * (a release lives in its namespace: no namespace, no release). A namespace without those
 * labels is left alone; it stalls the decommission only if svc's record says svc created the
 * tenant's namespace (then someone replaced it, and svc's objects may be inside). A tenant
 * whose namespace step never completed (a conflict, a rolled-back attempt) has nothing there.
 */
async function removeClusterObjects(deps: OrchestratorDeps, tenant: Tenant) {
  const namespace = namespaceOf(tenant.slug);
  const ownership = await inspectNamespace(deps, tenant);
  if (ownership === 'foreign') {
    const created = await deps.db.withTenant(tenant.id, async (tx) =>
      (await completedSteps(tx, tenant.id)).has('namespace_created'),
    );
    if (created) {
      throw new StepFailure(
        'decommissioned',
        'namespace_conflict',
        `namespace ${namespace} no longer carries svc's labels for this tenant (replaced?); ` +
          'svc neither uninstalls in it nor deletes it. Remove or relabel it: the decommission ' +
          'then completes by itself',
        { namespace },
      );
    }
  }
  let uninstall = 'nothing to uninstall: no namespace of this tenant';
  let outcome = ownership === 'foreign' ? "not svc's; left alone" : 'absent';
  if (ownership === 'ours' || ownership === 'terminating') {
    uninstall = await deps.helm
      .uninstall({
        release: RELEASE_NAME,
        namespace,
        timeoutMs: deps.timing.helmTimeoutMs,
        wait: true,
      })
      .then(
        () => 'uninstalled',
        // Deleting the namespace removes the release too; the uninstall is the orderly way, not
        // the only one. After a crash between the two, svc's RoleBinding is gone with the
        // namespace and helm answers 403: waiting on it would keep the tenant here forever.
        (error: unknown) => {
          deps.logger.warn(
            { err: error, tenant_id: tenant.id },
            'uninstall failed; deleting the namespace',
          );
          return `failed: ${shortMessage(error)}`;
        },
      );
    await deps.namespaces.remove(namespace, {
      waitMs: deps.timing.namespaceDeleteMs,
      expectLabels: namespaceLabels(tenant.id, deps.install),
    });
    outcome = 'deleted';
  }
  const names = Object.values(installSecretNames(tenant.id));
  for (const name of names) await deps.secrets.remove(name);
  return { uninstall, namespace_removal: outcome, removed_secrets: names };
}

/**
 * Keeps why the decommission cannot finish on the tenant and in the lifecycle (→ event
 * stream), once per distinct cause: the next passes retry without repeating the event.
 */
async function recordStall(
  deps: OrchestratorDeps,
  tenant: Tenant,
  failure: StepFailure,
): Promise<void> {
  const previous = tenant.error_details;
  if (previous?.code === failure.code && previous.message === failure.message) return;
  deps.logger.warn(
    { tenant_id: tenant.id, code: failure.code, err: failure },
    'decommission stalled; retried on every pass',
  );
  const errorDetails = {
    step: failure.step,
    code: failure.code,
    message: failure.message,
    ...failure.details,
    failed_at: deps.now().toISOString(),
  };
  await deps.db.withTenant(tenant.id, async (tx) => {
    await setErrorDetails(tx, tenant.id, 'decommissioning', errorDetails);
    await recordError(tx, tenant.id, failure.step, ORCHESTRATOR_ACTOR, errorDetails);
  });
}

/**
 * Spec §3.1 last row: after the retention window the tenant and all its rows are removed.
 * This crosses every tenant table at once, so it runs through the System gate (audited entry)
 * and writes its own audit row, which keeps the tenant's id.
 */
export async function purgeTenant(deps: OrchestratorDeps, tenantId: string): Promise<void> {
  await deps.system.withSystem('tenant.purge', async (tx) => {
    const tenant = await lockSoftDeleted(tx, tenantId);
    if (!tenant) return;
    const removed = await deleteTenantRows(tx, tenantId);
    await writeAudit(tx, {
      tenantId,
      actorPrincipal: 'System',
      actorId: ORCHESTRATOR_ACTOR,
      action: 'tenant.purge',
      resourceType: 'tenant',
      resourceId: tenantId,
      before: {
        state: 'soft-deleted',
        slug: tenant.slug,
        deleted_at: tenant.deleted_at.toISOString(),
      },
      after: null,
      details: { removed },
    });
  });
}
