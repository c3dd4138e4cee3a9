import type { Tenant } from '../domains/tenants/tenant-types.ts';
import type { OrchestratorDeps } from './context.ts';
import { renderTenantValues } from './render.ts';
import { StepFailure } from './step-failure.ts';

export const RELEASE_NAME = 'svc-tenant';

/** The chart version a new tenant gets: the newest the matrix supports for this svc. */
/** What choosing the version needs: the matrix (through the service) and the catalog. */
export type VersionDeps = Pick<
  OrchestratorDeps,
  'provisioning' | 'systemVersion' | 'installVersion' | 'catalog'
>;

export async function installableVersion(deps: VersionDeps): Promise<string> {
  const supported = await deps.provisioning.supportedChartVersions(deps.systemVersion);
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
/** What rendering a tenant's values needs. */
export type RenderDeps = Pick<
  OrchestratorDeps,
  'catalog' | 'provisioning' | 'install' | 'settings'
>;

export async function renderFor(
  deps: RenderDeps,
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
  const { config, ports } = await deps.provisioning.renderInputs(tenant.id, revision);
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
  deps: RenderDeps & Pick<OrchestratorDeps, 'helm' | 'timing'>,
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
  deps: VersionDeps & RenderDeps & Pick<OrchestratorDeps, 'helm' | 'timing'>,
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
  await deps.provisioning.recordInstalled(tenant.id, {
    namespace,
    release: RELEASE_NAME,
    version,
    ...(revision === undefined ? {} : { revision }),
  });
}
