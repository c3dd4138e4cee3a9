import type { Tenant } from '../domains/tenants/tenant-types.ts';
import type { OrchestratorDeps } from './context.ts';
import { RELEASE_NAME } from './release.ts';
import { namespaceLabels, namespaceOf } from './render.ts';
import { type StepFailure, shortMessage } from './step-failure.ts';

/**
 * Spec §3.1 row 4 and §7: a failed step rolls back (package uninstalled, namespace deleted);
 * the provisioning service keeps the error on the tenant and leaves it pending for a retry. The
 * install-namespace Secrets stay: a retry resumes from the namespace.
 */
export async function failProvisioning(
  deps: Pick<
    OrchestratorDeps,
    'logger' | 'helm' | 'timing' | 'namespaces' | 'install' | 'provisioning' | 'now'
  >,
  tenant: Tenant,
  failure: StepFailure,
  ownsNamespace = true,
): Promise<void> {
  deps.logger.warn(
    { tenant_id: tenant.id, step: failure.step, code: failure.code, err: failure },
    'provisioning failed; rolling back',
  );
  const rollback = ownsNamespace
    ? await removeOwnedNamespace(deps, tenant)
    : { namespace: 'not created by svc; left alone' };
  await deps.provisioning.recordProvisioningFailure(tenant, failure, rollback, deps.now());
}

/** Uninstall, then delete the namespace; each outcome is reported, neither stops the other. */
async function removeOwnedNamespace(
  deps: Pick<OrchestratorDeps, 'helm' | 'timing' | 'namespaces' | 'install'>,
  tenant: Tenant,
): Promise<Record<string, string>> {
  const namespace = namespaceOf(tenant.slug);
  const rollback: Record<string, string> = {};
  try {
    await deps.helm.uninstall({
      release: RELEASE_NAME,
      namespace,
      timeoutMs: deps.timing.helmTimeoutMs,
      wait: true,
    });
    rollback.package = 'uninstalled';
  } catch (error) {
    rollback.package = `uninstall failed: ${shortMessage(error)}`;
  }
  try {
    await deps.namespaces.remove(namespace, {
      waitMs: deps.timing.namespaceDeleteMs,
      expectLabels: namespaceLabels(tenant.id, deps.install),
    });
    rollback.namespace = 'deleted';
  } catch (error) {
    rollback.namespace = `delete failed: ${shortMessage(error)}`;
  }
  return rollback;
}
