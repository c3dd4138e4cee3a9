import pg from 'pg';
import type { Credential, DatabaseRole } from '../config/index.ts';
import { ROLE_NAMES } from './credentials.ts';

const ATTRIBUTES: Record<DatabaseRole, string> = {
  admin: 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS',
  app: 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS',
  mssp: 'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE BYPASSRLS',
};

/**
 * Creates (or corrects) the three roles and the database, as a superuser. Safe to repeat:
 * it converges attributes and passwords to the given credentials.
 */
export async function bootstrapDatabase(
  superuser: pg.ClientConfig,
  database: string,
  credentials: Record<DatabaseRole, Credential>,
): Promise<void> {
  const client = new pg.Client({ ...superuser, database: superuser.database ?? 'postgres' });
  await client.connect();
  try {
    for (const role of ['admin', 'app', 'mssp'] as const) {
      const { user, password } = credentials[role];
      if (user !== ROLE_NAMES[role]) {
        throw new Error(`the ${role} role must be named ${ROLE_NAMES[role]}, got ${user}`);
      }
      const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [user]);
      const verb = exists.rowCount ? 'ALTER' : 'CREATE';
      await client.query(
        `${verb} ROLE ${client.escapeIdentifier(user)} ${ATTRIBUTES[role]} PASSWORD ${client.escapeLiteral(password)}`,
      );
    }
    const db = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    const name = client.escapeIdentifier(database);
    if (!db.rowCount) {
      await client.query(`CREATE DATABASE ${name} OWNER ${ROLE_NAMES.admin} ENCODING 'UTF8'`);
    }
    await client.query(`REVOKE ALL ON DATABASE ${name} FROM PUBLIC`);
    await client.query(
      `GRANT CONNECT, TEMPORARY ON DATABASE ${name} TO ${ROLE_NAMES.app}, ${ROLE_NAMES.mssp}`,
    );
  } finally {
    await client.end();
  }
}
