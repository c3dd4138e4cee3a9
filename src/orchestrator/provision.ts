import { SERVICE_IDENTITY_BINDING } from '../cluster/namespaces.ts';
import { nextStep } from '../domains/provisioning/provisioning-steps.ts';
import type { ProvisioningStep } from '../domains/provisioning/provisioning-types.ts';
import type { Tenant } from '../domains/tenants/tenant-types.ts';
import { putBootstrapSecrets } from './bootstrap-secrets.ts';
import { type OrchestratorDeps, tenantClusterRole } from './context.ts';
import { allocateEdgePorts } from './edge-ports.ts';
import { syncEdgeProxyAfter } from './edge-proxy.ts';
import { ensureEnrollmentTls } from './enrollment-cluster.ts';
import { awaitReadiness } from './readiness.ts';
import { installPackage } from './release.ts';
import { namespaceLabels, namespaceOf } from './render.ts';
import { failProvisioning } from './rollback.ts';
import { bindServiceIdentity } from './service-identity.ts';
import { describeFailure, StepFailure } from './step-failure.ts';

/**
 * Drives one tenant as far as it can go now: the remaining provisioning steps of a pending
 * tenant, then the readiness wait of a provisioning one. Each step is idempotent and recorded
 * when done, so running this again (retry, restart, another replica) resumes after the last
 * completed step. The caller holds the tenant's lock.
 */
export async function advanceProvisioning(
  deps: OrchestratorDeps,
  tenantId: string,
  signal: AbortSignal,
): Promise<void> {
  for (;;) {
    signal.throwIfAborted();
    const tenant = await deps.provisioning.find(tenantId);
    if (!tenant) return;
    if (tenant.state === 'provisioning') return awaitReadiness(deps, tenant, signal);
    if (tenant.state !== 'pending' || tenant.error_details !== null) return;
    const done = await deps.provisioning.completedSteps(tenantId);
    const step = nextStep(done);
    if (step === undefined || step === 'package_ready') return; // transition already made
    try {
      await timedStep(deps, tenant, step);
    } catch (error) {
      if (signal.aborted) throw error;
      // Before its namespace_created step, `tenant-<slug>` is not svc's (it may be someone
      // else's namespace of that name): the rollback leaves it alone.
      const failure = describeFailure(step, error);
      await failProvisioning(deps, tenant, failure, done.has('namespace_created'));
      return;
    }
  }
}

/** runStep, its duration and outcome counted (`svc_provisioning_step_duration_seconds`). */
async function timedStep(
  deps: OrchestratorDeps,
  tenant: Tenant,
  step: ProvisioningStep,
): Promise<void> {
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  try {
    await runStep(deps, tenant, step);
  } catch (error) {
    deps.metrics.provisioningStep(step, 'failure', seconds());
    throw error;
  }
  deps.metrics.provisioningStep(step, 'success', seconds());
}

async function runStep(
  deps: OrchestratorDeps,
  tenant: Tenant,
  step: ProvisioningStep,
): Promise<void> {
  const namespace = namespaceOf(tenant.slug);
  switch (step) {
    case 'install_secrets_written':
      // Written by the API in the creating transaction; a tenant without it was not created
      // by svc and is not ours to provision.
      throw new StepFailure(step, 'install_secrets_missing', 'install-namespace Secrets missing');
    case 'namespace_created':
      return record(deps, tenant.id, step, await createNamespace(deps, tenant, namespace));
    case 'bootstrap_secrets_written': {
      const written = await putBootstrapSecrets(deps, tenant, namespace);
      // The manager's enrollment certificate, mounted by the package installed next.
      const enrollment = await ensureEnrollmentTls(deps, tenant);
      return record(deps, tenant.id, step, {
        namespace,
        ...written,
        enrollment_tls: { ca: enrollment.ca, certificate: enrollment.certificate },
      });
    }
    case 'edge_ports_allocated': {
      const allocation = await edgePortsFor(deps, tenant.id);
      await record(deps, tenant.id, step, allocation);
      // The proxy fronts the pair from now on; its Service may come later (init-addr none).
      if (allocation.ports) await syncEdgeProxyAfter(deps, step, tenant.id);
      return;
    }
    case 'package_installed':
      return installPackage(deps, tenant, namespace);
    case 'package_ready':
      return;
  }
}

/** The namespace with svc's labels, and svc's rights inside it. */
async function createNamespace(
  deps: Pick<OrchestratorDeps, 'namespaces' | 'install'>,
  tenant: Tenant,
  namespace: string,
) {
  const outcome = await deps.namespaces.ensure(namespace, namespaceLabels(tenant.id, deps.install));
  const binding = await bindServiceIdentity(deps, namespace);
  return {
    namespace,
    outcome,
    role_binding: {
      name: SERVICE_IDENTITY_BINDING,
      cluster_role: tenantClusterRole(deps.install),
      outcome: binding,
    },
  };
}

/** Only a tenant whose monitor ingress goes through the edge proxy gets a port pair. */
async function edgePortsFor(
  deps: Pick<OrchestratorDeps, 'provisioning' | 'edgePortBase'>,
  tenantId: string,
) {
  const config = await deps.provisioning.storedConfig(tenantId);
  if (config.monitor_ingress?.mode !== 'edge-proxy') return { mode: 'loadbalancer', ports: null };
  return { mode: 'edge-proxy', ports: await allocateEdgePorts(deps, tenantId) };
}

function record(
  deps: Pick<OrchestratorDeps, 'provisioning'>,
  tenantId: string,
  step: ProvisioningStep,
  details: Record<string, unknown>,
): Promise<void> {
  return deps.provisioning.recordStep(tenantId, step, details);
}
