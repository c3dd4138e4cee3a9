import { Compile } from 'typebox/compile';
import { NO_TENANT_SCHEDULING, type TenantScheduling } from '../../contracts/scheduling.ts';
import { TenantValues } from '../../contracts/tenant-values.ts';
import { ADAPTER_BOOTSTRAP_SECRET } from '../domains/adapter/adapter-types.ts';
import { parseQuantity } from '../domains/tenants/quantity.ts';
import { RenderError, type StoredConfig } from '../domains/tenants/tenant-types.ts';

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
  /** Where the tenant's pods run (SVC_TENANT_SCHEDULING); absent: wherever the scheduler likes. */
  scheduling?: TenantScheduling;
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
/** The manager's enrollment certificate svc issues (enrollment-pki.ts), rendered as monitorIngress.tls.secretName. */
export const ENROLLMENT_TLS_SECRET_NAME = 'svc-enrollment-tls';

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
      // svc issues the enrollment certificate itself (enrollment-pki.ts): no external issuer.
      tls: { issuerRef: '', secretName: ENROLLMENT_TLS_SECRET_NAME },
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
  const scheduling = settings.scheduling ?? NO_TENANT_SCHEDULING;
  const values = {
    ...merged,
    // Helm's only channel to the subcharts; the chart's guard refuses a disagreement.
    global: {
      storageClassName: settings.storageClassName,
      labels: decided.namespaceLabels,
      monitorTlsSecretName: ingress.tls.secretName,
      scheduling,
    },
    scheduling,
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
  assertResources(values);
  return values;
}

/** Every resource block the package runs, as rendered (dashboard and analysis when enabled). */
function podResources(values: TenantValues): Array<[string, TenantValues['adapter']['resources']]> {
  const { monitor, cases, analysis } = values.components;
  return [
    ['/components/monitor/manager/resources', monitor.manager.resources],
    ['/components/monitor/indexer/resources', monitor.indexer.resources],
    ...(monitor.dashboard.enabled
      ? [['/components/monitor/dashboard/resources', monitor.dashboard.resources] as const]
      : []),
    ['/components/cases/resources', cases.resources],
    ['/components/cases/store/resources', cases.store.resources],
    ...(values.analysis.enabled
      ? [
          ['/components/analysis/resources', analysis.resources] as const,
          ['/components/analysis/search/resources', analysis.search.resources] as const,
        ]
      : []),
    ['/adapter/resources', values.adapter.resources],
  ] as Array<[string, TenantValues['adapter']['resources']]>;
}

type Problem = { path: string; message: string };

/**
 * The indexer pod's security-config sidecar (monitor subchart "monitor.indexerSidecarResources"),
 * a fixed size the chart renders and the quota must hold too.
 */
export const INDEXER_SIDECAR_RESOURCES = {
  requests: { cpu: '10m', memory: '64Mi' },
  limits: { cpu: '250m', memory: '256Mi' },
} as const;

/**
 * Each container's requests and limits parse exactly, every limit is above zero (a zero memory
 * limit kills the container, a zero CPU limit throttles it to nothing) and no request exceeds
 * its limit (the API server would refuse the Pods, the Deployment would never become Ready).
 * Returns the parsed blocks for the quota sum.
 */
function checkResources(values: TenantValues, problems: Problem[]) {
  const parsed: Array<Record<'requests' | 'limits', Record<'cpu' | 'memory', bigint>>> = [];
  for (const [path, r] of podResources(values)) {
    const read = (side: 'requests' | 'limits', key: 'cpu' | 'memory'): bigint | undefined => {
      try {
        return parseQuantity(key, r[side][key]);
      } catch (error) {
        problems.push({ path: `${path}/${side}/${key}`, message: (error as Error).message });
        return undefined;
      }
    };
    const block = { requests: { cpu: 0n, memory: 0n }, limits: { cpu: 0n, memory: 0n } };
    let complete = true;
    for (const key of ['cpu', 'memory'] as const) {
      const request = read('requests', key);
      const limit = read('limits', key);
      if (request === undefined || limit === undefined) {
        complete = false;
        continue;
      }
      if (limit === 0n) {
        problems.push({ path: `${path}/limits/${key}`, message: 'a limit must be above zero' });
      } else if (request > limit) {
        problems.push({
          path: `${path}/requests/${key}`,
          message: `request ${r.requests[key]} exceeds its limit ${r.limits[key]}`,
        });
      }
      block.requests[key] = request;
      block.limits[key] = limit;
    }
    if (complete) parsed.push(block);
  }
  return parsed;
}

/**
 * A package that cannot fit its own ResourceQuota would install and never become Ready; refusing
 * it here turns a 15-minute timeout into an immediate, explained failure. Sums are exact.
 */
function assertResources(values: TenantValues): void {
  const problems: Problem[] = [];
  const sidecar = INDEXER_SIDECAR_RESOURCES;
  const blocks = [
    ...checkResources(values, problems),
    {
      requests: {
        cpu: parseQuantity('cpu', sidecar.requests.cpu),
        memory: parseQuantity('memory', sidecar.requests.memory),
      },
      limits: {
        cpu: parseQuantity('cpu', sidecar.limits.cpu),
        memory: parseQuantity('memory', sidecar.limits.memory),
      },
    },
  ];
  const q = values.resourceQuota;
  for (const side of ['requests', 'limits'] as const) {
    for (const key of ['cpu', 'memory'] as const) {
      const path = `/resourceQuota/${side}/${key}`;
      let allowed: bigint;
      try {
        allowed = parseQuantity(key, q[side][key]);
      } catch (error) {
        problems.push({ path, message: (error as Error).message });
        continue;
      }
      const used = blocks.reduce((sum, b) => sum + b[side][key], 0n);
      if (used > allowed) {
        problems.push({
          path,
          message: `the components' ${side}.${key} add up to ${used}${key === 'cpu' ? 'm' : ' bytes'} but the tenant quota allows ${q[side][key]}`,
        });
      }
    }
  }
  const pods = podResources(values).length;
  if (pods > q.pods)
    problems.push({ path: '/resourceQuota/pods', message: `${pods} pods exceed ${q.pods}` });
  if (problems.length > 0)
    throw new RenderError(
      `tenant values invalid: ${problems[0]?.path} ${problems[0]?.message}`,
      problems,
    );
}
