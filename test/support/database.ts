import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { ServiceRole } from '../../src/config/index.ts';
import { type AppDatabase, createAppDatabase } from '../../src/db/pools.ts';
import { clientConfig, type DatabaseTarget } from '../../src/db/target.ts';

/** What global setup hands to every test file (through the environment). */
export interface TestDatabaseServer {
  template: string;
  target: DatabaseTarget;
  superuser: { host: string; port: number; user: string; password: string };
}

export const SERVER_ENV = 'SVC_TEST_DATABASE';

export function testServer(): TestDatabaseServer {
  const raw = process.env[SERVER_ENV];
  if (!raw)
    throw new Error(
      `${SERVER_ENV} is not set: run tests with \`npm test\` (global setup starts PostgreSQL)`,
    );
  return JSON.parse(raw) as TestDatabaseServer;
}

export interface TestDatabase {
  name: string;
  target: DatabaseTarget;
  app: AppDatabase;
  /** Raw pools per role, for probing what each role can do with plain SQL. */
  pools: Record<ServiceRole, pg.Pool>;
  superuser: pg.ClientConfig;
  drop(): Promise<void>;
}

/** A fresh clone of the migrated template database, private to the calling test file. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const server = testServer();
  const name = `t_${randomBytes(6).toString('hex')}`;
  const superuser: pg.ClientConfig = { ...server.superuser, database: 'postgres' };
  const admin = new pg.Client(superuser);
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${server.template} OWNER svc_admin`);
    await admin.query(`REVOKE ALL ON DATABASE ${name} FROM PUBLIC`);
    await admin.query(`GRANT CONNECT, TEMPORARY ON DATABASE ${name} TO svc_app, svc_mssp`);
    await admin.query(`GRANT CONNECT ON DATABASE ${name} TO svc_audit`);
  } finally {
    await admin.end();
  }
  const target: DatabaseTarget = { ...server.target, database: name };
  const pools = {
    admin: new pg.Pool({ ...clientConfig(target, 'admin'), max: 3 }),
    app: new pg.Pool({ ...clientConfig(target, 'app'), max: 3 }),
    mssp: new pg.Pool({ ...clientConfig(target, 'mssp'), max: 3 }),
  };
  // A client that is still closing when the database is dropped must not crash the file.
  for (const pool of Object.values(pools)) pool.on('error', () => undefined);
  const app = createAppDatabase(target, 3);
  return {
    name,
    target,
    app,
    pools,
    superuser: { ...server.superuser, database: name },
    async drop() {
      await Promise.all([app.close(), ...Object.values(pools).map((p) => p.end())]);
      const client = new pg.Client(superuser);
      await client.connect();
      try {
        // end() resolves before every backend has gone; give them a moment, then force.
        for (let i = 0; i < 40; i++) {
          const { rows } = await client.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1',
            [name],
          );
          if (rows[0]?.n === 0) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** An empty database owned by svc_admin, for exercising the migration runner itself. */
export async function createEmptyDatabase(): Promise<{
  target: DatabaseTarget;
  drop(): Promise<void>;
}> {
  const server = testServer();
  const name = `e_${randomBytes(6).toString('hex')}`;
  const superuser: pg.ClientConfig = { ...server.superuser, database: 'postgres' };
  const run = async (sql: string) => {
    const client = new pg.Client(superuser);
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`CREATE DATABASE ${name} OWNER svc_admin`);
  await run(`REVOKE ALL ON DATABASE ${name} FROM PUBLIC`);
  await run(`GRANT CONNECT, TEMPORARY ON DATABASE ${name} TO svc_app, svc_mssp`);
  return {
    target: { ...server.target, database: name },
    drop: () => run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * The settings that make a svc process use `target` instead of an embedded database: every
 * test that starts svc, its CLI or a worker as a process takes them from here.
 */
export function externalDatabaseEnv(target: DatabaseTarget): Record<string, string> {
  const { host, port, database, credentials } = target;
  return {
    SVC_DATABASE_HOST: host,
    SVC_DATABASE_PORT: String(port),
    SVC_DATABASE_NAME: database,
    SVC_DATABASE_SSL: 'disable',
    SVC_DATABASE_ADMIN_USER: credentials.admin.user,
    SVC_DATABASE_ADMIN_PASSWORD: credentials.admin.password,
    SVC_DATABASE_APP_USER: credentials.app.user,
    SVC_DATABASE_APP_PASSWORD: credentials.app.password,
    SVC_DATABASE_MSSP_USER: credentials.mssp.user,
    SVC_DATABASE_MSSP_PASSWORD: credentials.mssp.password,
  };
}
