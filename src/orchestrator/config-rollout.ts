import type { Tenant } from '../domains/tenants/tenant-types.ts';
import { ensureIndexerSecrets } from './bootstrap-secrets.ts';
import type { OrchestratorDeps } from './context.ts';
import { ensureEnrollmentTls } from './enrollment-cluster.ts';
import { renderFor } from './release.ts';
import { namespaceOf } from './render.ts';
import { rollOut } from './rollout.ts';
import { bindServiceIdentity } from './service-identity.ts';

/** `config_target`, a column sql/0021 adds (read here until the generated row types carry it). */
const targetOf = (tenant: Tenant) =>
  (tenant as Tenant & { config_target?: number | null }).config_target ?? null;

/**
 * The orchestrator's half of `PUT /api/mssp/tenants/{id}/config`: the API recorded revision n
 * as the target; here its values are rendered and rolled out exactly like an upgrade's
 * (rollout.ts). Success makes n the applied revision (`config_applied`); failure rolls the
 * release back and the tenant keeps rendering from the revision it had (`config_failed`).
 * The tenant lock held by the caller keeps an upgrade of the same tenant from running meanwhile.
 */
export async function advanceConfigChange(
  deps: OrchestratorDeps,
  tenantId: string,
  signal: AbortSignal,
): Promise<void> {
  const tenant = await deps.provisioning.find(tenantId);
  if (tenant?.state !== 'active') return;
  const target = targetOf(tenant);
  if (target === null) return;
  const version = tenant.chart_version;
  if (version === null) throw new Error(`active tenant ${tenant.id} has no chart version`);
  const config = await deps.provisioning.storedConfig(tenant.id, target);
  const namespace = namespaceOf(tenant.slug);
  await bindServiceIdentity(deps, namespace);
  const outcome = await rollOut(
    deps,
    namespace,
    async () => {
      await ensureIndexerSecrets(deps, tenant, namespace);
      // A changed monitor_ingress.hostname is a new name on the enrollment certificate.
      await ensureEnrollmentTls(deps, tenant);
      return renderFor(deps, tenant, version, target);
    },
    signal,
  );
  const change = { from: tenant.config_revision, target, config };
  await deps.provisioning.finishConfigChange(tenant, change, outcome);
}
