import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import Type, { type TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import Value from 'typebox/value';

/** Raised for any invalid or missing setting; its message is one line naming the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type AuthMode = 'internal' | 'proxy';
export type DatabaseRole = 'admin' | 'app' | 'mssp';

export interface Credential {
  user: string;
  password: string;
}

export type DatabaseConfig =
  | { kind: 'embedded' }
  | {
      kind: 'external';
      host: string;
      port: number;
      database: string;
      /** Present when the six credentials were supplied (env vars or a directory of files). */
      credentials: Record<DatabaseRole, Credential> | undefined;
      /** Superuser URL that creates the roles and the database when they are missing. */
      bootstrapUrl: string | undefined;
      ssl: boolean;
    };

export interface AuthConfig {
  /** Host of the MSSP console, e.g. mssp.example.com (spec §2.9 ingress.hostnames.mssp). */
  msspHostname: string | undefined;
  /** Wildcard host of customer portals, e.g. *.customers.example.com. */
  customerHostname: string | undefined;
  trustedHeaderUser: string;
  trustedHeaderEmail: string;
  trustedHeaderGroups: string;
  /** Login attempts allowed per client IP, and per email, in each 15-minute window. */
  loginRateLimitPerIp: number;
  loginRateLimitPerEmail: number;
  /** Password hashes computed at once (64 MiB each), and attempts allowed to wait for one. */
  hashConcurrency: number;
  hashQueue: number;
  /** The platform_admin created on the first start of an empty embedded install. */
  bootstrapAdminEmail: string;
}

export type TokenKeyConfig =
  | { kind: 'generated' }
  | { kind: 'pem'; pem: string }
  | { kind: 'file'; path: string };

export interface Config {
  host: string;
  port: number;
  authMode: AuthMode;
  auth: AuthConfig;
  /** Ed25519 key that signs svc's JWTs; generated under the data dir when not supplied. */
  tokenKey: TokenKeyConfig;
  /** Namespace of the install (spec §1 item 1), where per-tenant Secrets wait. */
  installNamespace: string;
  /**
   * svc's own ServiceAccount in the install namespace (the chart's serviceAccount.name): the
   * subject of the RoleBinding the orchestrator makes in each tenant namespace.
   */
  serviceAccount: string;
  dataDir: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  trustedProxyCidrs: string[];
  database: DatabaseConfig;
  install: InstallConfig;
  orchestrator: OrchestratorConfig;
  /** Internal targets tenant URLs may name after all (src/net/outbound-url.ts); default none. */
  outbound: { allowCidrs: string[]; allowHosts: string[] };
}

/** Spec §2.9 install.*: written into the organization row; generated once when absent. */
export interface InstallConfig {
  msspId: string | undefined;
  msspName: string;
  installId: string | undefined;
  installLabel: string;
}

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
  installVersion: string | undefined;
  helmBinary: string;
  adapterImage: { repository: string; tag: string; digest: string };
  apiUrl: string | undefined;
  storageClassName: string;
  edgePortBase: number;
  defaultLlm: { provider: string; baseUrl: string; model: string };
}

interface Setting {
  schema: TSchema;
  expected: string;
}

const hostname = Type.String({ pattern: '^[A-Za-z0-9.:\\[\\]-]{1,253}$' });
const port = Type.Integer({ minimum: 1, maximum: 65535 });
const headerName = Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$" });
const cidr = '(?:(?:\\d{1,3}\\.){3}\\d{1,3}/\\d{1,2}|[0-9A-Fa-f:]+/\\d{1,3})';

const duration = Type.String({ pattern: '^[0-9]{1,9}(ms|s|m|h|d)$' });
const durationExpected = 'a duration such as 500ms, 30s, 15m, 24h or 30d';
const DURATION_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Milliseconds of a duration setting (the pattern above guarantees the shape). */
export function durationMs(text: string): number {
  const match = /^([0-9]+)(ms|s|m|h|d)$/.exec(text);
  if (!match) throw new ConfigError(`not a duration: ${text}`);
  return Number(match[1]) * DURATION_MS[match[2] as keyof typeof DURATION_MS];
}

/** Every environment variable svc reads; the README's configuration table mirrors this. */
export const SETTINGS = {
  SVC_HOST: { schema: hostname, expected: 'an IP address or hostname to listen on' },
  SVC_PORT: { schema: port, expected: 'an integer port 1-65535' },
  SVC_AUTH_MODE: {
    schema: Type.Union([Type.Literal('internal'), Type.Literal('proxy')]),
    expected: 'internal or proxy',
  },
  SVC_DATA_DIR: { schema: Type.String({ minLength: 1 }), expected: 'a directory path' },
  SVC_LOG_LEVEL: {
    schema: Type.Union(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    ),
    expected: 'one of fatal, error, warn, info, debug, trace, silent',
  },
  SVC_TRUSTED_PROXY_CIDRS: {
    schema: Type.String({ pattern: `^(${cidr}(\\s*,\\s*${cidr})*)?$` }),
    expected: 'a comma-separated list of CIDRs, e.g. 10.0.0.0/8,127.0.0.1/32',
  },
  SVC_MSSP_HOSTNAME: {
    schema: Type.String({ pattern: '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(:[0-9]{1,5})?$' }),
    expected: 'a lower-case hostname, e.g. mssp.example.com',
  },
  SVC_CUSTOMER_HOSTNAME: {
    schema: Type.String({ pattern: '^\\*\\.[a-z0-9]([a-z0-9.-]{0,249}[a-z0-9])?(:[0-9]{1,5})?$' }),
    expected: 'a wildcard hostname pattern, e.g. *.customers.example.com',
  },
  SVC_TRUSTED_HEADER_USER: { schema: headerName, expected: 'an HTTP header name' },
  SVC_TRUSTED_HEADER_EMAIL: { schema: headerName, expected: 'an HTTP header name' },
  SVC_TRUSTED_HEADER_GROUPS: { schema: headerName, expected: 'an HTTP header name' },
  SVC_LOGIN_RATE_LIMIT_IP: {
    schema: Type.Integer({ minimum: 1, maximum: 100000 }),
    expected: 'an integer 1-100000 (attempts per IP per 15 minutes)',
  },
  SVC_LOGIN_RATE_LIMIT_EMAIL: {
    schema: Type.Integer({ minimum: 1, maximum: 100000 }),
    expected: 'an integer 1-100000 (attempts per email per 15 minutes)',
  },
  SVC_HASH_CONCURRENCY: {
    schema: Type.Integer({ minimum: 1, maximum: 64 }),
    expected: 'an integer 1-64 (password hashes computed at once)',
  },
  SVC_HASH_QUEUE: {
    schema: Type.Integer({ minimum: 0, maximum: 10000 }),
    expected: 'an integer 0-10000 (login attempts waiting for a hash slot)',
  },
  SVC_BOOTSTRAP_ADMIN_EMAIL: {
    schema: Type.String({ pattern: '^[^@\\sA-Z]+@[^@\\sA-Z]+$' }),
    expected: 'a lower-case email address',
  },
  SVC_TOKEN_SIGNING_KEY: {
    schema: Type.String({ pattern: '^-----BEGIN PRIVATE KEY-----' }),
    expected: 'a PKCS8 PEM Ed25519 private key',
  },
  SVC_TOKEN_SIGNING_KEY_FILE: { schema: Type.String({ minLength: 1 }), expected: 'a file path' },
  SVC_INSTALL_NAMESPACE: {
    schema: Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$' }),
    expected: 'a Kubernetes namespace name',
  },
  SVC_SERVICE_ACCOUNT: {
    schema: Type.String({ pattern: '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$' }),
    expected: 'a ServiceAccount name (serviceAccount.name)',
  },
  SVC_MSSP_ID: { schema: Type.String({ format: 'uuid' }), expected: 'a uuid (install.msspId)' },
  SVC_MSSP_NAME: {
    schema: Type.String({ minLength: 1, maxLength: 200 }),
    expected: 'the MSSP name (install.msspName), 1-200 characters',
  },
  SVC_INSTALL_ID: {
    schema: Type.String({ format: 'uuid' }),
    expected: 'a uuid (install.installId), stable across upgrades',
  },
  SVC_INSTALL_LABEL: {
    schema: Type.String({ minLength: 1, maxLength: 200 }),
    expected: 'a human-readable install label, 1-200 characters',
  },
  SVC_ORCHESTRATOR: {
    schema: Type.Union([Type.Literal('on'), Type.Literal('off')]),
    expected: 'on or off (run the tenant orchestrator inside svc serve)',
  },
  SVC_ORCHESTRATOR_CONCURRENCY: {
    schema: Type.Integer({ minimum: 1, maximum: 200 }),
    expected: 'an integer 1-200 (tenants worked on at once)',
  },
  SVC_ORCHESTRATOR_POLL: { schema: duration, expected: durationExpected },
  SVC_READINESS_TIMEOUT: { schema: duration, expected: durationExpected },
  SVC_DECOMMISSION_GRACE: { schema: duration, expected: durationExpected },
  SVC_TENANT_RETENTION: { schema: duration, expected: durationExpected },
  SVC_HELM_TIMEOUT: { schema: duration, expected: durationExpected },
  SVC_RECONCILE_INTERVAL: { schema: duration, expected: durationExpected },
  SVC_TENANT_CHARTS_DIR: {
    schema: Type.String({ minLength: 1 }),
    expected: 'a directory holding svc-tenant chart directories',
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
  SVC_EDGE_PORT_BASE: {
    schema: Type.Integer({ minimum: 1024, maximum: 60000 }),
    expected: 'an integer 1024-60000 (first port of the edge-proxy range)',
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
  SVC_OUTBOUND_ALLOW_CIDRS: {
    schema: Type.String({ pattern: `^(${cidr}(\\s*,\\s*${cidr})*)?$` }),
    expected:
      'a comma-separated list of CIDRs tenant URLs may reach although internal, e.g. 10.20.0.0/16',
  },
  SVC_OUTBOUND_ALLOW_HOSTS: {
    schema: Type.String({
      pattern:
        '^((\\*\\.)?[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(\\s*,\\s*(\\*\\.)?[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?)*)?$',
    }),
    expected: 'a comma-separated list of host names or *.domain patterns, e.g. llm.corp.internal',
  },
  SVC_URL: {
    schema: Type.String({ pattern: '^https?://[^\\s/]+(/[^\\s]*)?$', maxLength: 2048 }),
    expected: 'the URL of a running svc for svc tenants …, e.g. http://127.0.0.1:8080',
  },
  SVC_CLI_EMAIL: {
    schema: Type.String({ pattern: '^[^@\\s]+@[^@\\s]+$', maxLength: 254 }),
    expected: 'the email of the MSSP user svc tenants … signs in as',
  },
  SVC_CLI_PASSWORD: {
    schema: Type.String({ minLength: 1, maxLength: 4096 }),
    expected: 'the password of SVC_CLI_EMAIL, at most 4096 characters',
  },
  SVC_DATABASE_HOST: { schema: hostname, expected: 'a PostgreSQL hostname' },
  SVC_DATABASE_PORT: { schema: port, expected: 'an integer port 1-65535' },
  SVC_DATABASE_NAME: {
    schema: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_$-]{0,62}$' }),
    expected: 'a PostgreSQL database name',
  },
  SVC_DATABASE_SSL: {
    schema: Type.Union([Type.Literal('disable'), Type.Literal('require')]),
    expected: 'disable or require',
  },
  SVC_DATABASE_CREDENTIALS_DIR: {
    schema: Type.String({ minLength: 1 }),
    expected: 'a directory holding files admin_user, admin_password, app_user, …',
  },
  SVC_DATABASE_BOOTSTRAP_URL: {
    schema: Type.String({ pattern: '^postgres(ql)?://' }),
    expected: 'a postgres:// URL of a superuser',
  },
  SVC_DATABASE_ADMIN_USER: { schema: Type.String({ minLength: 1 }), expected: 'a role name' },
  SVC_DATABASE_ADMIN_PASSWORD: { schema: Type.String({ minLength: 1 }), expected: 'a password' },
  SVC_DATABASE_APP_USER: { schema: Type.String({ minLength: 1 }), expected: 'a role name' },
  SVC_DATABASE_APP_PASSWORD: { schema: Type.String({ minLength: 1 }), expected: 'a password' },
  SVC_DATABASE_MSSP_USER: { schema: Type.String({ minLength: 1 }), expected: 'a role name' },
  SVC_DATABASE_MSSP_PASSWORD: { schema: Type.String({ minLength: 1 }), expected: 'a password' },
} as const satisfies Record<string, Setting>;

type SettingName = keyof typeof SETTINGS;
type Env = Readonly<Record<string, string | undefined>>;

const checkers = new Map(
  Object.entries(SETTINGS).map(([name, s]) => [name, Compile(s.schema)] as const),
);

function read<N extends SettingName>(
  env: Env,
  name: N,
): Type.Static<(typeof SETTINGS)[N]['schema']> | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const setting: Setting = SETTINGS[name];
  const value: unknown = Value.Convert(setting.schema, raw.trim());
  if (!checkers.get(name)?.Check(value)) {
    throw new ConfigError(`${name}: expected ${setting.expected}, got ${JSON.stringify(raw)}`);
  }
  return value as Type.Static<(typeof SETTINGS)[N]['schema']>;
}

const ROLES: readonly DatabaseRole[] = ['admin', 'app', 'mssp'];

/** The six keys of the `database.external.existingSecret` Secret (spec §2.9). */
export const CREDENTIAL_KEYS = ROLES.flatMap((r) => [`${r}_user`, `${r}_password`]);

function readCredentials(env: Env): Record<DatabaseRole, Credential> | undefined {
  const dir = read(env, 'SVC_DATABASE_CREDENTIALS_DIR');
  const fromEnv = (key: string): string | undefined =>
    read(env, `SVC_DATABASE_${key.toUpperCase()}` as SettingName) as string | undefined;
  const fromDir = (key: string): string | undefined => {
    if (dir === undefined) return undefined;
    try {
      const value = readFileSync(path.join(dir, key), 'utf8').trim();
      return value === '' ? undefined : value;
    } catch {
      return undefined;
    }
  };
  const values = new Map(CREDENTIAL_KEYS.map((k) => [k, fromEnv(k) ?? fromDir(k)] as const));
  const present = [...values.values()].filter((v) => v !== undefined).length;
  if (present === 0) {
    if (dir !== undefined) {
      throw new ConfigError(
        `SVC_DATABASE_CREDENTIALS_DIR: expected files ${CREDENTIAL_KEYS.join(', ')} in ${dir}`,
      );
    }
    return undefined;
  }
  const missing = CREDENTIAL_KEYS.find((k) => values.get(k) === undefined);
  if (missing !== undefined) {
    throw new ConfigError(
      `SVC_DATABASE_${missing.toUpperCase()}: expected a value (env var or file ${missing} in SVC_DATABASE_CREDENTIALS_DIR); all six database credentials are required together`,
    );
  }
  const credential = (role: DatabaseRole): Credential => ({
    user: values.get(`${role}_user`) ?? '',
    password: values.get(`${role}_password`) ?? '',
  });
  return { admin: credential('admin'), app: credential('app'), mssp: credential('mssp') };
}

function readDatabase(env: Env): DatabaseConfig {
  const host = read(env, 'SVC_DATABASE_HOST');
  const bootstrapUrl = read(env, 'SVC_DATABASE_BOOTSTRAP_URL');
  const port = read(env, 'SVC_DATABASE_PORT');
  const database = read(env, 'SVC_DATABASE_NAME') ?? 'svc';
  const ssl = read(env, 'SVC_DATABASE_SSL') === 'require';
  const credentials = readCredentials(env);
  if (host === undefined && bootstrapUrl === undefined) {
    if (credentials !== undefined) {
      throw new ConfigError(
        'SVC_DATABASE_HOST: expected a PostgreSQL hostname when credentials are set',
      );
    }
    return { kind: 'embedded' };
  }
  let url: URL | undefined;
  if (bootstrapUrl !== undefined) {
    try {
      url = new URL(bootstrapUrl);
    } catch {
      throw new ConfigError(
        'SVC_DATABASE_BOOTSTRAP_URL: expected a postgres:// URL of a superuser',
      );
    }
  }
  if (credentials === undefined && bootstrapUrl === undefined) {
    throw new ConfigError(
      'SVC_DATABASE_ADMIN_USER: expected the six database credentials (or SVC_DATABASE_BOOTSTRAP_URL) when SVC_DATABASE_HOST is set',
    );
  }
  return {
    kind: 'external',
    host: host ?? url?.hostname ?? 'localhost',
    port: port ?? (url?.port ? Number(url.port) : 5432),
    database,
    credentials,
    bootstrapUrl,
    ssl,
  };
}

function readTokenKey(env: Env): TokenKeyConfig {
  const pem = read(env, 'SVC_TOKEN_SIGNING_KEY');
  const file = read(env, 'SVC_TOKEN_SIGNING_KEY_FILE');
  if (pem !== undefined && file !== undefined) {
    throw new ConfigError(
      'SVC_TOKEN_SIGNING_KEY_FILE: expected only one of SVC_TOKEN_SIGNING_KEY and SVC_TOKEN_SIGNING_KEY_FILE',
    );
  }
  if (pem !== undefined) return { kind: 'pem', pem: pem.replaceAll('\\n', '\n') };
  if (file !== undefined) return { kind: 'file', path: file };
  return { kind: 'generated' };
}

function parseCidr(
  text: string,
  name: 'SVC_TRUSTED_PROXY_CIDRS' | 'SVC_OUTBOUND_ALLOW_CIDRS' = 'SVC_TRUSTED_PROXY_CIDRS',
): string {
  const [address = '', prefix = ''] = text.trim().split('/');
  const family = isIP(address);
  const bits = Number(prefix);
  if (family === 0 || !Number.isInteger(bits) || bits < 0 || bits > (family === 4 ? 32 : 128)) {
    throw new ConfigError(
      `${name}: expected ${SETTINGS[name].expected}, got ${JSON.stringify(text.trim())}`,
    );
  }
  return `${address}/${bits}`;
}

/** Reads and validates the whole configuration; throws ConfigError on the first bad value. */
export function loadConfig(env: Env = process.env, cwd = process.cwd()): Config {
  const cidrs = read(env, 'SVC_TRUSTED_PROXY_CIDRS');
  return {
    host: read(env, 'SVC_HOST') ?? '127.0.0.1',
    port: read(env, 'SVC_PORT') ?? 8080,
    authMode: read(env, 'SVC_AUTH_MODE') ?? 'internal',
    auth: {
      msspHostname: read(env, 'SVC_MSSP_HOSTNAME'),
      customerHostname: read(env, 'SVC_CUSTOMER_HOSTNAME'),
      trustedHeaderUser: read(env, 'SVC_TRUSTED_HEADER_USER') ?? 'X-Forwarded-User',
      trustedHeaderEmail: read(env, 'SVC_TRUSTED_HEADER_EMAIL') ?? 'X-Forwarded-Email',
      trustedHeaderGroups: read(env, 'SVC_TRUSTED_HEADER_GROUPS') ?? 'X-Forwarded-Groups',
      loginRateLimitPerIp: read(env, 'SVC_LOGIN_RATE_LIMIT_IP') ?? 100,
      loginRateLimitPerEmail: read(env, 'SVC_LOGIN_RATE_LIMIT_EMAIL') ?? 20,
      hashConcurrency: read(env, 'SVC_HASH_CONCURRENCY') ?? 2,
      hashQueue: read(env, 'SVC_HASH_QUEUE') ?? 32,
      bootstrapAdminEmail: read(env, 'SVC_BOOTSTRAP_ADMIN_EMAIL') ?? 'admin@localhost',
    },
    dataDir: path.resolve(cwd, read(env, 'SVC_DATA_DIR') ?? '.svc'),
    logLevel: read(env, 'SVC_LOG_LEVEL') ?? 'info',
    tokenKey: readTokenKey(env),
    installNamespace: read(env, 'SVC_INSTALL_NAMESPACE') ?? 'svc-system',
    serviceAccount: read(env, 'SVC_SERVICE_ACCOUNT') ?? 'svc',
    trustedProxyCidrs: cidrs ? cidrs.split(',').map((c) => parseCidr(c)) : [],
    database: readDatabase(env),
    install: {
      msspId: read(env, 'SVC_MSSP_ID'),
      msspName: read(env, 'SVC_MSSP_NAME') ?? 'MSSP',
      installId: read(env, 'SVC_INSTALL_ID'),
      installLabel: read(env, 'SVC_INSTALL_LABEL') ?? 'svc',
    },
    orchestrator: readOrchestrator(env),
    outbound: {
      allowCidrs: (read(env, 'SVC_OUTBOUND_ALLOW_CIDRS') ?? '')
        .split(',')
        .filter((c) => c.trim() !== '')
        .map((c) => parseCidr(c, 'SVC_OUTBOUND_ALLOW_CIDRS')),
      allowHosts: (read(env, 'SVC_OUTBOUND_ALLOW_HOSTS') ?? '')
        .split(',')
        .map((h) => h.trim())
        .filter((h) => h !== ''),
    },
  };
}

function readOrchestrator(env: Env): OrchestratorConfig {
  const ms = (name: Parameters<typeof read>[1], fallback: string) =>
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
    installVersion: read(env, 'SVC_TENANT_CHART_VERSION'),
    helmBinary: read(env, 'SVC_HELM_BIN') ?? 'helm',
    adapterImage: parseImage(read(env, 'SVC_ADAPTER_IMAGE') ?? 'svc-adapter:0.1.0'),
    apiUrl: read(env, 'SVC_API_URL'),
    storageClassName: read(env, 'SVC_TENANT_STORAGE_CLASS') ?? '',
    edgePortBase: read(env, 'SVC_EDGE_PORT_BASE') ?? 20_000,
    defaultLlm: {
      provider: read(env, 'SVC_LLM_PROVIDER') ?? '',
      baseUrl: read(env, 'SVC_LLM_BASE_URL') ?? '',
      model: read(env, 'SVC_LLM_MODEL') ?? '',
    },
  };
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
