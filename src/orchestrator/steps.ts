import type { Transaction } from '../db/tenant-context.ts';

/**
 * Provisioning steps (spec §9.4), recorded as TenantLifecycleEvents of kind `step` (§6.2: the
 * lifecycle also records the last completed step for idempotent retry). Order matters: a retry
 * or a restarted orchestrator resumes with the first step not completed.
 */
export const PROVISIONING_STEPS = [
  'install_secrets_written',
  'namespace_created',
  'bootstrap_secrets_written',
  'edge_ports_allocated',
  'package_installed',
  'package_ready',
] as const;
export type ProvisioningStep = (typeof PROVISIONING_STEPS)[number];

/** Bookkeeping steps: not part of the flow, but they change what counts as completed. */
export type MarkerStep =
  | 'rolled_back'
  | 'retry_requested'
  | 'adapter_token_written'
  | 'decommissioned'
  | 'upgrade_requested'
  | 'upgraded'
  | 'upgrade_failed'
  | 'heartbeat_before_ready';

export async function recordStep(
  tx: Transaction,
  tenantId: string,
  step: ProvisioningStep | MarkerStep,
  actor: string,
  details: Record<string, unknown> = {},
): Promise<void> {
  await tx.query(
    `INSERT INTO tenant_lifecycle_events (tenant_id, kind, step, details, actor)
     VALUES ($1, 'step', $2, $3, $4)`,
    [tenantId, step, JSON.stringify(details), actor],
  );
}

export interface StepRecord {
  step: string;
  details: Record<string, unknown>;
  occurredAt: Date;
}

/**
 * Replays the step history: a rollback undoes the steps it lists, so after a failed attempt
 * the completed set is what still exists (the install-namespace Secrets), and a retry starts
 * again at the namespace.
 */
export async function completedSteps(
  tx: Transaction,
  tenantId: string,
): Promise<Map<ProvisioningStep, StepRecord>> {
  const { rows } = await tx.query<{
    step: string;
    details: Record<string, unknown>;
    occurred_at: Date;
  }>(
    `SELECT step, details, occurred_at FROM tenant_lifecycle_events
      WHERE tenant_id = $1 AND kind = 'step' ORDER BY id`,
    [tenantId],
  );
  const done = new Map<ProvisioningStep, StepRecord>();
  for (const row of rows) {
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
