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

test('a missing, already-applied migration is refused', async () => {
  const last = (await readMigrations(dir)).at(-1);
  assert.ok(last);
  await rm(path.join(dir, last.name));
  await assert.rejects(
    migrate(clientConfig(target, 'admin'), options()),
    /was applied to this database but is missing/,
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
