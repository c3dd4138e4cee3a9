import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type AppDatabase, createAppDatabase } from '../../src/db/pools.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

/**
 * The unit of work's guard and pipelining (src/db/unit-of-work.ts, issue 11): a statement that
 * travels in front of the unit's first statement and must pass before any result is handed out,
 * and a COMMIT written ahead of the connection's next holder.
 */
let db: TestDatabase;
let a: string;
let b: string;

before(async () => {
  db = await createTestDatabase();
  a = await createTenant(db.pools.app);
  b = await createTenant(db.pools.app);
  await db.app.withTenant(a, (tx) =>
    tx.query(`INSERT INTO investigations (tenant_id, title, severity) VALUES ($1, 'of a', 'low')`, [
      a,
    ]),
  );
});
after(() => db.drop());

class Refused extends Error {}

/** Sets tenant `id`'s context the way the session check does, and passes. */
const passing = (id: string) => `SELECT set_config('app.current_tenant_id', '${id}', true)`;
const failing = `DO $$ BEGIN RAISE EXCEPTION 'no' USING ERRCODE = 'SV401'; END $$`;

function refusal(seen: unknown[]) {
  return (error: unknown) => {
    seen.push(error);
    return new Refused('refused');
  };
}

const titles = (database: AppDatabase, tenantId: string) =>
  database.withTenant(tenantId, async (tx) => {
    const { rows } = await tx.query<{ title: string }>('SELECT title FROM investigations');
    return rows.map((r) => r.title);
  });

test('issue 11 a passing guard leaves its tenant context: the first statement travels with it and reads that tenant only', async () => {
  const read = await db.app.unitOfWork(async () => {
    assert.equal(db.app.guard(passing(a), a, refusal([]), true), true);
    return titles(db.app, a);
  });
  assert.deepEqual(read, ['of a']);
});

test('issue 11 a failing guard fails the unit with its refusal; the statement behind it hands out nothing', async () => {
  const seen: unknown[] = [];
  let handedOut: string[] | undefined;
  await assert.rejects(
    db.app.unitOfWork(async () => {
      db.app.guard(failing, a, refusal(seen), true);
      handedOut = await titles(db.app, a);
    }),
    Refused,
  );
  assert.equal(handedOut, undefined, 'the read never returned');
  assert.equal((seen[0] as { code?: string }).code, 'SV401');
});

test('issue 11 a failed guard wins over a handler that swallowed the error', async () => {
  await assert.rejects(
    db.app.unitOfWork(async () => {
      db.app.guard(failing, a, refusal([]), true);
      return titles(db.app, a).catch(() => ['fallback']);
    }),
    Refused,
  );
});

test('issue 11 a unit that runs no statement still runs its guard before it returns', async () => {
  await assert.rejects(
    db.app.unitOfWork(async () => {
      db.app.guard(failing, null, refusal([]), true);
      return 'answered from memory';
    }),
    Refused,
  );
  const fine = await db.app.unitOfWork(async () => {
    db.app.guard(passing(a), a, refusal([]), true);
    return 'answered from memory';
  });
  assert.equal(fine, 'answered from memory');
});

test('issue 11 after a read-only guard the transaction refuses writes', async () => {
  await assert.rejects(
    db.app.unitOfWork(async () => {
      db.app.guard(passing(b), b, refusal([]), true);
      await db.app.withTenant(b, (tx) =>
        tx.query(
          `INSERT INTO investigations (tenant_id, title, severity) VALUES ($1, 'x', 'low')`,
          [b],
        ),
      );
    }),
    (error: { code?: string }) => error.code === '25006',
  );
  assert.deepEqual(await titles(db.app, b), []);
});

test('issue 11 a guard is refused outside a unit, and once the unit has begun', async () => {
  assert.equal(db.app.guard(passing(a), a, refusal([])), false);
  await db.app.unitOfWork(async () => {
    await titles(db.app, a);
    assert.equal(db.app.guard(passing(a), a, refusal([])), false);
  });
});

test('issue 11 work on another pool waits for the guard: nothing acts for an unconfirmed session', async () => {
  const other = createAppDatabase(db.target, 1);
  try {
    let ranOnOther = false;
    await assert.rejects(
      db.app.unitOfWork(async () => {
        db.app.guard(failing, a, refusal([]), true);
        // A scope on another pool runs in a transaction of its own (the system gate's case).
        await other.withTenant(a, async () => {
          ranOnOther = true;
        });
      }),
      Refused,
    );
    assert.equal(ranOnOther, false);
  } finally {
    await other.close();
  }
});

test('issue 11 a COMMIT written ahead of the next holder: on one connection, the next unit sees no tenant context and what the last one wrote', async () => {
  const single = createAppDatabase(db.target, 1);
  try {
    const first = single.unitOfWork(() =>
      single.withTenant(a, async (tx) => {
        await tx.query(
          `INSERT INTO investigations (tenant_id, title, severity) VALUES ($1, 'ahead', 'low')`,
          [a],
        );
      }),
    );
    const second = single.unitOfWork(() =>
      single.withoutTenant(async (tx) => {
        const { rows } = await tx.query<{ context: string | null; visible: number }>(
          `SELECT current_setting('app.current_tenant_id', true) AS context,
                  (SELECT count(*)::int FROM investigations) AS visible`,
        );
        return rows[0];
      }),
    );
    const [, seen] = await Promise.all([first, second]);
    assert.equal(seen?.context ?? '', '', 'the tenant context ended with the COMMIT');
    assert.equal(seen?.visible, 0, 'no tenant rows without a context');
    assert.ok((await titles(single, a)).includes('ahead'), 'the first unit committed');
  } finally {
    await single.close();
  }
});
