import type { ClientConfig } from 'pg';
import type { Credential, DatabaseCredentials, DatabaseRole } from '../config/index.ts';

/** Where the database is and how each role logs in (svc_audit only when configured). */
export interface DatabaseTarget {
  host: string;
  port: number;
  database: string;
  ssl: boolean;
  credentials: DatabaseCredentials;
  /**
   * A connection pooler in transaction-pooling mode (PgBouncer) in front of the same server:
   * only transactional pools go through it (`pooledConfig`); LISTEN, session advisory locks,
   * migrations and the job queue's own pool stay on direct connections (`clientConfig`).
   */
  pooler?: { host: string; port: number };
}

/** The role's credential; svc_audit's may be absent on an external database. */
export function roleCredential(target: DatabaseTarget, role: DatabaseRole): Credential {
  const credential = target.credentials[role];
  if (credential === undefined) {
    throw new Error(
      'no credentials for svc_audit: set SVC_DATABASE_AUDIT_USER and SVC_DATABASE_AUDIT_PASSWORD (or files audit_user and audit_password in SVC_DATABASE_CREDENTIALS_DIR); see docs/auditing.md',
    );
  }
  return credential;
}

/**
 * The role's direct connection to the server, never through the pooler: for whatever needs one
 * session for longer than a transaction (LISTEN, session advisory locks, migrations).
 */
export function clientConfig(target: DatabaseTarget, role: DatabaseRole): ClientConfig {
  const { user, password } = roleCredential(target, role);
  return {
    host: target.host,
    port: target.port,
    database: target.database,
    user,
    password,
    ssl: target.ssl ? { rejectUnauthorized: true } : false,
    application_name: `svc-${role}`,
  };
}

/**
 * The role's connection for a transactional pool: through the pooler when one is configured,
 * else the same as clientConfig. A connection from here may change server session between two
 * transactions, so nothing that must outlive a transaction (LISTEN, a session advisory lock,
 * a named statement, a session setting) may use it.
 */
export function pooledConfig(target: DatabaseTarget, role: DatabaseRole): ClientConfig {
  const direct = clientConfig(target, role);
  if (target.pooler === undefined) return direct;
  return { ...direct, host: target.pooler.host, port: target.pooler.port };
}

/** True when pooledConfig goes through a transaction-pooling pooler. */
export function isPooled(target: DatabaseTarget): boolean {
  return target.pooler !== undefined;
}

/** A libpq URL for the role; the password is shown only when asked for. */
export function connectionUrl(
  target: DatabaseTarget,
  role: DatabaseRole,
  showPassword: boolean,
): string {
  const { user, password } = roleCredential(target, role);
  const url = new URL('postgresql://placeholder');
  url.hostname = target.host;
  url.port = String(target.port);
  url.pathname = `/${encodeURIComponent(target.database)}`;
  url.username = encodeURIComponent(user);
  url.password = showPassword ? encodeURIComponent(password) : 'REDACTED';
  if (target.ssl) url.searchParams.set('sslmode', 'verify-full');
  return url.toString();
}
