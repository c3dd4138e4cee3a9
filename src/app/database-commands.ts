import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config, DatabaseCredentials, DatabaseRole } from '../config/index.ts';
import { migrate } from '../db/migrate.ts';
import { createAppDatabase } from '../db/pools.ts';
import { openDatabase } from '../db/runtime.ts';
import { clientConfig, connectionUrl, type DatabaseTarget, roleCredential } from '../db/target.ts';
import { deleteAuditGrant, insertAuditGrant } from '../domains/audit/audit-grant-repository.ts';
import { findTenantBySlugOrId } from '../domains/tenants/tenant-repository.ts';
import type { Logger } from '../log/index.ts';

export async function runMigrate(config: Config, logger: Logger): Promise<void> {
  const runtime = await openDatabase(config, logger);
  try {
    const result = await migrate(clientConfig(runtime.target, 'admin'));
    const applied = result.applied.length ? result.applied.join(', ') : 'none (up to date)';
    process.stdout.write(`migrations applied: ${applied}\n`);
    if (result.compatibilitySynced) process.stdout.write('chart compatibility list synced\n');
  } finally {
    await runtime.stop();
  }
}

/** Reads the embedded server's address without starting it, so printing a URL has no side effects. */
async function embeddedTarget(dataDir: string): Promise<DatabaseTarget> {
  try {
    const state = JSON.parse(await readFile(path.join(dataDir, 'embedded.json'), 'utf8')) as {
      port: number;
    };
    const credentials = JSON.parse(
      await readFile(path.join(dataDir, 'credentials.json'), 'utf8'),
    ) as DatabaseCredentials;
    return { host: '127.0.0.1', port: state.port, database: 'svc', ssl: false, credentials };
  } catch {
    throw new Error(
      `no embedded database in ${dataDir} yet; run \`svc serve\` or \`svc migrate\` first`,
    );
  }
}

export async function runDbUrl(
  config: Config,
  logger: Logger,
  role: DatabaseRole,
  showPassword: boolean,
): Promise<void> {
  const target =
    config.database.kind === 'embedded'
      ? await embeddedTarget(config.dataDir)
      : (await openDatabase(config, logger)).target;
  process.stdout.write(`${connectionUrl(target, role, showPassword)}\n`);
}

/**
 * How long a `svc psql` session's tenant grant lives if svc cannot withdraw it (killed): a
 * working day. A clean exit deletes it at once.
 */
const AUDIT_GRANT_TTL_SECONDS = 12 * 60 * 60;

/**
 * Opens psql as svc_audit: SELECT only, under RLS, and no column that holds a credential
 * (sql/0026_audit_role.sql, docs/auditing.md). With a tenant, `app.current_tenant_id` is set
 * for the whole psql session through libpq's startup options, so every query sees exactly that
 * tenant's rows. svc_app only resolves the slug; the session never holds its credentials.
 * The tenant is also fixed by an audit grant (sql/0028): a session that sets
 * app.current_tenant_id to another tenant reads zero rows, because the grant's secret names
 * the one tenant resolved here.
 */
export async function runPsql(
  config: Config,
  logger: Logger,
  psqlArgs: readonly string[],
  tenant?: string,
): Promise<number> {
  const runtime = await openDatabase(config, logger);
  const db = createAppDatabase(runtime.target, 1);
  let grantHash: string | undefined;
  try {
    const { user, password } = roleCredential(runtime.target, 'audit');
    const { host, port, database } = runtime.target;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PGHOST: host,
      PGPORT: String(port),
      PGDATABASE: database,
      PGUSER: user,
      PGPASSWORD: password,
      PGAPPNAME: 'svc-psql',
      PGSSLMODE: runtime.target.ssl ? 'verify-full' : 'disable',
    };
    delete env.PGOPTIONS;
    if (tenant !== undefined) {
      const tenantId = (await db.withoutTenant((tx) => findTenantBySlugOrId(tx, tenant)))?.id;
      if (!tenantId) throw new Error(`no tenant with slug or id ${JSON.stringify(tenant)}`);
      const secret = randomBytes(32).toString('base64url');
      const secretHash = createHash('sha256').update(secret).digest('hex');
      await db.withoutTenant((tx) =>
        insertAuditGrant(tx, { secretHash, tenantId, ttlSeconds: AUDIT_GRANT_TTL_SECONDS }),
      );
      grantHash = secretHash;
      env.PGOPTIONS = `-c app.current_tenant_id=${tenantId} -c app.audit_grant=${secret}`;
    }
    return await new Promise<number>((resolve, reject) => {
      const child = spawn('psql', [...psqlArgs], {
        stdio: 'inherit',
        env,
      });
      child.on('error', (error: NodeJS.ErrnoException) =>
        reject(
          error.code === 'ENOENT'
            ? new Error(
                'psql not found on PATH; install the PostgreSQL client (Debian: apt-get install postgresql-client)',
              )
            : error,
        ),
      );
      child.on('exit', (code) => resolve(code ?? 1));
    });
  } finally {
    const secretHash = grantHash;
    if (secretHash !== undefined)
      await db
        .withoutTenant((tx) => deleteAuditGrant(tx, secretHash))
        .catch((error: unknown) =>
          logger.warn(
            { err: error },
            'svc psql: the audit grant was not withdrawn; it expires on its own',
          ),
        );
    await db.close();
    await runtime.stop();
  }
}
