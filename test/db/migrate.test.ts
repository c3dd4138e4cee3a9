import assert from 'node:assert/strict';
import { appendFile, cp, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { MigrationError, migrate, readMigrations, SQL_DIR } from '../../src/db/migrate.ts';
import { clientConfig, type DatabaseTarget } from '../../src/db/target.ts';
import { createEmptyDatabase } from '../support/database.ts';

let target: DatabaseTarget;
let drop: () => Promise<void>;
let dir: string;

before(async () => {
  ({ target, drop } = await createEmptyDatabase());
  dir = await mkdtemp(path.join(tmpdir(), 'svc-sql-'));
  await cp(SQL_DIR, dir, { recursive: true });
});
after(async () => {
  await drop();
  await rm(dir, { recursive: true, force: true });
});

const options = () => ({ dir, compatSql: path.join(dir, 'generated', 'chart_compatibility.sql') });

async function history(): Promise<string[]> {
  const client = new pg.Client(clientConfig(target, 'admin'));
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      'SELECT name FROM schema_migrations ORDER BY version',
    );
    return rows.map((r) => r.name);
  } finally {
    await client.end();
  }
}

test('migrate applies every file in order, then a second run is a no-op', async () => {
  const files = (await readMigrations(dir)).map((f) => f.name);
  const first = await migrate(clientConfig(target, 'admin'), options());
  assert.deepEqual(first.applied, files);
  assert.equal(first.compatibilitySynced, true);
  const second = await migrate(clientConfig(target, 'admin'), options());
  assert.deepEqual(second, { applied: [], compatibilitySynced: false });
  assert.deepEqual(await history(), files);
});

test('an edited, already-applied migration is refused before anything is written', async () => {
  const first = path.join(dir, '0002_install.sql');
  await appendFile(first, '\n-- a harmless-looking edit\n');
  const next = `${String((await readMigrations(dir)).length + 1).padStart(4, '0')}_new.sql`;
  await writeFile(path.join(dir, next), 'CREATE TABLE should_not_exist (id int);');
  await assert.rejects(migrate(clientConfig(target, 'admin'), options()), (error: Error) => {
    assert.ok(error instanceof MigrationError);
    assert.match(error.message, /0002_install\.sql was edited after it was applied/);
    return true;
  });
  const client = new pg.Client(clientConfig(target, 'admin'));
  await client.connect();
  const { rowCount } = await client.query(
    `SELECT 1 FROM pg_tables WHERE tablename = 'should_not_exist'`,
  );
  await client.end();
  assert.equal(rowCount, 0);
  await cp(path.join(SQL_DIR, '0002_install.sql'), first);
  await unlink(path.join(dir, next));
});

test('a database migrated past the files this svc has is refused as a downgrade', async () => {
  const files = await readMigrations(dir);
  const last = files.at(-1);
  assert.ok(last);
  await rm(path.join(dir, last.name));
  await assert.rejects(
    migrate(clientConfig(target, 'admin'), options()),
    new RegExp(
      `^MigrationError: downgrade refused: this database is at schema level ${files.length}, written by svc [0-9.]+; svc [0-9.]+ knows levels up to ${files.length - 1}\\.`,
    ),
  );
  await cp(path.join(SQL_DIR, last.name), path.join(dir, last.name));
});

test('a failing migration rolls back whole and names the file', async () => {
  const n = (await readMigrations(dir)).length + 1;
  const name = `${String(n).padStart(4, '0')}_broken.sql`;
  await writeFile(
    path.join(dir, name),
    'CREATE TABLE half_done (id int);\nSELECT no_such_function();',
  );
  await assert.rejects(migrate(clientConfig(target, 'admin'), options()), new RegExp(name));
  const client = new pg.Client(clientConfig(target, 'admin'));
  await client.connect();
  const { rowCount } = await client.query(`SELECT 1 FROM pg_tables WHERE tablename = 'half_done'`);
  await client.end();
  assert.equal(rowCount, 0);
  assert.ok(!(await history()).includes(name));
  await rm(path.join(dir, name));
});

test('migration files must be dense and well named', async () => {
  await writeFile(path.join(dir, '0042_gap.sql'), 'SELECT 1;');
  await assert.rejects(readMigrations(dir), /expected version \d+; versions are dense/);
  await rm(path.join(dir, '0042_gap.sql'));
  await writeFile(path.join(dir, 'Bad Name.sql'), 'SELECT 1;');
  await assert.rejects(readMigrations(dir), /NNNN_words\.sql/);
  await rm(path.join(dir, 'Bad Name.sql'));
});

type ReleaseRow = { version: string; schema_version: number; last_migrated_at: string };

async function releases(): Promise<ReleaseRow[]> {
  const client = new pg.Client(clientConfig(target, 'admin'));
  await client.connect();
  try {
    const { rows } = await client.query<ReleaseRow>(
      `SELECT version, schema_version, last_migrated_at::text FROM releases
        WHERE kind = 'system' ORDER BY installed_at, version`,
    );
    return rows;
  } finally {
    await client.end();
  }
}

// Runs last: it leaves a newer level applied to the database.
test('each version that migrates is recorded; an older svc on a newer database is refused as a downgrade', async () => {
  const level = (await readMigrations(dir)).length;
  // This version migrated in the first test; another run of it updates its row, adds none.
  await migrate(clientConfig(target, 'admin'), { ...options(), version: '0.2.0' });
  const before = await releases();
  assert.ok(before.some((r) => r.version === '0.2.0' && r.schema_version === level));
  const newer = `${String(level + 1).padStart(4, '0')}_from_the_future.sql`;
  await writeFile(path.join(dir, newer), 'CREATE TABLE future_feature (id int);');
  await migrate(clientConfig(target, 'admin'), { ...options(), version: '9.9.0' });
  assert.deepEqual(
    (await releases())
      .filter((r) => r.version === '9.9.0')
      .map((r) => [r.version, r.schema_version]),
    [['9.9.0', level + 1]],
  );
  await rm(path.join(dir, newer));
  const applied = await history();
  await assert.rejects(
    migrate(clientConfig(target, 'admin'), { ...options(), version: '0.2.0' }),
    (error: Error) => {
      assert.ok(error instanceof MigrationError);
      assert.equal(
        error.message,
        `downgrade refused: this database is at schema level ${level + 1}, written by svc 9.9.0; svc 0.2.0 knows levels up to ${level}. Run svc 9.9.0 or newer, or restore a backup taken before the upgrade (svc db restore)`,
      );
      return true;
    },
  );
  // Refused before anything was written: no history row, no release row touched.
  assert.deepEqual(await history(), applied);
  assert.deepEqual(
    (await releases()).find((r) => r.version === '0.2.0'),
    before.find((r) => r.version === '0.2.0'),
  );
});
