import type { ClientConfig } from 'pg';
import type { Credential, DatabaseRole } from '../config/index.ts';

/** Where the database is and how each of the three roles logs in. */
export interface DatabaseTarget {
  host: string;
  port: number;
  database: string;
  ssl: boolean;
  credentials: Record<DatabaseRole, Credential>;
}

export function clientConfig(target: DatabaseTarget, role: DatabaseRole): ClientConfig {
  const { user, password } = target.credentials[role];
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

/** A libpq URL for the role; the password is shown only when asked for. */
export function connectionUrl(
  target: DatabaseTarget,
  role: DatabaseRole,
  showPassword: boolean,
): string {
  const { user, password } = target.credentials[role];
  const url = new URL('postgresql://placeholder');
  url.hostname = target.host;
  url.port = String(target.port);
  url.pathname = `/${encodeURIComponent(target.database)}`;
  url.username = encodeURIComponent(user);
  url.password = showPassword ? encodeURIComponent(password) : 'REDACTED';
  if (target.ssl) url.searchParams.set('sslmode', 'verify-full');
  return url.toString();
}
