import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { assetPath, svcVersion } from '../assets/index.ts';
import { installJobQueueSchema } from './job-queue-schema.ts';

export const SQL_DIR = assetPath('sql');
export const COMPAT_SQL = path.join(SQL_DIR, 'generated', 'chart_compatibility.sql');

export class MigrationError extends Error {
  override name = 'MigrationError';
}

export interface MigrationFile {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrateResult {
  applied: string[];
  compatibilitySynced: boolean;
}

const FILE_PATTERN = /^(\d{4})_[a-z0-9_]+\.sql$/;

function checksum(sql: string): string {
  return createHash('sha256').update(sql).digest('hex');
}

export async function readMigrations(dir = SQL_DIR): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.sql')).sort();
  const files: MigrationFile[] = [];
  for (const name of names) {
    const match = FILE_PATTERN.exec(name);
    if (!match?.[1]) throw new MigrationError(`${name}: migration files are named NNNN_words.sql`);
    const sql = await readFile(path.join(dir, name), 'utf8');
    files.push({ version: Number(match[1]), name, sql, checksum: checksum(sql) });
  }
  files.forEach((file, index) => {
    if (file.version !== index + 1) {
      throw new MigrationError(`${file.name}: expected version ${index + 1}; versions are dense`);
    }
  });
  return files;
}

// Any number; only svc migrations take this advisory lock, so concurrent starts queue.
const LOCK_KEY = 727_001;

/**
 * Applies pending migrations in order, each in its own transaction as svc_admin, then syncs
 * the chart-compatibility list when it changed. History is immutable: an applied file that
 * is missing or whose checksum changed stops everything before anything is written.
 */
export async function migrate(
  admin: pg.ClientConfig,
  options: { dir?: string; compatSql?: string; version?: string } = {},
): Promise<MigrateResult> {
  const files = await readMigrations(options.dir);
  const compatSql = await readFile(options.compatSql ?? COMPAT_SQL, 'utf8');
  const client = new pg.Client(admin);
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    await client.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE IF NOT EXISTS schema_seeds (
        name text PRIMARY KEY,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const applied = await client.query<{ version: number; name: string; checksum: string }>(
      'SELECT version, name, checksum FROM schema_migrations ORDER BY version',
    );
    await refuseDowngrade(client, files, applied.rows, options.version ?? svcVersion());
    for (const row of applied.rows) {
      const file = files.find((f) => f.version === row.version);
      if (!file) {
        throw new MigrationError(
          `migration ${row.name} was applied to this database but is missing from ${options.dir ?? SQL_DIR}`,
        );
      }
      if (file.checksum !== row.checksum || file.name !== row.name) {
        throw new MigrationError(
          `migration ${row.name} was edited after it was applied (checksum ${row.checksum.slice(0, 12)} ≠ ${file.checksum.slice(0, 12)}); add a new migration instead`,
        );
      }
    }
    const done = new Set(applied.rows.map((r) => r.version));
    const result: MigrateResult = { applied: [], compatibilitySynced: false };
    for (const file of files.filter((f) => !done.has(f.version))) {
      await inTransaction(client, async () => {
        await client.query(file.sql);
        await client.query(
          'INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)',
          [file.version, file.name, file.checksum],
        );
      }).catch((error: unknown) => {
        throw new MigrationError(`${file.name}: ${(error as Error).message}`);
      });
      result.applied.push(file.name);
    }
    const compatChecksum = checksum(compatSql);
    const seed = await client.query(
      `SELECT 1 FROM schema_seeds WHERE name = 'chart_compatibility' AND checksum = $1`,
      [compatChecksum],
    );
    if (!seed.rowCount) {
      await inTransaction(client, async () => {
        await client.query(compatSql);
        await client.query(
          `INSERT INTO schema_seeds (name, checksum) VALUES ('chart_compatibility', $1)
           ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()`,
          [compatChecksum],
        );
      });
      result.compatibilitySynced = true;
    }
    if (files.some((f) => f.name === RELEASES_MIGRATION)) {
      await recordRelease(client, options.version ?? svcVersion(), files.length);
    }
    await installJobQueueSchema(admin);
    return result;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}

/**
 * A database some newer svc migrated (levels this svc has no file for) is refused before
 * anything is written, naming the version that wrote it: running older code on a newer schema
 * is a downgrade, and svc has no down migrations (docs/packaging.md "Upgrade").
 */
async function refuseDowngrade(
  client: pg.Client,
  files: MigrationFile[],
  applied: { version: number }[],
  version: string,
): Promise<void> {
  const known = files.length;
  const level = Math.max(0, ...applied.map((r) => r.version));
  if (level <= known) return;
  const writer = await client
    .query<{ version: string }>(
      `SELECT version FROM releases WHERE kind = 'system' AND schema_version = $1
        ORDER BY last_migrated_at DESC NULLS LAST LIMIT 1`,
      [level],
    )
    .then((r) => r.rows[0]?.version)
    .catch(() => undefined);
  throw new MigrationError(
    `downgrade refused: this database is at schema level ${level}${writer ? `, written by svc ${writer}` : ''}; svc ${version} knows levels up to ${known}. Run svc ${writer ?? 'of that version'} or newer, or restore a backup taken before the upgrade (svc db restore)`,
  );
}

/** The migration that gave `releases` its history columns; a test's own directory may lack it. */
const RELEASES_MIGRATION = '0032_release_history.sql';

/** Upserts this version's row of the install's history (`releases`, migration 0032). */
async function recordRelease(client: pg.Client, version: string, level: number): Promise<void> {
  await client.query(
    `INSERT INTO releases (kind, version, schema_version, last_migrated_at)
     VALUES ('system', $1, $2, now())
     ON CONFLICT (kind, version) DO UPDATE
       SET schema_version = excluded.schema_version, last_migrated_at = excluded.last_migrated_at`,
    [version, level],
  );
}

async function inTransaction(client: pg.Client, fn: () => Promise<void>): Promise<void> {
  await client.query('BEGIN');
  try {
    await fn();
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}
