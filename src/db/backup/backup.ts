import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdtemp, open, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { readMigrations } from '../migrate.ts';
import { clientConfig, type DatabaseTarget } from '../target.ts';
import {
  type BackupManifest,
  manifestPath,
  readManifest,
  sha256File,
  verifyArchive,
} from './manifest.ts';
import { assertClientFits, BackupError, runTool, toolFailure } from './pg-tools.ts';

/**
 * The role a dump runs as. svc_admin owns every table but FORCE ROW LEVEL SECURITY binds it
 * (docs/data-model.md), so pg_dump as svc_admin stops at the first tenant table; svc_mssp
 * bypasses RLS but may not read the migration bookkeeping or the job queue, and widening the
 * system gate's role for backups would widen what every gated request can do. svc_backup is
 * NOLOGIN: a superuser session switches to it (pg_dump --role), so the dump reads everything
 * (pg_read_all_data, BYPASSRLS) and can write nothing.
 */
export const BACKUP_ROLE = 'svc_backup';

/** A superuser login: the embedded server's, or SVC_DATABASE_BOOTSTRAP_URL's. */
export type Superuser = pg.ClientConfig;

export interface BackupResult {
  archive: string;
  manifest: BackupManifest;
}

/** The file a backup refuses to overwrite, and a directory it can write into. */
export async function checkBackupTarget(out: string): Promise<string> {
  const archive = path.resolve(out);
  for (const file of [archive, manifestPath(archive)]) {
    const exists = await stat(file).then(
      () => true,
      () => false,
    );
    if (exists) throw new BackupError(`${file} already exists; backups never overwrite a file`);
  }
  const dir = path.dirname(archive);
  try {
    const info = await stat(dir);
    if (!info.isDirectory()) throw new Error('not a directory');
    await access(dir, constants.W_OK);
  } catch {
    throw new BackupError(`cannot write into ${dir}: it must be an existing, writable directory`);
  }
  return archive;
}

/** libpq's environment for one login; the password never appears on a command line. */
function libpqEnv(config: pg.ClientConfig, database: string, ssl: boolean): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PGAPPNAME: 'svc-backup' };
  for (const name of ['PGOPTIONS', 'PGSERVICE', 'PGPASSFILE', 'PGSERVICEFILE']) delete env[name];
  let sslmode = ssl ? 'verify-full' : 'disable';
  if (config.connectionString !== undefined) {
    const url = new URL(config.connectionString);
    env.PGHOST = decodeURIComponent(url.hostname);
    env.PGPORT = url.port || '5432';
    env.PGUSER = decodeURIComponent(url.username);
    env.PGPASSWORD = decodeURIComponent(url.password);
    sslmode = url.searchParams.get('sslmode') ?? sslmode;
  } else {
    env.PGHOST = config.host;
    env.PGPORT = String(config.port ?? 5432);
    env.PGUSER = config.user;
    env.PGPASSWORD = typeof config.password === 'string' ? config.password : '';
  }
  env.PGDATABASE = database;
  env.PGSSLMODE = sslmode;
  return env;
}

function inDatabase(superuser: Superuser, database: string): pg.ClientConfig {
  if (superuser.connectionString === undefined) return { ...superuser, database };
  const url = new URL(superuser.connectionString);
  url.pathname = `/${encodeURIComponent(database)}`;
  return { ...superuser, connectionString: url.toString() };
}

/** Creates or corrects svc_backup; needs the superuser (BYPASSRLS is a superuser's to give). */
async function ensureBackupRole(client: pg.Client): Promise<void> {
  const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [BACKUP_ROLE]);
  await client.query(
    `${exists.rowCount ? 'ALTER' : 'CREATE'} ROLE ${BACKUP_ROLE} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION BYPASSRLS`,
  );
  await client.query(`GRANT pg_read_all_data TO ${BACKUP_ROLE}`);
}

/**
 * `svc db backup`: a pg_dump custom-format archive of svc's database and its manifest, both
 * from one snapshot (the manifest's install id and schema version are read in the transaction
 * whose snapshot pg_dump dumps). Temp files beside the target, renamed into place when whole:
 * the archive first, the manifest last, so a manifest always names a complete archive.
 */
export async function takeBackup(options: {
  target: DatabaseTarget;
  superuser: Superuser;
  out: string;
  svcVersion: string;
}): Promise<BackupResult> {
  const archive = await checkBackupTarget(options.out);
  const { target } = options;
  const client = new pg.Client(inDatabase(options.superuser, target.database));
  await client.connect();
  const suffix = `.tmp-${randomBytes(6).toString('hex')}`;
  const dir = path.dirname(archive);
  const tmpArchive = path.join(dir, `.${path.basename(archive)}${suffix}`);
  const tmpManifest = path.join(dir, `.${path.basename(manifestPath(archive))}${suffix}`);
  try {
    const { rows: version } = await client.query<{ num: string; text: string }>(
      `SELECT current_setting('server_version_num') AS num, current_setting('server_version') AS text`,
    );
    const pgDumpMajor = await assertClientFits('pg_dump', Number(version[0]?.num));
    await ensureBackupRole(client);
    await client.query(`SET ROLE ${BACKUP_ROLE}`);
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const { rows: snap } = await client.query<{ snapshot: string }>(
      'SELECT pg_export_snapshot() AS snapshot',
    );
    const facts = await client
      .query<{ install_id: string; level: number }>(
        `SELECT (SELECT install_id::text FROM organization) AS install_id,
                (SELECT max(version)::int FROM schema_migrations) AS level`,
      )
      .catch((error: { code?: string }) => {
        if (error.code === '42P01')
          throw new BackupError(`database ${target.database} has no svc schema to back up`);
        throw error;
      });
    const installId = facts.rows[0]?.install_id;
    const schemaVersion = facts.rows[0]?.level;
    if (!installId || !schemaVersion) {
      throw new BackupError(
        `database ${target.database} has no install record yet; start svc once before backing it up`,
      );
    }
    // The archive holds password hashes and session digests: owner-only from its first byte
    // (pg_dump keeps the mode of a file that exists).
    await (await open(tmpArchive, 'wx', 0o600)).close();
    const run = await runTool(
      'pg_dump',
      [
        '--format=custom',
        `--file=${tmpArchive}`,
        `--role=${BACKUP_ROLE}`,
        `--snapshot=${snap[0]?.snapshot}`,
        '--no-password',
      ],
      libpqEnv(options.superuser, target.database, target.ssl),
    );
    if (run.code !== 0) throw toolFailure('pg_dump', run);
    await client.query('COMMIT');
    const sum = await sha256File(tmpArchive);
    const manifest: BackupManifest = {
      format: 'svc-backup/1',
      svcVersion: options.svcVersion,
      schemaVersion,
      installId,
      createdAt: new Date().toISOString(),
      archive: { file: path.basename(archive), bytes: sum.bytes, sha256: sum.sha256 },
      postgres: { serverVersion: version[0]?.text ?? '', pgDumpMajor },
    };
    await writeFile(tmpManifest, `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    await syncFile(tmpArchive);
    await syncFile(tmpManifest);
    await rename(tmpArchive, archive);
    await rename(tmpManifest, manifestPath(archive));
    await syncFile(dir);
    return { archive, manifest };
  } catch (error) {
    await rm(tmpArchive, { force: true });
    await rm(tmpManifest, { force: true });
    throw error;
  } finally {
    await client.end();
  }
}

async function syncFile(file: string): Promise<void> {
  const handle = await open(file, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Checks an archive can be restored here, before any database is touched. */
export async function checkRestorable(options: {
  from: string;
  installId: string | undefined;
}): Promise<{ archive: string; manifest: BackupManifest }> {
  const archive = path.resolve(options.from);
  const manifest = await readManifest(archive);
  await verifyArchive(archive, manifest);
  if (options.installId === undefined) {
    throw new BackupError(
      `the archive belongs to install ${manifest.installId}; confirm it with --install-id or SVC_INSTALL_ID (a restore never adopts an install id by itself)`,
    );
  }
  if (options.installId !== manifest.installId) {
    throw new BackupError(
      `the archive belongs to install ${manifest.installId}, not ${options.installId}: a backup restores only into its own install`,
    );
  }
  const known = (await readMigrations()).length;
  if (manifest.schemaVersion > known) {
    throw new BackupError(
      `the archive has schema version ${manifest.schemaVersion} (svc ${manifest.svcVersion}); this svc knows versions up to ${known}: restore it with svc ${manifest.svcVersion} or newer`,
    );
  }
  return { archive, manifest };
}

/**
 * `svc db restore`: the archive into an empty database, as svc_admin (the owner; no superuser).
 * pg_dump writes ENABLE ROW LEVEL SECURITY and the policies after the data, so the owner loads
 * every tenant's rows before RLS applies to it. One transaction: a failure leaves the database
 * empty. The archive's grants on PostgreSQL's own functions (advisory locks, large objects) are
 * left out: the bootstrap step sets them in every database it creates (src/db/bootstrap.ts), and
 * only a superuser may.
 */
export async function restoreBackup(options: {
  target: DatabaseTarget;
  archive: string;
}): Promise<{ restoredTables: number }> {
  const { target, archive } = options;
  const admin = new pg.Client(clientConfig(target, 'admin'));
  await admin.connect();
  try {
    const { rows: version } = await admin.query<{ num: string }>(
      `SELECT current_setting('server_version_num') AS num`,
    );
    await assertClientFits('pg_restore', Number(version[0]?.num));
    const { rows } = await admin.query<{ name: string }>(
      `SELECT n.nspname || '.' || c.relname AS name FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%'
          AND n.nspname NOT LIKE 'pg\\_temp%'
        ORDER BY 1 LIMIT 3`,
    );
    const { rows: schemas } = await admin.query<{ name: string }>(
      `SELECT nspname AS name FROM pg_namespace
        WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'public')
          AND nspname NOT LIKE 'pg\\_toast%' AND nspname NOT LIKE 'pg\\_temp%' LIMIT 3`,
    );
    if (rows.length > 0 || schemas.length > 0) {
      const found = [...rows, ...schemas].map((r) => r.name).join(', ');
      throw new BackupError(
        `database ${target.database} is not empty (${found}, …): restore only into an empty database`,
      );
    }
  } finally {
    await admin.end();
  }
  const env = libpqEnv(clientConfig(target, 'admin'), target.database, target.ssl);
  const work = await mkdtemp(path.join(tmpdir(), 'svc-restore-'));
  try {
    const listed = await runTool('pg_restore', ['--list', archive], env);
    if (listed.code !== 0) throw toolFailure('pg_restore', listed);
    const entries = listed.stdout
      .split('\n')
      .filter((line) => !/^\d+;\s+\d+\s+\d+\s+ACL\s+pg_catalog\s/.test(line));
    const list = path.join(work, 'restore.list');
    await writeFile(list, `${entries.join('\n')}\n`, { mode: 0o600 });
    const run = await runTool(
      'pg_restore',
      [
        `--dbname=${target.database}`,
        '--single-transaction',
        '--exit-on-error',
        '--no-password',
        `--use-list=${list}`,
        archive,
      ],
      env,
    );
    if (run.code !== 0) throw toolFailure('pg_restore', run);
    const restoredTables = entries.filter((line) => /\sTABLE DATA\s/.test(line)).length;
    return { restoredTables };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
