import { setTimeout as sleep } from 'node:timers/promises';
import { readinessReport } from '../cluster/namespaces.ts';
import type { Tenant } from '../domains/tenants/tenant-types.ts';
import type { OrchestratorDeps } from './context.ts';
import { namespaceOf } from './render.ts';
import { failProvisioning } from './rollback.ts';
import { StepFailure } from './step-failure.ts';

export type Readiness = Awaited<ReturnType<typeof readinessReport>>;

export function notReady(report: Readiness): string[] {
  return [
    ...report.workloads
      .filter((w) => w.ready < w.desired)
      .map((w) => `${w.kind}/${w.name} ${w.ready}/${w.desired}`),
    ...report.pvcs.filter((v) => v.phase !== 'Bound').map((v) => `pvc/${v.pvc} ${v.phase}`),
  ];
}

const seconds = (ms: number) => Math.round(ms / 1000);

/**
 * Waits until every workload of the package is Ready (spec §9.4 item 8) with the deadline
 * counted from the moment the tenant entered `provisioning`, so a restarted orchestrator keeps
 * the original deadline. Polling our own report rather than `helm --wait` keeps the wait
 * resumable and the progress visible.
 */
export async function awaitReadiness(
  deps: OrchestratorDeps,
  tenant: Tenant,
  signal: AbortSignal,
): Promise<void> {
  const done = await deps.provisioning.completedSteps(tenant.id);
  const deadline = tenant.state_changed_at.getTime() + deps.timing.readinessTimeoutMs;
  if (done.has('package_ready')) return awaitHeartbeat(deps, tenant, deadline);
  const namespace = namespaceOf(tenant.slug);
  let lastPending: string[] = [];
  for (;;) {
    let report: Readiness | undefined;
    try {
      report = await readinessReport(deps.kubeConfig, namespace);
      lastPending = notReady(report);
    } catch (error) {
      deps.logger.warn({ err: error, tenant_id: tenant.id }, 'readiness read failed; retrying');
    }
    if (report && report.workloads.length > 0 && lastPending.length === 0) {
      await deps.provisioning.markReady(tenant, {
        workloads: report.workloads.length,
        volumes: report.pvcs.length,
      });
      deps.metrics.provisioningStep('package_ready', 'success', waited(deps, tenant));
      return;
    }
    if (deps.now().getTime() >= deadline) {
      deps.metrics.provisioningStep('package_ready', 'failure', waited(deps, tenant));
      const failure = new StepFailure(
        'package_ready',
        'readiness_timeout',
        `package not Ready within ${seconds(deps.timing.readinessTimeoutMs)} s`,
        { not_ready: lastPending.slice(0, 50) },
      );
      await failProvisioning(deps, tenant, failure);
      return;
    }
    await sleep(deps.timing.readinessPollMs, undefined, { signal });
  }
}

/**
 * The readiness wait, counted from the tenant's entry into `provisioning` (spans restarts,
 * like the deadline).
 */
function waited(deps: Pick<OrchestratorDeps, 'now'>, tenant: Tenant): number {
  return Math.max(0, deps.now().getTime() - tenant.state_changed_at.getTime()) / 1000;
}

/** The package is Ready; activation needs the adapter's heartbeat too. */
async function awaitHeartbeat(
  deps: OrchestratorDeps,
  tenant: Tenant,
  deadline: number,
): Promise<void> {
  // A heartbeat that found the tenant locked (this orchestrator recording readiness) was
  // noted instead of activating: complete it here.
  const activated = await deps.provisioning.activateFromNotedHeartbeat(tenant);
  if (activated) return;
  // §3.1 row 3 needs the heartbeat within the same timeout: a package that is Ready but
  // whose adapter never reports is not a working tenant.
  if (deps.now().getTime() < deadline) return;
  const failure = new StepFailure(
    'package_ready',
    'adapter_silent',
    `package Ready but no adapter heartbeat within ${seconds(deps.timing.readinessTimeoutMs)} s`,
  );
  await failProvisioning(deps, tenant, failure);
}
