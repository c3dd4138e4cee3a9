import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { clientConfig } from '../../src/db/target.ts';
import { withTenant } from '../../src/db/tenant-context.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant, TENANT_ROW_FIXTURES } from '../support/fixtures.ts';

let db: TestDatabase;
let tenantA: string;
let tenantB: string;
/** One connection only, so "right after a transaction that set a context" is the same session. */
let single: pg.Pool;

before(async () => {
  db = await createTestDatabase();
  tenantA = await createTenant(db.pools.app, 'alpha');
  tenantB = await createTenant(db.pools.app, 'bravo');
  for (const insert of Object.values(TENANT_ROW_FIXTURES)) {
    await db.app.withTenant(tenantA, (tx) => insert(tx, tenantA));
    await db.app.withTenant(tenantB, (tx) => insert(tx, tenantB));
  }
  single = new pg.Pool({ ...clientConfig(db.target, 'app'), max: 1 });
});
after(async () => {
  await single.end();
  await db.drop();
});

const RLS_VIOLATION = /row-level security|permission denied/;

for (const table of Object.keys(TENANT_ROW_FIXTURES)) {
  const insert = TENANT_ROW_FIXTURES[table];
  if (!insert) continue;
  // users keeps install-scoped MSSP rows (tenant_id NULL) visible to every context (§5.7.2).
  const own = (t: string | null) => t === tenantA || (table === 'users' && t === null);

  describe(`§9.5.5 ${table}`, () => {
    test('raw unfiltered SQL as svc_app with tenant A set returns only A rows', async () => {
      const rows = await db.app.withTenant(
        tenantA,
        async (tx) =>
          (await tx.query<{ tenant_id: string | null }>(`SELECT tenant_id FROM ${table}`)).rows,
      );
      assert.ok(
        rows.some((r) => r.tenant_id === tenantA),
        'A sees its own row',
      );
      assert.deepEqual(
        rows.filter((r) => !own(r.tenant_id)),
        [],
      );
    });

    test('§5.7.5 no context returns zero tenant rows, also on a pooled connection after a context transaction', async () => {
      const fresh = await db.pools.app.query(`SELECT 1 FROM ${table} WHERE tenant_id IS NOT NULL`);
      assert.equal(fresh.rowCount, 0);
      await withTenant(single, tenantA, (tx) => tx.query(`SELECT count(*) FROM ${table}`));
      const setting = await single.query<{ v: string | null }>(
        `SELECT current_setting('app.current_tenant_id', true) AS v`,
      );
      assert.equal(setting.rows[0]?.v, '', 'the pooled session reads the reset setting as empty');
      const pooled = await single.query(`SELECT 1 FROM ${table} WHERE tenant_id IS NOT NULL`);
      assert.equal(pooled.rowCount, 0);
    });

    test('INSERT of a tenant B row under tenant A context is rejected and writes nothing', async () => {
      const before = await countAs(table, tenantB);
      await assert.rejects(
        db.app.withTenant(tenantA, (tx) => insert(tx, tenantB)),
        RLS_VIOLATION,
      );
      assert.equal(await countAs(table, tenantB), before);
    });

    test('UPDATE cannot reach B rows under A context, nor move an A row to B', async () => {
      const reached = await db.app
        .withTenant(tenantA, (tx) =>
          tx.query(`UPDATE ${table} SET tenant_id = tenant_id WHERE tenant_id = $1`, [tenantB]),
        )
        .then(
          (r) => r.rowCount,
          (e: Error) => e,
        );
      if (reached instanceof Error) assert.match(reached.message, /permission denied/);
      else assert.equal(reached, 0);
      await assert.rejects(
        db.app.withTenant(tenantA, (tx) =>
          tx.query(`UPDATE ${table} SET tenant_id = $2 WHERE tenant_id = $1`, [tenantA, tenantB]),
        ),
        RLS_VIOLATION,
      );
      assert.ok((await countAs(table, tenantA)) >= 1, 'A rows are still A rows');
    });

    test('DELETE under A context cannot remove B rows', async () => {
      const before = await countAs(table, tenantB);
      await db.app
        .withTenant(tenantA, (tx) =>
          tx.query(`DELETE FROM ${table} WHERE tenant_id = $1`, [tenantB]),
        )
        .catch((e: Error) => assert.match(e.message, /permission denied|violates foreign key/));
      assert.equal(await countAs(table, tenantB), before);
    });
  });
}

/** Counts through the BYPASSRLS role: the ground truth the probes are checked against. */
async function countAs(table: string, tenantId: string): Promise<number> {
  const { rows } = await db.pools.mssp.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`,
    [tenantId],
  );
  return rows[0]?.n ?? -1;
}
