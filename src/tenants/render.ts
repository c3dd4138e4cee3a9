import { Compile } from 'typebox/compile';
import type { TenantConfig } from '../../contracts/tenant-config.ts';
import { TenantValues } from '../../contracts/tenant-values.ts';
import { ADAPTER_BOOTSTRAP_SECRET } from '../adapter/index.ts';

/** The configuration as the database keeps it (tenants/create.ts withoutSecrets). */
export type StoredConfig = Omit<TenantConfig, 'llm' | 'integrations'> & {
  llm?: { provider: string; base_url: string; model: string; has_api_key: boolean };
  integrations?: { external_analyzer_url?: string };
};

export interface InstallFacts {
  msspId: string;
  installId: string;
  /** The install namespace (svc-system): Secrets, network policy peer. */
  namespace: string;
  /**
   * svc's ServiceAccount in the install namespace (SVC_SERVICE_ACCOUNT, default `svc`): bound in
   * each tenant namespace to the ClusterRole `svc-tenant.<namespace>` (tenantClusterRole).
   */
  serviceAccount: string;
}

export interface RenderSettings {
  adapterImage: { repository: string; tag: string; digest: string };
  /** How the adapter reaches svc's API from the tenant namespace. */
  apiUrl: string;
  storageClassName: string;
  defaultLlm: { provider: string; baseUrl: string; model: string };
}

export interface RenderInput {
  tenant: { id: string; slug: string; displayName: string };
  config: StoredConfig;
  install: InstallFacts;
  settings: RenderSettings;
  /** The chart's own values.yaml, parsed: §2.9 defaults for every key svc does not decide. */
  chartDefaults: unknown;
  hasLlmKey: boolean;
  edgePorts?: { events: number; enrollment: number };
}

/** The adapter JWT Secret in the tenant namespace (spec §5.2, rewritten weekly). */
export const ADAPTER_TOKEN_SECRET = { name: 'svc-adapter-token', key: 'token' } as const;
/** The data-plane credentials copied from the install namespace (spec §9.4 items 2 and 4). */
export const COMPONENT_BOOTSTRAP_SECRET = 'svc-bootstrap';

export class RenderError extends Error {
  override name = 'RenderError';
  constructor(
    message: string,
    readonly problems: Array<{ path: string; message: string }>,
  ) {
    super(message);
  }
}

const checkValues = Compile(TenantValues);

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Objects merge key by key; anything else (arrays included) replaces. */
function merge(base: unknown, over: unknown): unknown {
  if (!isObject(base) || !isObject(over)) return over === undefined ? base : over;
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = merge(base[k], v);
  return out;
}

export function namespaceOf(slug: string): string {
  return `tenant-${slug}`;
}

export function namespaceLabels(tenantId: string, install: InstallFacts): Record<string, string> {
  return {
    tenant: 'true',
    'managed-by': 'svc',
    'mssp-id': install.msspId,
    'install-id': install.installId,
    'tenant-id': tenantId,
  };
}

function hostOf(url: string): string[] {
  try {
    return url ? [new URL(url).hostname] : [];
  } catch {
    return [];
  }
}

/**
 * Spec §2.9: the tenant package's values, computed from the stored configuration and the
 * install's facts over the chart's defaults, then validated against the same schema the chart
 * carries. Throws RenderError (nothing is installed) when the result is invalid or the
 * components do not fit the namespace quota.
 */
export function renderTenantValues(input: RenderInput): TenantValues {
  const { tenant, config, install, settings } = input;
  const c = config.components ?? {};
  const llmBaseUrl = config.llm?.base_url ?? settings.defaultLlm.baseUrl;
  const externalAnalyzerUrl = config.integrations?.external_analyzer_url ?? '';
  const decided = {
    tenant: {
      id: tenant.id,
      slug: tenant.slug,
      msspId: install.msspId,
      installId: install.installId,
      displayName: tenant.displayName,
    },
    branding: config.branding
      ? {
          appName: config.branding.app_name,
          logoUrl: config.branding.logo_url?.startsWith('https://') ? config.branding.logo_url : '',
          primaryColor: config.branding.primary_color,
          secondaryColor: config.branding.secondary_color,
          favicon: config.branding.favicon?.startsWith('https://') ? config.branding.favicon : '',
        }
      : { appName: tenant.displayName },
    llm: {
      provider: config.llm?.provider ?? settings.defaultLlm.provider,
      baseUrl: llmBaseUrl,
      model: config.llm?.model ?? settings.defaultLlm.model,
      apiKeyRef: {
        namespace: install.namespace,
        name: input.hasLlmKey ? `tenant-${tenant.id}-llm` : '',
        key: 'api_key',
      },
    },
    integrations: { externalAnalyzerUrl },
    components: {
      monitor: {
        dashboard:
          c.monitor_dashboard_enabled === undefined ? {} : { enabled: c.monitor_dashboard_enabled },
        indexer: c.monitor_indexer ? { resources: c.monitor_indexer } : {},
      },
      cases: c.cases ? { resources: c.cases } : {},
      analysis: {
        ...(c.analysis ? { resources: c.analysis } : {}),
        ...(c.analyzers ? { analyzers: c.analyzers } : {}),
      },
    },
    networkPolicies: {
      installNamespace: install.namespace,
      allowedLlmHosts: hostOf(llmBaseUrl),
    },
    monitorIngress: {
      ...(config.monitor_ingress ?? {}),
      ...(input.edgePorts ? { edgePorts: input.edgePorts } : {}),
    },
    adapter: {
      image: settings.adapterImage,
      apiUrl: settings.apiUrl,
      bootstrapSecretName: ADAPTER_BOOTSTRAP_SECRET.name,
      tokenSecretRef: { ...ADAPTER_TOKEN_SECRET },
    },
    namespaceLabels: namespaceLabels(tenant.id, install),
  };
  const merged = merge(input.chartDefaults, decided) as Json;
  const components = merged.components as Json;
  const ingress = merged.monitorIngress as { tls: { secretName: string } };
  const values = {
    ...merged,
    // Helm's only channel to the subcharts; the chart's guard refuses a disagreement.
    global: {
      storageClassName: settings.storageClassName,
      labels: decided.namespaceLabels,
      monitorTlsSecretName: ingress.tls.secretName,
    },
    monitor: components.monitor,
    cases: components.cases,
    analysis: { ...(components.analysis as Json), enabled: externalAnalyzerUrl === '' },
  };
  if (!checkValues.Check(values)) {
    const problems = [...checkValues.Errors(values)]
      .slice(0, 20)
      .map((e) => ({ path: e.instancePath || '/', message: e.message }));
    throw new RenderError(
      `tenant values invalid: ${problems[0]?.path} ${problems[0]?.message}`,
      problems,
    );
  }
  assertFitsQuota(values);
  return values;
}

const CPU = /^([0-9]+(?:\.[0-9]+)?)(m?)$/;
const MEMORY = /^([0-9]+(?:\.[0-9]+)?)(k|M|G|T|Ki|Mi|Gi|Ti)?$/;
const MEMORY_UNITS: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
};

/** Kubernetes quantities as numbers: CPU in millicores, memory in bytes. */
export function cpuMillis(q: string): number {
  const m = CPU.exec(q);
  if (!m) throw new RangeError(`not a CPU quantity: ${q}`);
  return Number(m[1]) * (m[2] === 'm' ? 1 : 1000);
}
export function memoryBytes(q: string): number {
  const m = MEMORY.exec(q);
  if (!m) throw new RangeError(`not a memory quantity: ${q}`);
  return Number(m[1]) * (MEMORY_UNITS[m[2] ?? ''] ?? Number.NaN);
}

/** Every resource block the package runs, as rendered (dashboard and analysis when enabled). */
function podResources(values: TenantValues) {
  const { monitor, cases, analysis } = values.components;
  return [
    monitor.manager.resources,
    monitor.indexer.resources,
    ...(monitor.dashboard.enabled ? [monitor.dashboard.resources] : []),
    cases.resources,
    cases.store.resources,
    ...(values.analysis.enabled ? [analysis.resources, analysis.search.resources] : []),
    values.adapter.resources,
  ];
}

/**
 * A package that cannot fit its own ResourceQuota would install and never become Ready; refusing
 * it here turns a 15-minute timeout into an immediate, explained failure.
 */
function assertFitsQuota(values: TenantValues): void {
  const pods = podResources(values);
  const sum = (pick: (r: (typeof pods)[number]) => number) => pods.reduce((a, r) => a + pick(r), 0);
  const q = values.resourceQuota;
  const checks = [
    ['requests.cpu', sum((r) => cpuMillis(r.requests.cpu)), cpuMillis(q.requests.cpu)],
    ['limits.cpu', sum((r) => cpuMillis(r.limits.cpu)), cpuMillis(q.limits.cpu)],
    ['requests.memory', sum((r) => memoryBytes(r.requests.memory)), memoryBytes(q.requests.memory)],
    ['limits.memory', sum((r) => memoryBytes(r.limits.memory)), memoryBytes(q.limits.memory)],
  ] as const;
  const problems = checks
    .filter(([, used, allowed]) => used > allowed)
    .map(([key, used, allowed]) => ({
      path: `/resourceQuota/${key.replace('.', '/')}`,
      message: `components need ${used} but the quota allows ${allowed}`,
    }));
  if (pods.length > q.pods)
    problems.push({ path: '/resourceQuota/pods', message: `${pods.length} pods exceed ${q.pods}` });
  if (problems.length > 0)
    throw new RenderError(`components exceed the tenant quota: ${problems[0]?.message}`, problems);
}
