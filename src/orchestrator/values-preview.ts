import type { ValuesPreview } from '../domains/tenants/tenant-config.ts';
import { installableVersion, type RenderDeps, type VersionDeps } from './release.ts';
import { renderTenantValues } from './render.ts';
import { StepFailure } from './step-failure.ts';

/**
 * The orchestrator's renderer over the chart version a new tenant would get now, for the
 * creation check (tenant-config.ts), or over the tenant's installed chart for a configuration
 * change. With no installable chart there is nothing to render against; the orchestrator
 * reports that itself (`no_supported_chart`).
 */
export function valuesPreview(deps: VersionDeps & RenderDeps): ValuesPreview {
  return async ({ tenant, config, hasLlmKey, chartVersion }) => {
    let version: string;
    try {
      version = chartVersion ?? (await installableVersion(deps));
    } catch (error) {
      if (error instanceof StepFailure) return;
      throw error;
    }
    const chart = deps.catalog.get(version);
    if (!chart) return;
    renderTenantValues({
      tenant,
      config,
      install: deps.install,
      settings: deps.settings,
      chartDefaults: chart.defaults,
      hasLlmKey,
    });
  };
}
