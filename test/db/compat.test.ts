import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { canUpgrade, parseCompatList, renderCompatSql } from '../../src/db/compat.ts';
import { buildCompatSql } from '../../src/db/compat-build.ts';
import { COMPAT_SQL } from '../../src/db/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;
before(async () => {
  db = await createTestDatabase();
});
after(() => db.drop());

const MATRIX = `
- system: 1.4.0
  tenant:
    - version: 1.2.0
      status: supported
    - version: 1.1.0
      status: deprecated
      notes: "It's old"
    - version: 1.0.3
      status: blocked
      notes: Breaks rolling upgrades.
- system: 1.5.0
  tenant:
    - version: 1.2.0
      status: supported
`;

test('§9.5.4 canUpgrade answers supported, deprecated, blocked and out-of-range', async () => {
  await db.pools.mssp.query(renderCompatSql(parseCompatList(MATRIX)));
  const cases: [string, string, string][] = [
    ['1.4.0', '1.2.0', 'supported'],
    ['1.4.0', '1.1.0', 'deprecated'],
    ['1.4.0', '1.0.3', 'blocked'],
    ['1.5.0', '1.1.0', 'out-of-range'],
    ['9.9.9', '1.2.0', 'out-of-range'],
  ];
  for (const [system, tenant, expected] of cases) {
    assert.equal(await canUpgrade(db.pools.app, system, tenant), expected, `${system} / ${tenant}`);
  }
  const notes = await db.pools.app.query<{ notes: string }>(
    `SELECT notes FROM chart_compatibility WHERE tenant_chart_version = '1.1.0'`,
  );
  assert.equal(notes.rows[0]?.notes, "It's old");
});

test('§2.10 a pair removed from the list disappears from the table', async () => {
  await db.pools.mssp.query(renderCompatSql(parseCompatList(MATRIX)));
  const smaller = MATRIX.replace(/ {4}- version: 1\.0\.3\n.*\n.*\n/, '');
  await db.pools.mssp.query(renderCompatSql(parseCompatList(smaller)));
  assert.equal(await canUpgrade(db.pools.app, '1.4.0', '1.0.3'), 'out-of-range');
  assert.equal(await canUpgrade(db.pools.app, '1.4.0', '1.2.0'), 'supported');
});

test('§2.10 the list is validated: bad status, bad version and duplicate pairs are errors', () => {
  assert.throws(
    () =>
      parseCompatList('- system: 1.0.0\n  tenant:\n    - version: 1.0.0\n      status: maybe\n'),
    /tenant\/0\/status/,
  );
  assert.throws(
    () =>
      parseCompatList('- system: v1\n  tenant:\n    - version: 1.0.0\n      status: supported\n'),
    /\/0\/system/,
  );
  assert.throws(
    () =>
      parseCompatList(
        `${MATRIX}- system: 1.4.0\n  tenant:\n    - version: 1.2.0\n      status: blocked\n`,
      ),
    /duplicate pair 1\.4\.0 \/ 1\.2\.0/,
  );
});

test('§2.10 the generated SQL matches the list in the repository (run `npm run db:compat`)', async () => {
  assert.equal(await readFile(COMPAT_SQL, 'utf8'), await buildCompatSql());
});

test('§2.10 svc_app can read the matrix but not change it', async () => {
  await assert.rejects(db.pools.app.query('DELETE FROM chart_compatibility'), /permission denied/);
  await assert.rejects(
    db.pools.app.query(
      `INSERT INTO chart_compatibility VALUES ('1.0.0', '1.0.0', 'supported', null)`,
    ),
    /permission denied/,
  );
});
