import Type from 'typebox';
import { Compile } from 'typebox/compile';
import {
  NO_TENANT_SCHEDULING,
  normalizeTenantScheduling,
  TENANT_WORKLOADS,
  type TenantScheduling,
  TenantSchedulingInput,
} from '../../contracts/scheduling.ts';
import { MAX_TENANT_PACKAGES, TENANT_PACKAGE_PATTERN } from '../../contracts/tenant-packages.ts';
import { svcVersion } from '../assets/index.ts';
import {
  ConfigError,
  duration,
  durationExpected,
  durationMs,
  type Env,
  settingReader,
} from './env.ts';

export interface OrchestratorConfig {
  enabled: boolean;
  concurrency: number;
  pollMs: number;
  readinessTimeoutMs: number;
  decommissionGraceMs: number;
  retentionMs: number;
  helmTimeoutMs: number;
  reconcileMs: number;
  chartsDir: string | undefined;
  /**
   * Tenant packages pulled from an OCI registry at start, each pinned by digest
   * (SVC_TENANT_PACKAGES; docs/orchestrator.md "Tenant packages from a registry"). Empty: the
   * charts under chartsDir (default the bundled ones).
   */
  tenantPackages: TenantPackageReference[];
  /** PEM CA certificates helm trusts for that registry besides the system roots. */
  tenantPackagesCaFile: string | undefined;
  installVersion: string | undefined;
  helmBinary: string;
  adapterImage: { repository: string; tag: string; digest: string };
  apiUrl: string | undefined;
  storageClassName: string;
  /** Where tenant pods run (the tenant chart's `scheduling`; system chart `tenants.scheduling`). */
  tenantScheduling: TenantScheduling;
  edgePortBase: number;
  /** Whether svc renders and rolls out the edge proxy (charts/svc-system `edgeProxy.enabled`). */
  edgeProxy: boolean;
  /** The cluster's DNS domain: the edge proxy reaches `monitor.tenant-<slug>.svc.<domain>`. */
  clusterDomain: string;
  defaultLlm: { provider: string; baseUrl: string; model: string };
}

/** One tenant package in a registry, by digest: `oci://<host>/<path>/svc-tenant@sha256:<hex>`. */
export interface TenantPackageReference {
  /** The whole reference, as helm pulls it. */
  reference: string;
  /** `<host>/<path>/svc-tenant`, without the scheme and digest. */
  repository: string;
  /** `sha256:<64 hex>`: the chart's manifest digest in that repository. */
  digest: string;
}

const TENANT_PACKAGES_EXPECTED =
  'oci://<host>[:port]/<path>/svc-tenant@sha256:<64 hex> references, separated by commas or spaces';

const durationSetting = { schema: duration, expected: durationExpected } as const;

export const ORCHESTRATOR_SETTINGS = {
  SVC_ORCHESTRATOR: {
    schema: Type.Union([Type.Literal('on'), Type.Literal('off')]),
    expected: 'on or off (run the tenant orchestrator inside svc serve)',
  },
  SVC_ORCHESTRATOR_CONCURRENCY: {
    schema: Type.Integer({ minimum: 1, maximum: 200 }),
    expected: 'an integer 1-200 (tenants worked on at once)',
  },
  SVC_ORCHESTRATOR_POLL: durationSetting,
  SVC_READINESS_TIMEOUT: durationSetting,
  SVC_DECOMMISSION_GRACE: durationSetting,
  SVC_TENANT_RETENTION: durationSetting,
  SVC_HELM_TIMEOUT: durationSetting,
  SVC_RECONCILE_INTERVAL: durationSetting,
  SVC_TENANT_CHARTS_DIR: {
    schema: Type.String({ minLength: 1 }),
    expected: 'a directory holding svc-tenant chart directories',
  },
  SVC_TENANT_PACKAGES: {
    schema: Type.String({ minLength: 1, maxLength: 8192 }),
    expected: TENANT_PACKAGES_EXPECTED,
  },
  SVC_TENANT_PACKAGES_CA_FILE: {
    schema: Type.String({ minLength: 1, maxLength: 4096 }),
    expected: 'a PEM file of CA certificates for the registry SVC_TENANT_PACKAGES names',
  },
  SVC_TENANT_CHART_VERSION: {
    schema: Type.String({ pattern: '^[0-9]+\\.[0-9]+\\.[0-9]+(-[0-9A-Za-z.-]+)?$' }),
    expected: 'a tenant package version new tenants get (default: newest supported)',
  },
  SVC_HELM_BIN: {
    schema: Type.String({ minLength: 1 }),
    expected: 'the helm binary (path or name)',
  },
  SVC_ADAPTER_IMAGE: {
    schema: Type.String({
      pattern:
        '^[a-z0-9./_:-]{1,255}?(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?$',
    }),
    expected: 'an image reference repository[:tag][@sha256:<digest>]',
  },
  SVC_API_URL: {
    schema: Type.String({ pattern: '^https?://[^\\s]{1,2040}$' }),
    expected: 'the URL tenant adapters reach svc at, e.g. http://svc-api.svc-system.svc:8080',
  },
  SVC_TENANT_STORAGE_CLASS: {
    schema: Type.String({ pattern: '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$' }),
    expected: 'a StorageClass name for tenant volumes (empty: the cluster default)',
  },
  SVC_TENANT_SCHEDULING: {
    schema: Type.String({ minLength: 2, maxLength: 65536 }),
    expected:
      'a JSON object {"nodeSelector": {...}, "tolerations": [...], "workloads": {"<workload>": {"nodeSelector": {...}, "tolerations": [...]}}}',
  },
  SVC_EDGE_PORT_BASE: {
    schema: Type.Integer({ minimum: 1024, maximum: 60000 }),
    expected: 'an integer 1024-60000 (first port of the edge-proxy range)',
  },
  SVC_EDGE_PROXY: {
    schema: Type.Union([Type.Literal('on'), Type.Literal('off')]),
    expected: 'on or off (svc writes the edge proxy config in the install namespace)',
  },
  SVC_CLUSTER_DOMAIN: {
    schema: Type.String({
      pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$',
      maxLength: 200,
    }),
    expected: 'the cluster DNS domain, e.g. cluster.local',
  },
  SVC_LLM_PROVIDER: {
    schema: Type.String({ pattern: '^[a-z][a-z0-9_-]{0,31}$' }),
    expected: 'an LLM provider name (defaults.llm.provider)',
  },
  SVC_LLM_BASE_URL: {
    schema: Type.String({ pattern: '^https://[^\\s]{1,2040}$' }),
    expected: 'an https:// URL (defaults.llm.baseUrl)',
  },
  SVC_LLM_MODEL: {
    schema: Type.String({ minLength: 1, maxLength: 200 }),
    expected: 'a model name (defaults.llm.model)',
  },
} as const;

const read = settingReader(ORCHESTRATOR_SETTINGS);

export function readOrchestrator(env: Env): OrchestratorConfig {
  const ms = (name: keyof typeof ORCHESTRATOR_SETTINGS, fallback: string) =>
    durationMs(String(read(env, name) ?? fallback));
  return {
    enabled: (read(env, 'SVC_ORCHESTRATOR') ?? 'on') === 'on',
    concurrency: read(env, 'SVC_ORCHESTRATOR_CONCURRENCY') ?? 25,
    pollMs: ms('SVC_ORCHESTRATOR_POLL', '5s'),
    readinessTimeoutMs: ms('SVC_READINESS_TIMEOUT', '15m'),
    decommissionGraceMs: ms('SVC_DECOMMISSION_GRACE', '24h'),
    retentionMs: ms('SVC_TENANT_RETENTION', '30d'),
    helmTimeoutMs: ms('SVC_HELM_TIMEOUT', '10m'),
    reconcileMs: ms('SVC_RECONCILE_INTERVAL', '5m'),
    chartsDir: read(env, 'SVC_TENANT_CHARTS_DIR'),
    ...tenantPackages(env),
    installVersion: read(env, 'SVC_TENANT_CHART_VERSION'),
    helmBinary: read(env, 'SVC_HELM_BIN') ?? 'helm',
    adapterImage: parseImage(read(env, 'SVC_ADAPTER_IMAGE') ?? `svc:${svcVersion()}`),
    apiUrl: read(env, 'SVC_API_URL'),
    storageClassName: read(env, 'SVC_TENANT_STORAGE_CLASS') ?? '',
    tenantScheduling: tenantScheduling(read(env, 'SVC_TENANT_SCHEDULING')),
    edgePortBase: read(env, 'SVC_EDGE_PORT_BASE') ?? 20_000,
    edgeProxy: (read(env, 'SVC_EDGE_PROXY') ?? 'off') === 'on',
    clusterDomain: read(env, 'SVC_CLUSTER_DOMAIN') ?? 'cluster.local',
    defaultLlm: {
      provider: read(env, 'SVC_LLM_PROVIDER') ?? '',
      baseUrl: read(env, 'SVC_LLM_BASE_URL') ?? '',
      model: read(env, 'SVC_LLM_MODEL') ?? '',
    },
  };
}

const TENANT_PACKAGE = new RegExp(TENANT_PACKAGE_PATTERN);

/**
 * SVC_TENANT_PACKAGES: every reference names the svc-tenant repository and pins one manifest
 * digest (spec §9.1: what is installed is exactly what was published; a tag could move). A bad
 * entry is refused by its position and text; so is a repeat, and SVC_TENANT_CHARTS_DIR beside
 * it (two sources of the same versions).
 */
function tenantPackages(
  env: Env,
): Pick<OrchestratorConfig, 'tenantPackages' | 'tenantPackagesCaFile'> {
  const text = read(env, 'SVC_TENANT_PACKAGES');
  const caFile = read(env, 'SVC_TENANT_PACKAGES_CA_FILE');
  if (text === undefined) {
    if (caFile !== undefined) {
      throw new ConfigError('SVC_TENANT_PACKAGES_CA_FILE: set without SVC_TENANT_PACKAGES');
    }
    return { tenantPackages: [], tenantPackagesCaFile: undefined };
  }
  if (read(env, 'SVC_TENANT_CHARTS_DIR') !== undefined) {
    throw new ConfigError(
      'SVC_TENANT_PACKAGES and SVC_TENANT_CHARTS_DIR are both set; tenant packages come from one source: unset one',
    );
  }
  const entries = text.split(/[\s,]+/).filter((entry) => entry !== '');
  const fail = (why: string): never => {
    throw new ConfigError(`SVC_TENANT_PACKAGES: ${why}; expected ${TENANT_PACKAGES_EXPECTED}`);
  };
  if (entries.length === 0) fail('no reference');
  if (entries.length > MAX_TENANT_PACKAGES) fail(`more than ${MAX_TENANT_PACKAGES} references`);
  const seen = new Set<string>();
  const packages = entries.map((entry, i) => {
    const match = TENANT_PACKAGE.exec(entry);
    if (!match) {
      const hint = !entry.startsWith('oci://')
        ? 'it does not start with oci://'
        : !/@sha256:[0-9a-f]{64}$/.test(entry)
          ? 'it is not pinned by @sha256:<64 hex> (a tag can move, so tags are not accepted)'
          : 'its repository is not <host>[:port]/<path>/svc-tenant in lower case, without a tag';
      fail(`entry ${i + 1} ${JSON.stringify(entry.slice(0, 300))}: ${hint}`);
    }
    if (seen.has(entry)) fail(`entry ${i + 1} ${JSON.stringify(entry)} is listed twice`);
    seen.add(entry);
    return { reference: entry, repository: match?.[1] ?? '', digest: match?.at(-1) ?? '' };
  });
  return { tenantPackages: packages, tenantPackagesCaFile: caFile };
}

const checkScheduling = Compile(TenantSchedulingInput);

/**
 * SVC_TENANT_SCHEDULING: JSON of the system chart's `tenants.scheduling`. An unknown workload
 * name is refused by name (a typo would otherwise leave that workload on the default pool).
 */
function tenantScheduling(text: string | undefined): TenantScheduling {
  if (text === undefined) return NO_TENANT_SCHEDULING;
  const fail = (why: string): never => {
    throw new ConfigError(`SVC_TENANT_SCHEDULING: ${why}`);
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    fail(`not JSON; expected ${ORCHESTRATOR_SETTINGS.SVC_TENANT_SCHEDULING.expected}`);
  }
  const workloads = (parsed as { workloads?: unknown } | null)?.workloads;
  if (typeof workloads === 'object' && workloads !== null && !Array.isArray(workloads)) {
    const known: readonly string[] = TENANT_WORKLOADS;
    const unknown = Object.keys(workloads).filter((name) => !known.includes(name));
    if (unknown.length > 0) {
      fail(
        `unknown workload ${unknown.map((n) => JSON.stringify(n)).join(', ')} in workloads; the tenant package's workloads are ${TENANT_WORKLOADS.join(', ')}`,
      );
    }
  }
  if (!checkScheduling.Check(parsed)) {
    const [first] = checkScheduling.Errors(parsed);
    // A closed object reports an extra key as "schema is false" at the key's own path.
    const why = first?.message === 'schema is false' ? 'is not allowed' : first?.message;
    fail(
      `${first?.instancePath || '/'} ${why ?? 'is invalid'}; expected ${ORCHESTRATOR_SETTINGS.SVC_TENANT_SCHEDULING.expected}`,
    );
  }
  return normalizeTenantScheduling(parsed as TenantSchedulingInput);
}

/** `repo[:tag][@sha256:…]`: the digest pins (spec §9.3 item 1); the tag stays for people. */
export function parseImage(ref: string): { repository: string; tag: string; digest: string } {
  const [name = '', digest = ''] = ref.split('@');
  const slash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  const hasTag = colon > slash;
  return {
    repository: hasTag ? name.slice(0, colon) : name,
    tag: hasTag ? name.slice(colon + 1) : 'latest',
    digest,
  };
}
