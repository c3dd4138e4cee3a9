import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from '../../src/db/embedded.ts';
import { createAppDatabase } from '../../src/db/pools.ts';
import { type ScratchDatabase, startScratchDatabase } from '../../src/db/scratch.ts';
import { createSystemGate } from '../../src/db/system-gate.ts';
import { DatabaseUnavailableError } from '../../src/faults/unavailable.ts';
import { createTenantLocks } from '../../src/orchestrator/tenant-locks.ts';

/*
 * Issue 10 "Fault tolerance under load", per pool and client: a server-side disconnect
 * (pg_terminate_backend, the same 57P01 admin_shutdown a restart sends) or a refused
 * connection never crashes the process (an unhandled 'error' event would fail this file),
 * and reaches callers as 503 `database_unavailable`. A private server, so terminating every
 * svc_app backend disturbs no other test file.
 */

let scratch: ScratchDatabase;
before(async () => {
  scratch = await startScratchDatabase();
});
after(() => scratch.stop());

async function terminate(user: string, filter = 'true'): Promise<number> {
  const client = new pg.Client({ ...scratch.superuser, database: 'postgres' });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE usename = $1 AND pid <> pg_backend_pid() AND ${filter}`,
      [user],
    );
    return rows[0]?.n ?? 0;
  } finally {
    await client.end();
  }
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await sleep(10);
  }
  assert.fail(`timed out waiting for ${what}`);
}

function assertUnavailable(error: unknown): true {
  // The HTTP edge answers it 503 with Retry-After (test/faults/postgres-restart.test.ts).
  assert.ok(error instanceof DatabaseUnavailableError, String(error));
  assert.equal(error.code, 'database_unavailable');
  return true;
}

test('issue 10: an idle pooled svc_app client killed by the server is replaced, not a crash', async () => {
  const db = createAppDatabase(scratch.target, 2);
  try {
    await db.withoutTenant((tx) => tx.query('SELECT 1'));
    assert.equal(db.pool.idleCount, 1);
    assert.equal(await terminate('svc_app'), 1);
    await until(() => db.pool.totalCount === 0, 'the pool to drop the dead client');
    assert.deepEqual(
      (await db.withoutTenant((tx) => tx.query<{ one: number }>('SELECT 1 AS one'))).rows,
      [{ one: 1 }],
    );
  } finally {
    await db.close();
  }
});

test('issue 10: a transaction whose connection is terminated between statements answers 503 database_unavailable', async () => {
  const db = createAppDatabase(scratch.target, 2);
  try {
    await assert.rejects(
      db.withoutTenant(async (tx) => {
        await tx.query('SELECT 1');
        await terminate('svc_app');
        // The FATAL arrives while no statement runs: an 'error' event on a checked-out client.
        await sleep(200);
        await tx.query('SELECT 1');
      }),
      assertUnavailable,
    );
    assert.equal(await db.ping(), true, 'the pool recovers by itself');
  } finally {
    await db.close();
  }
});

test('issue 10: a statement terminated mid-query (57P01) answers 503 database_unavailable; pool.query does not crash', async () => {
  const db = createAppDatabase(scratch.target, 2);
  try {
    const inTx = db.withTenant('00000000-0000-0000-0000-000000000001', (tx) =>
      tx.query('SELECT pg_sleep(30)'),
    );
    const bare = db.pool.query('SELECT pg_sleep(30)');
    const settled = Promise.allSettled([inTx, bare]);
    await until(() => db.pool.waitingCount === 0 && db.pool.idleCount === 0, 'both queries');
    await sleep(100);
    assert.equal(await terminate('svc_app', `query LIKE '%pg_sleep%'`), 2);
    const [tx, raw] = await settled;
    assert.equal(tx.status, 'rejected');
    assertUnavailable(tx.reason);
    assert.equal(raw.status, 'rejected');
    assert.equal((raw.reason as { code?: string }).code, '57P01');
    assert.equal(await db.ping(), true);
  } finally {
    await db.close();
  }
});

test('issue 10: a refused connection answers 503 database_unavailable on the app pool and the system gate; ping says false', async () => {
  const nowhere = { ...scratch.target, port: await freePort() };
  const db = createAppDatabase(nowhere, 1);
  const system = createSystemGate(nowhere, 1);
  try {
    await assert.rejects(
      db.withScope(null, (tx) => tx.query('SELECT 1')),
      assertUnavailable,
    );
    await assert.rejects(
      system.withSystem('fault.test', (tx) => tx.query('SELECT 1')),
      assertUnavailable,
    );
    assert.equal(await db.ping(), false);
  } finally {
    await Promise.all([db.close(), system.close()]);
  }
});

test('issue 33: an exhausted app pool answers 503 database_unavailable after its wait bound instead of queueing without end; the held unit is unharmed', async () => {
  const db = createAppDatabase(scratch.target, 1, { waitMs: 200 });
  let release = () => {};
  const hold = new Promise<void>((resolve) => {
    release = resolve;
  });
  try {
    let entered = () => {};
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const held = db.withScope(null, async (tx) => {
      await tx.query('SELECT 1');
      entered();
      await hold;
      return (await tx.query<{ n: number }>('SELECT 2 AS n')).rows[0]?.n;
    });
    await inside;
    await assert.rejects(
      db.withScope(null, (tx) => tx.query('SELECT 1')),
      assertUnavailable,
    );
    assert.equal(db.pool.waitingCount, 0, 'the refused unit left the queue');
    release();
    assert.equal(await held, 2);
    // The pool serves again once its connection is back.
    assert.equal((await db.withScope(null, (tx) => tx.query('SELECT 1'))).rowCount, 1);
  } finally {
    release();
    await db.close();
  }
});

test('issue 10: a tenant lock whose session connection is terminated while held does not crash; releasing it is harmless', async () => {
  const locks = createTenantLocks(scratch.target);
  try {
    const release = await locks.tryAcquire('00000000-0000-0000-0000-0000000000aa');
    assert.ok(release);
    assert.equal(await terminate('svc_app'), 1);
    // The FATAL reaches a checked-out client with no statement running.
    await sleep(300);
    await release();
    const again = await locks.tryAcquire('00000000-0000-0000-0000-0000000000aa');
    assert.ok(again, 'the lock went with the connection; it can be taken again');
    await again();
  } finally {
    await locks.close();
  }
});
