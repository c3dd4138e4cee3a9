import { installSecretNames } from '../domains/tenants/tenant-creation.ts';
import type { Tenant } from '../domains/tenants/tenant-types.ts';
import type { OrchestratorDeps } from './context.ts';
import { syncEdgeProxyAfter } from './edge-proxy.ts';
import { inspectNamespace } from './reconcile.ts';
import { RELEASE_NAME } from './release.ts';
import { namespaceLabels, namespaceOf } from './render.ts';
import { describeFailure, StepFailure, shortMessage } from './step-failure.ts';

/**
 * Spec §3.1 rows 5–6: once the grace period is over (the orchestrator only calls this then),
 * the package is uninstalled, the namespace deleted, the install-namespace Secrets removed and
 * the tenant soft-deleted. Each cluster step is idempotent, so a crash in between repeats it.
 * The rows stay until the retention window ends (purgeTenant).
 *
 * The same path removes a tenant that never became active (docs/orchestrator.md "Decommission
 * and purge"): whatever its attempts left is removed, what svc never created is not looked at.
 * A decommission that cannot finish (a namespace replaced by one without svc's labels, the
 * cluster refusing) is kept as the tenant's `error_details` and an `error` lifecycle event, and
 * tried again on every pass, so it completes by itself once the cause is gone.
 */
export async function advanceDecommission(deps: OrchestratorDeps, tenantId: string): Promise<void> {
  const tenant = await deps.provisioning.find(tenantId);
  if (tenant?.state !== 'decommissioning') return;
  let removed: Awaited<ReturnType<typeof removeClusterObjects>>;
  try {
    removed = await removeClusterObjects(deps, tenant);
  } catch (error) {
    await recordStall(deps, tenant, describeFailure('decommissioned', error));
    return;
  }
  const retentionEndsAt = new Date(deps.now().getTime() + deps.timing.retentionMs);
  await deps.provisioning.recordSoftDelete(tenant, removed, {
    namespace: namespaceOf(tenant.slug),
    release: RELEASE_NAME,
    retentionEndsAt,
  });
  // Its pair is released: the proxy stops listening on it.
  if (tenant.edge_port_pair !== null) await syncEdgeProxyAfter(deps, 'decommissioned', tenant.id);
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
    const created = (await deps.provisioning.completedSteps(tenant.id)).has('namespace_created');
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
  deps: Pick<OrchestratorDeps, 'logger' | 'now' | 'provisioning'>,
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
  await deps.provisioning.recordDecommissionStall(tenant.id, errorDetails);
}

/** Spec §3.1 last row: after the retention window the tenant and all its rows are removed. */
export function purgeTenant(
  deps: Pick<OrchestratorDeps, 'provisioning'>,
  tenantId: string,
): Promise<void> {
  return deps.provisioning.purge(tenantId);
}
