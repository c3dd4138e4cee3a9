import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { prepared } from '../../src/db/prepared.ts';
import type { TenantTx } from '../../src/db/tenant-context.ts';
import {
  appendUncheckedEvent,
  readEventsAfter,
} from '../../src/domains/events/event-repository.ts';
import { readOverview } from '../../src/domains/investigations/investigation-repository.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

/**
 * Named statements (src/db/prepared.ts) keep their plan on a pooled connection across
 * transactions and tenants: the plan PostgreSQL caches for one tenant's context must never
 * answer for another's. The attacker here is tenant B's request arriving on the connection
 * that served tenant A a dozen times.
 */
let db: TestDatabase;
let a: string;
let b: string;

before(async () => {
  db = await createTestDatabase();
  a = await createTenant(db.pools.app);
  b = await createTenant(db.pools.app);
  for (const tenant of [a, b]) {
    await db.app.withTenant(tenant, (tx) =>
      appendUncheckedEvent(tx, {
        tenantId: tenant,
        streamType: 'test',
        streamId: randomUUID(),
        streamSeq: 1,
        type: 'alert.created',
        payload: { tenant },
        actor: 'test',
      }),
    );
  }
});
after(() => db.drop());

/** One transaction in `tenant`'s context on this very connection. */
async function asTenant<T>(
  client: pg.PoolClient,
  tenant: string,
  fn: (tx: TenantTx) => Promise<T>,
): Promise<T> {
  await client.query(`BEGIN; SELECT set_config('app.current_tenant_id', '${tenant}', true)`);
  try {
    return await fn(client as TenantTx);
  } finally {
    await client.query('COMMIT');
  }
}

test('§5.7 a statement planned for tenant A answers tenant B on the same connection with B only', async () => {
  const client = await db.pools.app.connect();
  try {
    const now = new Date();
    for (let i = 0; i < 12; i++) {
      const overview = await asTenant(client, a, (tx) => readOverview(tx, a, now));
      assert.equal(overview?.id, a);
      const events = await asTenant(client, a, (tx) => readEventsAfter(tx, 0n, 100));
      assert.deepEqual(new Set(events.map((e) => e.tenantId)), new Set([a]));
    }
    const { rows: plans } = await client.query<{ name: string; generic_plans: string }>(
      `SELECT name, generic_plans FROM pg_prepared_statements
        WHERE name LIKE 'investigations.overview.%' OR name LIKE 'events.after.%'`,
    );
    assert.equal(plans.length, 2, 'both reads are prepared on the connection');
    assert.ok(
      plans.every((p) => Number(p.generic_plans) > 0),
      `PostgreSQL switched to a cached generic plan: ${JSON.stringify(plans)}`,
    );

    assert.equal(await asTenant(client, b, (tx) => readOverview(tx, a, now)), undefined);
    const seenByB = await asTenant(client, b, (tx) => readEventsAfter(tx, 0n, 100));
    assert.deepEqual(new Set(seenByB.map((e) => e.tenantId)), new Set([b]));
    assert.equal((await asTenant(client, b, (tx) => readOverview(tx, b, now)))?.id, b);
  } finally {
    client.release();
  }
});

test('prepared names: one per text, distinct texts under one label never share a name', () => {
  const first = prepared('label', 'SELECT 1 WHERE $1::int > 0', [1]);
  const again = prepared('label', 'SELECT 1 WHERE $1::int > 0', [2]);
  const other = prepared('label', 'SELECT 2 WHERE $1::int > 0', [1]);
  assert.equal(first.name, again.name);
  assert.notEqual(first.name, other.name);
  assert.match(first.name ?? '', /^label\.[0-9a-f]{12}$/);
  assert.deepEqual(again.values, [2]);
  assert.throws(() => prepared('x'.repeat(60), 'SELECT 3', []), RangeError);
});
