import type { TenantConfig } from '../../../contracts/tenant-config.ts';
import { checkOutboundUrl, type OutboundPolicy, OutboundUrlError } from '../../net/outbound-url.ts';
import { imageProblems } from '../branding/branding-images.ts';
import { DomainError } from '../domain-error.ts';
import { integrationSecretKey, withoutSecrets } from './config-secrets.ts';
import { RenderError, type StoredConfig } from './tenant-types.ts';

/**
 * Spec §3.1: creation requires a configuration the tenant package can actually run. Everything
 * the rendering, the quota and the cluster will need is checked here, before anything is
 * written; a failure is a 400 with JSON pointers into the request body.
 */
export interface ConfigProblem {
  path: string;
  message: string;
}

/**
 * At creation the configuration is the request body (400 `validation_failed`); a change of an
 * installed tenant is 422 `config_invalid` (docs/errors.md).
 */
export class ConfigInvalidError extends DomainError {
  override name = 'ConfigInvalidError';
  constructor(
    readonly errors: ConfigProblem[],
    readonly code: 'validation_failed' | 'config_invalid' = 'validation_failed',
  ) {
    super(`tenant configuration invalid: ${errors[0]?.path} ${errors[0]?.message}`);
  }
}

/**
 * Renders the package values exactly as the orchestrator will; throws RenderError. With
 * `chartVersion` (a change of an installed tenant) against that chart, else against the one a
 * new tenant gets.
 */
export type ValuesPreview = (input: {
  tenant: { id: string; slug: string; displayName: string };
  config: StoredConfig;
  hasLlmKey: boolean;
  chartVersion?: string | undefined;
}) => Promise<void>;

export interface ConfigChecks {
  outbound: OutboundPolicy;
  /** Absent when svc runs without an orchestrator (no chart, no install facts to render with). */
  preview?: ValuesPreview | undefined;
}

/** Kubernetes Secret data keys: `[-._a-zA-Z0-9]+`, at most 253 characters, not `.`/`..`. */
const SECRET_KEY = /^[-._a-zA-Z0-9]{1,253}$/;

function outboundProblems(config: TenantConfig, policy: OutboundPolicy): ConfigProblem[] {
  const urls: Array<[string, string | undefined, readonly string[]]> = [
    ['/llm/base_url', config.llm?.base_url, ['https:']],
    [
      '/integrations/external_analyzer_url',
      config.integrations?.external_analyzer_url || undefined,
      ['https:', 'http:'],
    ],
    ...(config.integrations?.items ?? []).map(
      (item, i) =>
        [`/integrations/items/${i}/endpoint_url`, item.endpoint_url, ['https:', 'http:']] as [
          string,
          string | undefined,
          readonly string[],
        ],
    ),
  ];
  const problems: ConfigProblem[] = [];
  for (const [path, url, schemes] of urls) {
    if (url === undefined) continue;
    try {
      checkOutboundUrl(url, policy, schemes);
    } catch (error) {
      if (!(error instanceof OutboundUrlError)) throw error;
      problems.push({ path, message: error.message });
    }
  }
  return problems;
}

/**
 * Integrations are unique by (kind, name) (a database constraint; a duplicate would be a 500),
 * and each credential needs a Secret key of its own: `a b` and `a/b` would both become `a_b`.
 */
function integrationProblems(config: TenantConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const names = new Map<string, number>();
  const keys = new Map<string, number>();
  (config.integrations?.items ?? []).forEach((item, i) => {
    const path = `/integrations/items/${i}/name`;
    const id = `${item.kind}\u0000${item.name}`;
    const twin = names.get(id);
    if (twin !== undefined) {
      problems.push({
        path,
        message: `duplicates /integrations/items/${twin} (same kind and name)`,
      });
      return;
    }
    names.set(id, i);
    if (item.credential === undefined) return;
    const key = integrationSecretKey(item.kind, item.name);
    if (!SECRET_KEY.test(key) || key === '.' || key === '..') {
      problems.push({
        path,
        message: `the credential's Secret key ${key.slice(0, 60)}… must be 1-253 characters of [-._a-zA-Z0-9] (kind + "." + name)`,
      });
      return;
    }
    const other = keys.get(key);
    if (other !== undefined) {
      problems.push({
        path,
        message: `its credential would share the Secret key ${key} with /integrations/items/${other}; choose a name that differs in letters, digits, ".", "_" or "-"`,
      });
      return;
    }
    keys.set(key, i);
  });
  return problems;
}

/** Where in the request body to fix what the renderer refused (values path → config path). */
function configPath(valuesPath: string, config: TenantConfig): string | undefined {
  const prefixes: Array<[string, string]> = [
    ['/components/monitor/indexer/resources', '/components/monitor_indexer'],
    ['/monitor/indexer/resources', '/components/monitor_indexer'],
    ['/components/cases/resources', '/components/cases'],
    ['/cases/resources', '/components/cases'],
    ['/components/analysis/resources', '/components/analysis'],
    ['/analysis/resources', '/components/analysis'],
    ['/components/analysis/analyzers', '/components/analyzers'],
    ['/analysis/analyzers', '/components/analyzers'],
    ['/tenant/displayName', '/display_name'],
    // Without branding, the display name is the portal's app name (render.ts).
    ['/branding/appName', config.branding ? '/branding/app_name' : '/display_name'],
    ['/llm/baseUrl', '/llm/base_url'],
    ['/networkPolicies/allowedLlmHosts', '/llm/base_url'],
    ['/llm/model', '/llm/model'],
    ['/llm/provider', '/llm/provider'],
    ['/integrations/externalAnalyzerUrl', '/integrations/external_analyzer_url'],
    ['/monitorIngress/hostname', '/monitor_ingress/hostname'],
    // The sum of the components against the tenant quota: fixed by smaller components.
    ['/resourceQuota', '/components'],
  ];
  for (const [from, to] of prefixes) {
    if (valuesPath === from || valuesPath.startsWith(`${from}/`)) {
      return from === '/resourceQuota' ? to : to + valuesPath.slice(from.length);
    }
  }
  return undefined;
}

function renderProblems(error: RenderError, config: TenantConfig): ConfigProblem[] {
  const seen = new Set<string>();
  const out: ConfigProblem[] = [];
  for (const p of error.problems) {
    const mapped = configPath(p.path, config);
    const problem = mapped
      ? { path: mapped, message: p.message }
      : { path: '/', message: `rendered tenant value ${p.path}: ${p.message}` };
    const id = `${problem.path} ${problem.message}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(problem);
  }
  return out;
}

/**
 * Everything a creation needs beyond the schema: outbound URLs (docs/orchestrator.md), unique
 * integrations with distinct, valid Secret keys, and the package values rendered and validated
 * by the real renderer (quantities per resource kind, request ≤ limit, the sum within the
 * tenant quota, lengths after derivation). Throws ConfigInvalidError listing every problem.
 */
export async function validateTenantConfig(
  config: TenantConfig,
  tenantId: string,
  checks: ConfigChecks,
  chartVersion?: string,
): Promise<void> {
  const problems = [
    ...outboundProblems(config, checks.outbound),
    ...integrationProblems(config),
    // The same logo rules as a branding edit, so creation is no way around them.
    ...imageProblems('/branding/logo_url', config.branding?.logo_url),
  ];
  if (checks.preview) {
    try {
      await checks.preview({
        tenant: { id: tenantId, slug: config.slug, displayName: config.display_name },
        config: withoutSecrets(config) as StoredConfig,
        hasLlmKey: config.llm?.api_key !== undefined,
        chartVersion,
      });
    } catch (error) {
      if (!(error instanceof RenderError)) throw error;
      problems.push(...renderProblems(error, config));
    }
  }
  if (problems.length > 0) throw new ConfigInvalidError(problems);
}
