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
  dataDir: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  trustedProxyCidrs: string[];
  database: DatabaseConfig;
}

interface Setting {
  schema: TSchema;
  expected: string;
}

const hostname = Type.String({ pattern: '^[A-Za-z0-9.:\\[\\]-]{1,253}$' });
const port = Type.Integer({ minimum: 1, maximum: 65535 });
const headerName = Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$" });
const cidr = '(?:(?:\\d{1,3}\\.){3}\\d{1,3}/\\d{1,2}|[0-9A-Fa-f:]+/\\d{1,3})';

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

function parseCidr(text: string): string {
  const [address = '', prefix = ''] = text.trim().split('/');
  const family = isIP(address);
  const bits = Number(prefix);
  if (family === 0 || !Number.isInteger(bits) || bits < 0 || bits > (family === 4 ? 32 : 128)) {
    throw new ConfigError(
      `SVC_TRUSTED_PROXY_CIDRS: expected ${SETTINGS.SVC_TRUSTED_PROXY_CIDRS.expected}, got ${JSON.stringify(text.trim())}`,
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
    trustedProxyCidrs: cidrs ? cidrs.split(',').map(parseCidr) : [],
    database: readDatabase(env),
  };
}
