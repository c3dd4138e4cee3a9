import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

let db: TestDatabase;
before(async () => {
  db = await createTestDatabase();
});
after(() => db.drop());

test('§5.7.5 withTenant sets the context for its transaction only', async () => {
  const a = await createTenant(db.pools.app);
  const inside = await db.app.withTenant(a, async (tx) => {
    const { rows } = await tx.query<{ v: string }>(
      `SELECT current_setting('app.current_tenant_id') AS v`,
    );
    return rows[0]?.v;
  });
  assert.equal(inside, a);
  const { rows } = await db.pools.app.query<{ v: string | null }>(
    `SELECT current_setting('app.current_tenant_id', true) AS v`,
  );
  assert.ok(rows[0]?.v === null || rows[0]?.v === '');
});

test('§5.7.5 withTenant refuses a tenant id that is not a uuid before touching the database', async () => {
  for (const bad of ['', 'alpha', "' OR true --", '00000000-0000-0000-0000-00000000000g']) {
    await assert.rejects(
      db.app.withTenant(bad, async () => 1),
      /tenant id must be a uuid/,
    );
  }
});

test('§5.7.5 a failing body rolls back everything it wrote', async () => {
  const a = await createTenant(db.pools.app);
  await assert.rejects(
    db.app.withTenant(a, async (tx) => {
      await tx.query(
        `INSERT INTO investigations (tenant_id, title, severity) VALUES ($1, 'x', 'low')`,
        [a],
      );
      throw new Error('boom');
    }),
    /boom/,
  );
  const { rowCount } = await db.pools.mssp.query(
    'SELECT 1 FROM investigations WHERE tenant_id = $1',
    [a],
  );
  assert.equal(rowCount, 0);
});

test('DESIGN: the tenant context is never set session-wide anywhere in src/', async () => {
  const src = fileURLToPath(new URL('../../src/', import.meta.url));
  const entries = await readdir(src, { withFileTypes: true, recursive: true });
  const offenders: string[] = [];
  for (const e of entries.filter((x) => x.isFile() && x.name.endsWith('.ts'))) {
    const text = await readFile(path.join(e.parentPath, e.name), 'utf8');
    const sessionSet =
      /\bSET\s+(SESSION\s+)?app\.current_tenant_id/i.test(text) ||
      /set_config\(\s*'app\.current_tenant_id'\s*,[^)]*,\s*false\s*\)/i.test(text);
    if (sessionSet) offenders.push(e.name);
  }
  assert.deepEqual(offenders, []);
});

test('a connection killed mid-transaction fails that call only; the process and the pool carry on', async () => {
  const a = await createTenant(db.pools.app);
  const attempt = db.app.withTenant(a, async (tx) => {
    const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const admin = new pg.Client(db.superuser);
    await admin.connect();
    const killed = await admin.query('SELECT pg_terminate_backend($1) AS ok', [rows[0]?.pid]);
    await admin.end();
    assert.deepEqual(killed.rows, [{ ok: true }]);
    await tx.query('SELECT 1');
  });
  // The lost connection is the caller's 503 (docs/faults.md), not a raw driver error.
  await assert.rejects(attempt, { name: 'DatabaseUnavailableError', code: 'database_unavailable' });
  const { rows } = await db.app.withTenant(a, (tx) => tx.query<{ ok: number }>('SELECT 1 AS ok'));
  assert.deepEqual(rows, [{ ok: 1 }]);
});
