import { readFileSync } from 'node:fs';
import path from 'node:path';
import Type from 'typebox';
import { ConfigError, type Env, hostname, port, settingReader } from './env.ts';

export type DatabaseRole = 'admin' | 'app' | 'mssp' | 'audit';

/** The three roles of spec §5.7: every svc process needs all three. */
export type ServiceRole = Exclude<DatabaseRole, 'audit'>;

/**
 * The credentials svc knows. `audit` (svc_audit, the read-only role of `svc psql`,
 * docs/auditing.md) is optional: svc itself never logs in as it, only the audit session does.
 */
export type DatabaseCredentials = Record<ServiceRole, Credential> & { audit?: Credential };

export interface Credential {
  user: string;
  password: string;
}

export type DatabaseConfig = (
  | { kind: 'embedded' }
  | {
      kind: 'external';
      host: string;
      port: number;
      database: string;
      /** Present when the six credentials were supplied (env vars or a directory of files). */
      credentials: DatabaseCredentials | undefined;
      /** Superuser URL that creates the roles and the database when they are missing. */
      bootstrapUrl: string | undefined;
      ssl: boolean;
      /** A transaction-pooling pooler (PgBouncer) in front of the server, for the pooled pools. */
      pooler?: { host: string; port: number };
    }
) & {
  /** The app pool's size (SVC_DATABASE_POOL_MAX); absent: each process's default. */
  poolMax?: number;
};

const roleName = { schema: Type.String({ minLength: 1 }), expected: 'a role name' } as const;
const password = { schema: Type.String({ minLength: 1 }), expected: 'a password' } as const;

export const DATABASE_SETTINGS = {
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
  SVC_DATABASE_POOLER_HOST: {
    schema: hostname,
    expected: 'the hostname of a PgBouncer in transaction-pooling mode',
  },
  SVC_DATABASE_POOLER_PORT: { schema: port, expected: 'an integer port 1-65535' },
  SVC_DATABASE_POOL_MAX: {
    schema: Type.Integer({ minimum: 1, maximum: 1000 }),
    expected: 'an integer 1-1000 (connections in the app pool)',
  },
  SVC_DATABASE_ADMIN_USER: roleName,
  SVC_DATABASE_ADMIN_PASSWORD: password,
  SVC_DATABASE_APP_USER: roleName,
  SVC_DATABASE_APP_PASSWORD: password,
  SVC_DATABASE_MSSP_USER: roleName,
  SVC_DATABASE_MSSP_PASSWORD: password,
  SVC_DATABASE_AUDIT_USER: roleName,
  SVC_DATABASE_AUDIT_PASSWORD: password,
} as const;

const read = settingReader(DATABASE_SETTINGS);
const ROLES: readonly ServiceRole[] = ['admin', 'app', 'mssp'];

/** The six keys of the `database.external.existingSecret` Secret (spec §2.9). */
export const CREDENTIAL_KEYS = ROLES.flatMap((r) => [`${r}_user`, `${r}_password`]);

/** The audit role's pair: optional, but both or neither (docs/auditing.md). */
export const AUDIT_CREDENTIAL_KEYS = ['audit_user', 'audit_password'] as const;

/** One credential key from its env var, else from the file of that name in `dir`. */
function credentialValue(env: Env, dir: string | undefined, key: string): string | undefined {
  const name = `SVC_DATABASE_${key.toUpperCase()}` as keyof typeof DATABASE_SETTINGS;
  const fromEnv = read(env, name) as string | undefined;
  if (fromEnv !== undefined || dir === undefined) return fromEnv;
  try {
    const value = readFileSync(path.join(dir, key), 'utf8').trim();
    return value === '' ? undefined : value;
  } catch {
    return undefined;
  }
}

/** The audit pair, when given; one without the other is a mistake worth stopping for. */
function readAuditCredential(env: Env, dir: string | undefined): Credential | undefined {
  const [user, password] = AUDIT_CREDENTIAL_KEYS.map((k) => credentialValue(env, dir, k));
  if (user === undefined && password === undefined) return undefined;
  if (user === undefined || password === undefined) {
    const missing = user === undefined ? 'audit_user' : 'audit_password';
    throw new ConfigError(
      `SVC_DATABASE_${missing.toUpperCase()}: expected a value (env var or file ${missing} in SVC_DATABASE_CREDENTIALS_DIR); the audit role's user and password go together`,
    );
  }
  return { user, password };
}

/** All six credentials or none: a partial set is a mistake worth stopping for. */
function readCredentials(env: Env): DatabaseCredentials | undefined {
  const dir = read(env, 'SVC_DATABASE_CREDENTIALS_DIR');
  const values = new Map(CREDENTIAL_KEYS.map((k) => [k, credentialValue(env, dir, k)] as const));
  if ([...values.values()].every((v) => v === undefined)) {
    if (dir === undefined) return undefined;
    throw new ConfigError(
      `SVC_DATABASE_CREDENTIALS_DIR: expected files ${CREDENTIAL_KEYS.join(', ')} in ${dir}`,
    );
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
  const audit = readAuditCredential(env, dir);
  return {
    admin: credential('admin'),
    app: credential('app'),
    mssp: credential('mssp'),
    ...(audit ? { audit } : {}),
  };
}

function parseBootstrapUrl(bootstrapUrl: string | undefined): URL | undefined {
  if (bootstrapUrl === undefined) return undefined;
  try {
    return new URL(bootstrapUrl);
  } catch {
    throw new ConfigError('SVC_DATABASE_BOOTSTRAP_URL: expected a postgres:// URL of a superuser');
  }
}

/**
 * The pooler's address: both settings or neither, and only in front of an external server
 * named by SVC_DATABASE_HOST (the embedded database is svc's own; a pooler has nothing to add).
 */
function readPooler(
  env: Env,
  host: string | undefined,
): { host: string; port: number } | undefined {
  const poolerHost = read(env, 'SVC_DATABASE_POOLER_HOST');
  const poolerPort = read(env, 'SVC_DATABASE_POOLER_PORT');
  if (poolerHost === undefined && poolerPort === undefined) return undefined;
  if (poolerHost === undefined || poolerPort === undefined) {
    const missing = poolerHost === undefined ? 'HOST' : 'PORT';
    throw new ConfigError(
      `SVC_DATABASE_POOLER_${missing}: expected a value; the pooler's host and port go together`,
    );
  }
  if (host === undefined) {
    throw new ConfigError(
      'SVC_DATABASE_HOST: expected the PostgreSQL hostname when SVC_DATABASE_POOLER_HOST is set (the pooler fronts an external database; LISTEN and session locks still connect to it directly)',
    );
  }
  return { host: poolerHost, port: poolerPort };
}

/** Embedded unless a host or a bootstrap URL names an external PostgreSQL. */
export function readDatabase(env: Env): DatabaseConfig {
  const host = read(env, 'SVC_DATABASE_HOST');
  const pooler = readPooler(env, host);
  const poolMax = read(env, 'SVC_DATABASE_POOL_MAX');
  const sized = poolMax === undefined ? {} : { poolMax };
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
    return { kind: 'embedded', ...sized };
  }
  const url = parseBootstrapUrl(bootstrapUrl);
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
    ...(pooler === undefined ? {} : { pooler }),
    ...sized,
  };
}
