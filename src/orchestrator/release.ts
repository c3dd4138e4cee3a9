import type { TenantTx } from '../db/tenant-context.ts';
import { writeAudit } from '../domains/audit/audit-repository.ts';
import {
  configRevisionDetails,
  setChartVersion,
  supportedChartVersions,
} from '../domains/provisioning/provisioning-repository.ts';
import type { EdgePorts } from '../domains/provisioning/provisioning-types.ts';
import { transition } from '../domains/tenants/tenant-lifecycle.ts';
import type { StoredConfig, Tenant } from '../domains/tenants/tenant-types.ts';
import { ORCHESTRATOR_ACTOR, type OrchestratorDeps } from './context.ts';
import { renderTenantValues } from './render.ts';
import { StepFailure } from './step-failure.ts';
import { completedSteps, recordStep } from './steps.ts';

export const RELEASE_NAME = 'svc-tenant';

/**
 * The configuration of `revision`, by default the applied one (a revision rolling out or
 * rolled back is never rendered for anything else); every tenant svc created has revision 1.
 */
export async function storedConfig(
  tx: TenantTx,
  tenantId: string,
  revision?: number,
): Promise<StoredConfig> {
  const config = (await configRevisionDetails(tx, tenantId, revision))?.config;
  if (!config)
    throw new Error(`tenant ${tenantId} has no configuration revision ${revision ?? ''}`);
  return config as StoredConfig;
}

/** The chart version a new tenant gets: the newest the matrix supports for this svc. */
export async function installableVersion(deps: OrchestratorDeps): Promise<string> {
  const supported = await deps.db.withoutTenant((tx) =>
    supportedChartVersions(tx, deps.systemVersion),
  );
  const version = deps.installVersion
    ? supported.has(deps.installVersion) && deps.catalog.get(deps.installVersion)
      ? deps.installVersion
      : undefined
    : deps.catalog
        .versions()
        .filter((v) => supported.has(v))
        .at(-1);
  if (!version) {
    throw new StepFailure(
      'package_installed',
      'no_supported_chart',
      `no bundled tenant chart is supported with svc ${deps.systemVersion}`,
      { bundled: deps.catalog.versions() },
    );
  }
  return version;
}

/**
 * The chart of `version` and the tenant's values for it, as stored and allocated so far: from
 * the applied configuration revision, or from `revision` (a configuration change rolling out).
 */
export async function renderFor(
  deps: OrchestratorDeps,
  tenant: Tenant,
  version: string,
  revision?: number,
) {
  const chart = deps.catalog.get(version);
  if (!chart)
    throw new StepFailure(
      'package_installed',
      'chart_unknown',
      `tenant chart ${version} is not available`,
    );
  const { config, ports } = await deps.db.withTenant(tenant.id, async (tx) => ({
    config: await storedConfig(tx, tenant.id, revision),
    ports: (await completedSteps(tx, tenant.id)).get('edge_ports_allocated')?.details.ports as
      | EdgePorts
      | null
      | undefined,
  }));
  const values = renderTenantValues({
    // The revision's display name: the row takes it only once the revision is applied.
    tenant: { id: tenant.id, slug: tenant.slug, displayName: config.display_name },
    config,
    install: deps.install,
    settings: deps.settings,
    chartDefaults: chart.defaults,
    // The revision says whether its key is set (a change may remove it; the reference stays).
    hasLlmKey: config.llm?.has_api_key === true,
    ...(ports ? { edgePorts: ports } : {}),
  });
  return { chart, values };
}

/** `helm install` (no wait) of `version` with the tenant's values; returns the revision. */
export async function installRelease(
  deps: OrchestratorDeps,
  tenant: Tenant,
  namespace: string,
  version: string,
): Promise<number> {
  const { chart, values } = await renderFor(deps, tenant, version);
  const release = await deps.helm.install({
    release: RELEASE_NAME,
    namespace,
    chart: chart.path,
    values,
    timeoutMs: deps.timing.helmTimeoutMs,
    wait: false,
  });
  return release.revision;
}

/**
 * Spec §9.4 items 6–7. A release left by a crash between `helm install` and the step record
 * is adopted when deployed, and removed first when it is half-made.
 */
export async function installPackage(
  deps: OrchestratorDeps,
  tenant: Tenant,
  namespace: string,
): Promise<void> {
  const version = await installableVersion(deps);
  const existing = await deps.helm.status({ release: RELEASE_NAME, namespace });
  let revision = existing?.revision;
  if (existing && existing.status !== 'deployed') {
    await deps.helm.uninstall({
      release: RELEASE_NAME,
      namespace,
      timeoutMs: deps.timing.helmTimeoutMs,
      wait: true,
    });
  }
  if (existing?.status !== 'deployed') {
    revision = await installRelease(deps, tenant, namespace, version);
  }
  await deps.db.withTenant(tenant.id, (tx) =>
    recordInstalled(tx, tenant.id, { namespace, version, revision }),
  );
}

/** The package is in: the tenant moves to `provisioning` (spec §3.1 row 2). */
async function recordInstalled(
  tx: TenantTx,
  tenantId: string,
  installed: { namespace: string; version: string; revision: number | undefined },
): Promise<void> {
  const { namespace, version, revision } = installed;
  await recordStep(tx, tenantId, 'package_installed', ORCHESTRATOR_ACTOR, {
    namespace,
    release: RELEASE_NAME,
    chart_version: version,
    revision,
  });
  await setChartVersion(tx, tenantId, version);
  await transition(tx, {
    tenantId,
    trigger: 'package_installed',
    actor: ORCHESTRATOR_ACTOR,
    details: { chart_version: version, namespace },
  });
  await writeAudit(tx, {
    tenantId,
    actorPrincipal: 'System',
    actorId: ORCHESTRATOR_ACTOR,
    action: 'tenant.provision',
    resourceType: 'tenant',
    resourceId: tenantId,
    before: { state: 'pending' },
    after: { state: 'provisioning', chart_version: version },
  });
}
