import type { TenantTx } from '../../db/tenant-context.ts';
import { insertLifecycleEvent } from '../tenants/tenant-repository.ts';
import { stepHistory } from './provisioning-repository.ts';
import {
  type MarkerStep,
  PROVISIONING_STEPS,
  type ProvisioningStep,
  type StepRecord,
} from './provisioning-types.ts';

/** A completed step (or a marker) in the tenant's lifecycle: what a retry resumes after. */
export async function recordStep(
  tx: TenantTx,
  tenantId: string,
  step: ProvisioningStep | MarkerStep,
  actor: string,
  details: Record<string, unknown> = {},
): Promise<void> {
  await insertLifecycleEvent(tx, tenantId, { kind: 'step', step, actor, details });
}

/** A failure the operator reads on the tenant's event stream (kept on the tenant as well). */
export async function recordError(
  tx: TenantTx,
  tenantId: string,
  step: string,
  actor: string,
  details: Record<string, unknown>,
): Promise<void> {
  await insertLifecycleEvent(tx, tenantId, { kind: 'error', step, actor, details });
}

/**
 * Replays the step history: a rollback undoes the steps it lists, so after a failed attempt
 * the completed set is what still exists (the install-namespace Secrets), and a retry starts
 * again at the namespace.
 */
export async function completedSteps(
  tx: TenantTx,
  tenantId: string,
): Promise<Map<ProvisioningStep, StepRecord>> {
  const done = new Map<ProvisioningStep, StepRecord>();
  for (const row of await stepHistory(tx, tenantId)) {
    if (row.step === 'rolled_back') {
      for (const undone of (row.details.undone as string[] | undefined) ?? []) {
        done.delete(undone as ProvisioningStep);
      }
    } else if ((PROVISIONING_STEPS as readonly string[]).includes(row.step)) {
      done.set(row.step as ProvisioningStep, {
        step: row.step,
        details: row.details,
        occurredAt: row.occurred_at,
      });
    }
  }
  return done;
}

/** The first step of the flow not yet completed, or undefined when all are. */
export function nextStep(
  done: ReadonlyMap<ProvisioningStep, unknown>,
): ProvisioningStep | undefined {
  return PROVISIONING_STEPS.find((step) => !done.has(step));
}
