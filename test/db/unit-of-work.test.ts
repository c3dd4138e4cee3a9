import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { AppTx } from '../../src/db/tenant-context.ts';
import { afterCommit } from '../../src/db/unit-of-work.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

/**
 * The unit of work (src/db/unit-of-work.ts): one connection and one transaction per request,
 * with the semantics of separate transactions, and never a tenant context that outlives the
 * scope it was set for.
 */
let db: TestDatabase;
let a: string;
let b: string;

before(async () => {
  db = await createTestDatabase();
  a = await createTenant(db.pools.app);
  b = await createTenant(db.pools.app);
});
after(() => db.drop());

async function addInvestigation(tx: AppTx, tenantId: string, title: string): Promise<void> {
  await tx.query(`INSERT INTO investigations (tenant_id, title, severity) VALUES ($1, $2, 'low')`, [
    tenantId,
    title,
  ]);
}

async function titles(tenantId: string): Promise<string[]> {
  const { rows } = await db.pools.mssp.query<{ title: string }>(
    'SELECT title FROM investigations WHERE tenant_id = $1 ORDER BY title',
    [tenantId],
  );
  return rows.map((r) => r.title);
}

async function transactionOf(tx: pg.PoolClient) {
  const { rows } = await tx.query<{ pid: number; xid: string; tenant: string | null }>(
    `SELECT pg_backend_pid() AS pid, txid_current()::text AS xid,
            current_setting('app.current_tenant_id', true) AS tenant`,
  );
  const row = rows[0];
  if (!row) throw new Error('no row');
  return row;
}

test('§5.7.5 issue 11: the scopes of one unit share one connection and one transaction', async () => {
  const seen = await db.app.unitOfWork(async () => [
    await db.app.withoutTenant(transactionOf),
    await db.app.withTenant(a, transactionOf),
    await db.app.withTenant(b, transactionOf),
  ]);
  assert.equal(new Set(seen.map((s) => s.pid)).size, 1);
  assert.equal(new Set(seen.map((s) => s.xid)).size, 1);
  assert.deepEqual(
    seen.map((s) => s.tenant ?? ''),
    ['', a, b],
  );
});

test('§5.7.5 issue 11: a scope on tenant B after tenant A in one unit sees B only, a scope without tenant sees none', async () => {
  await db.app.withTenant(a, (tx) => addInvestigation(tx, a, 'a-visible'));
  await db.app.withTenant(b, (tx) => addInvestigation(tx, b, 'b-visible'));
  const count = (tx: AppTx) =>
    tx
      .query<{ n: number; mine: number }>(
        `SELECT count(*)::int AS n,
                count(*) FILTER (WHERE tenant_id::text = current_setting('app.current_tenant_id', true))::int AS mine
           FROM investigations`,
      )
      .then((r) => r.rows[0]);
  const [inA, inB, none, againA] = await db.app.unitOfWork(async () => [
    await db.app.withTenant(a, count),
    await db.app.withTenant(b, count),
    await db.app.withoutTenant(count),
    await db.app.withTenant(a, count),
  ]);
  assert.ok(inA && inA.n > 0 && inA.n === inA.mine, 'A sees only its rows');
  assert.ok(inB && inB.n > 0 && inB.n === inB.mine, 'B sees only its rows');
  assert.equal(none?.n, 0, 'no tenant context, no tenant rows');
  assert.deepEqual(againA, inA);
});

test('§5.7.5 issue 11: a scope that throws is undone; what earlier scopes did commits, also when the unit then fails', async () => {
  const failure = new Error('the handler refuses');
  await assert.rejects(
    db.app.unitOfWork(async () => {
      await db.app.withTenant(a, (tx) => addInvestigation(tx, a, 'kept-1'));
      await assert.rejects(
        db.app.withTenant(a, async (tx) => {
          await addInvestigation(tx, a, 'undone');
          throw new Error('scope fails');
        }),
        /scope fails/,
      );
      // The transaction is still usable after the undone scope.
      await db.app.withTenant(b, (tx) => addInvestigation(tx, b, 'kept-2'));
      throw failure;
    }),
    (error) => error === failure,
  );
  assert.ok((await titles(a)).includes('kept-1'));
  assert.ok(!(await titles(a)).includes('undone'));
  assert.ok((await titles(b)).includes('kept-2'));
});

test('§5.7.5 issue 11: a failed SQL statement in the first scope rolls back only that scope', async () => {
  const result = await db.app.unitOfWork(async () => {
    await assert.rejects(
      db.app.withTenant(a, async (tx) => {
        await addInvestigation(tx, a, 'first-undone');
        await tx.query('SELECT 1 / 0');
      }),
      /division by zero/,
    );
    return db.app.withTenant(a, async (tx) => {
      await addInvestigation(tx, a, 'after-failure');
      return transactionOf(tx);
    });
  });
  assert.equal(result.tenant, a);
  const all = await titles(a);
  assert.ok(all.includes('after-failure'));
  assert.ok(!all.includes('first-undone'));
});

test('§5.7.5 issue 11: a scope opened inside another runs in a transaction of its own, and the outer keeps its tenant', async () => {
  const { outer, inner, outerAfter } = await db.app.unitOfWork(() =>
    db.app.withTenant(a, async (tx) => {
      const outer = await transactionOf(tx);
      const inner = await db.app.withTenant(b, transactionOf);
      return { outer, inner, outerAfter: await transactionOf(tx) };
    }),
  );
  assert.notEqual(inner.xid, outer.xid);
  assert.equal(inner.tenant, b);
  assert.equal(outerAfter.tenant, a, 'the nested scope did not move the outer context');
});

test('§5.7.5 issue 11: concurrent scopes of one unit take turns; each sees its own tenant', async () => {
  const seen = await db.app.unitOfWork(() =>
    Promise.all(
      [a, b, a, b].map((tenant) =>
        db.app.withTenant(tenant, async (tx) => {
          const first = await transactionOf(tx);
          await sleep(20);
          const second = await transactionOf(tx);
          return { tenant, first: first.tenant, second: second.tenant };
        }),
      ),
    ),
  );
  for (const s of seen) assert.deepEqual([s.first, s.second], [s.tenant, s.tenant]);
});

test('§5.7.5 issue 11: afterCommit runs once the unit committed; work it starts never joins a unit', async () => {
  let seenByHook: string[] | undefined;
  let hookXid: string | undefined;
  let unitXid: string | undefined;
  const done = new Promise<void>((resolve) => {
    void db.app.unitOfWork(async () => {
      await db.app.withTenant(a, async (tx) => {
        unitXid = (await transactionOf(tx)).xid;
        await addInvestigation(tx, a, 'seen-after-commit');
      });
      afterCommit(() => {
        void (async () => {
          seenByHook = await titles(a);
          hookXid = (await db.app.withTenant(a, transactionOf)).xid;
          resolve();
        })();
      });
      assert.equal(seenByHook, undefined, 'not before the unit ends');
    });
  });
  await done;
  assert.ok(seenByHook?.includes('seen-after-commit'));
  assert.notEqual(hookXid, unitXid);
});

test('§5.7.5 issue 11: a scope started from a unit after it ended (a timer, a stream) runs on its own', async () => {
  let later: Promise<{ xid: string; tenant: string | null }> | undefined;
  const unitXid = await db.app.unitOfWork(async () => {
    const xid = (await db.app.withTenant(a, transactionOf)).xid;
    later = sleep(30).then(() => db.app.withTenant(b, transactionOf));
    return xid;
  });
  const result = await later;
  assert.ok(result);
  assert.notEqual(result.xid, unitXid);
  assert.equal(result.tenant, b);
});

test('§5.7.5 issue 11: a scope a handler started without awaiting, queued as the unit ends, keeps its tenant and its work', async () => {
  for (let depth = 0; depth < 6; depth++) {
    let late: Promise<string | null> | undefined;
    const title = `late-${depth}`;
    await db.app.unitOfWork(async () => {
      await db.app.withTenant(a, transactionOf);
      // Started from a chain of microtasks, so it queues while the unit is finishing: it must
      // either join before the commit or run on its own, never on the released connection.
      let step: Promise<void> = Promise.resolve();
      for (let i = 0; i < depth; i++) step = step.then(() => undefined);
      late = step.then(() =>
        db.app.withTenant(b, async (tx) => {
          await addInvestigation(tx, b, title);
          return (await transactionOf(tx)).tenant;
        }),
      );
    });
    assert.equal(await late, b, `depth ${depth}: the late scope has its tenant`);
    assert.ok((await titles(b)).includes(title), `depth ${depth}: its work is committed`);
  }
});

test('§5.7.5 issue 11: the context is a checked uuid before it is written into SQL', async () => {
  await assert.rejects(
    db.app.unitOfWork(() => db.app.withTenant("x'; SET ROLE svc_admin; --", async () => 1)),
    /tenant id must be a uuid/,
  );
});
