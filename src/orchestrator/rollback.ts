import type { TenantTx } from '../db/tenant-context.ts';
import { writeAudit } from '../domains/audit/audit-repository.ts';
import { setErrorDetails } from '../domains/provisioning/provisioning-repository.ts';
import { PROVISIONING_STEPS } from '../domains/provisioning/provisioning-types.ts';
import { tryTransition } from '../domains/tenants/tenant-lifecycle.ts';
import type { Tenant } from '../domains/tenants/tenant-types.ts';
import { ORCHESTRATOR_ACTOR, type OrchestratorDeps } from './context.ts';
import { RELEASE_NAME } from './release.ts';
import { namespaceLabels, namespaceOf } from './render.ts';
import { type StepFailure, shortMessage } from './step-failure.ts';
import { recordError, recordStep } from './steps.ts';

/**
 * Spec §3.1 row 4 and §7: a failed step rolls back (package uninstalled, namespace deleted),
 * keeps the error on the tenant, and leaves it pending for an operator's retry. The
 * install-namespace Secrets stay: a retry resumes from the namespace.
 */
export async function failProvisioning(
  deps: OrchestratorDeps,
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
  const errorDetails = {
    step: failure.step,
    code: failure.code,
    message: failure.message,
    ...failure.details,
    rollback,
    failed_at: deps.now().toISOString(),
  };
  await deps.db.withTenant(tenant.id, (tx) =>
    recordFailure(tx, tenant, failure, { rollback, errorDetails }),
  );
}

/** Uninstall, then delete the namespace; each outcome is reported, neither stops the other. */
async function removeOwnedNamespace(
  deps: OrchestratorDeps,
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

async function recordFailure(
  tx: TenantTx,
  tenant: Tenant,
  failure: StepFailure,
  outcome: { rollback: Record<string, string>; errorDetails: Record<string, unknown> },
): Promise<void> {
  const { rollback, errorDetails } = outcome;
  const undone = PROVISIONING_STEPS.filter((s) => s !== 'install_secrets_written');
  await recordStep(tx, tenant.id, 'rolled_back', ORCHESTRATOR_ACTOR, { undone, ...rollback });
  await recordError(tx, tenant.id, failure.step, ORCHESTRATOR_ACTOR, errorDetails);
  const moved = await tryTransition(tx, {
    tenantId: tenant.id,
    trigger: 'provisioning_failed',
    actor: ORCHESTRATOR_ACTOR,
    details: { code: failure.code },
    errorDetails,
  });
  // Failed before leaving pending: no transition, but the error is kept all the same.
  if (!moved) await setErrorDetails(tx, tenant.id, 'pending', errorDetails);
  await writeAudit(tx, {
    tenantId: tenant.id,
    actorPrincipal: 'System',
    actorId: ORCHESTRATOR_ACTOR,
    action: 'tenant.provision.fail',
    resourceType: 'tenant',
    resourceId: tenant.id,
    before: { state: tenant.state },
    after: { state: 'pending' },
    details: { step: failure.step, code: failure.code, rollback },
  });
}
