import pg from 'pg';
import type { DatabaseCredentials, DatabaseRole } from '../config/index.ts';
import { ROLE_NAMES } from './credentials.ts';

const ATTRIBUTES: Record<DatabaseRole, string> = {
  admin: 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS',
  app: 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS',
  mssp: 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE BYPASSRLS',
  // RLS binds it like svc_app; what it may read is granted in sql/0026_audit_role.sql.
  audit: 'NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS NOREPLICATION',
};

/**
 * Creates (or corrects) the roles and the database, as a superuser. Safe to repeat: it
 * converges attributes and passwords to the given credentials.
 *
 * svc_audit is created even without a credential (NOLOGIN then), because migration 0026
 * grants to it; with one it can log in. Either way it is held to its read-only shape on
 * every run: no role memberships (they would lend it another role's grants) and read-only
 * transactions by default (defence in depth; its grants are what make it read-only).
 */
export async function bootstrapDatabase(
  superuser: pg.ClientConfig,
  database: string,
  credentials: DatabaseCredentials,
): Promise<void> {
  const client = new pg.Client({ ...superuser, database: superuser.database ?? 'postgres' });
  await client.connect();
  try {
    // svc's Pods start together (an install, a rollout, a node drain) and each bootstraps:
    // concurrent GRANT/ALTER ROLE on the same catalog rows fail with "tuple concurrently
    // updated". One at a time, then; the session lock ends with the connection.
    await client.query('SELECT pg_advisory_lock($1)', [BOOTSTRAP_LOCK_KEY]);
    for (const role of ['admin', 'app', 'mssp', 'audit'] as const) {
      const credential = credentials[role];
      const user = credential?.user ?? ROLE_NAMES[role];
      if (user !== ROLE_NAMES[role]) {
        throw new Error(`the ${role} role must be named ${ROLE_NAMES[role]}, got ${user}`);
      }
      const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [user]);
      // svc_audit without a credential: created NOLOGIN, and an existing one keeps whatever
      // login an operator gave it by hand.
      const login =
        role !== 'audit' ? '' : credential ? ' LOGIN' : exists.rowCount ? '' : ' NOLOGIN';
      const password = credential ? ` PASSWORD ${client.escapeLiteral(credential.password)}` : '';
      await client.query(
        `${exists.rowCount ? 'ALTER' : 'CREATE'} ROLE ${client.escapeIdentifier(user)} ${ATTRIBUTES[role]}${login}${password}`,
      );
    }
    await convergeAuditRole(client);
    const db = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    const name = client.escapeIdentifier(database);
    if (!db.rowCount) {
      await client.query(`CREATE DATABASE ${name} OWNER ${ROLE_NAMES.admin} ENCODING 'UTF8'`);
    }
    await client.query(`REVOKE ALL ON DATABASE ${name} FROM PUBLIC`);
    await client.query(
      `GRANT CONNECT, TEMPORARY ON DATABASE ${name} TO ${ROLE_NAMES.app}, ${ROLE_NAMES.mssp}`,
    );
    // CONNECT only: TEMPORARY would let the audit session create temporary functions and tables.
    await client.query(`GRANT CONNECT ON DATABASE ${name} TO ${ROLE_NAMES.audit}`);
    await client.query(`REVOKE TEMPORARY ON DATABASE ${name} FROM ${ROLE_NAMES.audit}`);
    // Still under the lock: it grants on the same function rows in every caller.
    await restrictBuiltins(superuser, database);
  } finally {
    await client.end();
  }
}

/** The bootstrap's session advisory lock, in the superuser's maintenance database. */
export const BOOTSTRAP_LOCK_KEY = 727_101;

/** The same superuser, connected to `database` (a URL's own path would win over `database`). */
function inDatabase(superuser: pg.ClientConfig, database: string): pg.ClientConfig {
  if (superuser.connectionString === undefined) return { ...superuser, database };
  const url = new URL(superuser.connectionString);
  url.pathname = `/${encodeURIComponent(database)}`;
  return { ...superuser, connectionString: url.toString() };
}

/**
 * Built-in functions every role may call by default that svc_audit must not: creating large
 * objects (a write no table grant covers) and advisory locks (svc's migration, job-liveness and
 * per-tenant locks: an audit session holding one could stall them or make a dead worker look
 * alive). EXECUTE moves from PUBLIC to the three service roles. Function privileges live in
 * each database's catalog, hence the second connection; a template's clones inherit them.
 */
async function restrictBuiltins(superuser: pg.ClientConfig, database: string): Promise<void> {
  const client = new pg.Client(inDatabase(superuser, database));
  await client.connect();
  try {
    await client.query(`
      DO $$
      DECLARE f record;
      BEGIN
        FOR f IN SELECT p.oid::regprocedure AS signature FROM pg_proc p
                  WHERE p.pronamespace = 'pg_catalog'::regnamespace
                    AND (p.proname LIKE 'pg\\_%advisory\\_%'
                         OR p.proname IN ('lo_create', 'lo_creat', 'lo_from_bytea'))
                    -- Only what is still open: a restart changes no catalog row.
                    AND has_function_privilege('${ROLE_NAMES.audit}', p.oid, 'EXECUTE')
        LOOP
          EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f.signature);
          EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO ${ROLE_NAMES.admin}, ${ROLE_NAMES.app}, ${ROLE_NAMES.mssp}', f.signature);
        END LOOP;
      END
      $$`);
  } finally {
    await client.end();
  }
}

async function convergeAuditRole(client: pg.Client): Promise<void> {
  const audit = client.escapeIdentifier(ROLE_NAMES.audit);
  const { rows } = await client.query<{ granted: string }>(
    `SELECT g.rolname AS granted FROM pg_auth_members m
       JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles r ON r.oid = m.member
      WHERE r.rolname = $1`,
    [ROLE_NAMES.audit],
  );
  for (const { granted } of rows) {
    await client.query(`REVOKE ${client.escapeIdentifier(granted)} FROM ${audit}`);
  }
  const { rowCount } = await client.query(
    `SELECT 1 FROM pg_roles WHERE rolname = $1
        AND 'default_transaction_read_only=on' = ANY (coalesce(rolconfig, '{}'))`,
    [ROLE_NAMES.audit],
  );
  if (!rowCount) await client.query(`ALTER ROLE ${audit} SET default_transaction_read_only = on`);
}
