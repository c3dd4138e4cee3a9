import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { readEachTenant } from '../../src/db/tenant-batch.ts';
import { readEventsAfter, type StoredEvent } from '../../src/domains/events/event-repository.ts';
import { DatabaseUnavailableError } from '../../src/faults/unavailable.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import {
  appendSeparately,
  asSuperuser,
  collect,
  startHub,
  type TestHub,
  waitFor,
} from './support.ts';

/**
 * Issue 33: the hub reads every tenant with news in one transaction and one round trip
 * (src/db/tenant-batch.ts readEachTenant), each tenant under its own RLS context, on a small
 * read pool of its own whose waiters are bounded. Tested from the attacker's side: a tenant
 * read right after (or right before) another in the same batch must see only its own rows.
 */

let db: TestDatabase;
const hubs: TestHub[] = [];
let attacker: string;
let victims: string[];
const written = new Map<string, StoredEvent[]>();

before(async () => {
  db = await createTestDatabase();
  attacker = await createTenant(db.pools.app);
  victims = [await createTenant(db.pools.app), await createTenant(db.pools.app)];
  for (const tenant of [attacker, ...victims])
    written.set(tenant, await appendSeparately(db.app, tenant, 3));
});
after(async () => {
  await Promise.all(hubs.map((h) => h.close()));
  await db.drop();
});

const idsOf = (events: readonly StoredEvent[]) => events.map((e) => e.id);

/** The app pool's settings with the pipeline on or off (off: as behind PgBouncer). */
function poolWith(pipeline: boolean): pg.Pool {
  const { options } = db.app.pool;
  return new pg.Pool({ ...options, password: options.password, pipeline, max: 1 });
}

for (const pipeline of [true, false]) {
  test(`§5.7.8 issue 33 a batched read (${pipeline ? 'pipelined' : 'one by one'}) gives each tenant its own rows only, whichever tenant's context came before`, async () => {
    const pool = poolWith(pipeline);
    try {
      const [a, b] = victims as [string, string];
      const order = [a, attacker, b, attacker, a];
      const pages = await readEachTenant(pool, order, (tx) => readEventsAfter(tx, 0n, 100));
      order.forEach((tenant, i) => {
        assert.deepEqual(idsOf(pages[i] ?? []), idsOf(written.get(tenant) ?? []), `read ${i}`);
        assert.ok(pages[i]?.every((e) => e.tenantId === tenant));
      });
      // One transaction: every read saw the same transaction start.
      const starts = await readEachTenant(pool, order, async (tx) => {
        const { rows } = await tx.query<{ at: string }>('SELECT now()::text AS at');
        return rows[0]?.at;
      });
      assert.equal(new Set(starts).size, 1);
      // A tenant that does not exist (or an id from another tenant's range) reads nothing.
      const [none] = await readEachTenant(pool, ['00000000-0000-4000-8000-000000000000'], (tx) =>
        readEventsAfter(tx, 0n, 100),
      );
      assert.deepEqual(none, []);
    } finally {
      await pool.end();
    }
  });
}

test('§5.7.8 issue 33 a pipelined batch refuses a read that sends its statement late (it would run under the next tenant’s context) and hands out nothing', async () => {
  const pool = poolWith(true);
  try {
    const [a] = victims as [string];
    let leaked: StoredEvent[] | undefined;
    await assert.rejects(
      readEachTenant(pool, [attacker, a], async (tx, tenantId) => {
        if (tenantId !== attacker) return readEventsAfter(tx, 0n, 100);
        // The attacker's read waits a moment: by then the victim's set_config is on the wire.
        await Promise.resolve();
        leaked = await readEventsAfter(tx, 0n, 100);
        return leaked;
      }),
      /must send its statements when it is called/,
    );
    assert.equal(leaked, undefined);
    // The connection is clean afterwards: no tenant context, no open transaction.
    const { rows } = await pool.query<{ ctx: string | null }>(
      "SELECT current_setting('app.current_tenant_id', true) AS ctx",
    );
    assert.ok(!rows[0]?.ctx);
    assert.deepEqual(
      (await readEachTenant(pool, [a], (tx) => readEventsAfter(tx, 0n, 100)))[0]?.map((e) => e.id),
      idsOf(written.get(a) ?? []),
    );
  } finally {
    await pool.end();
  }
});

test('§5.7.8 issue 33 tenants with news in one commit are read in fewer reads than tenants; each subscriber gets its own tenant’s event only', async () => {
  const h = await startHub(db);
  hubs.push(h);
  const tenants = [attacker, ...victims];
  for (let i = 0; i < 9; i++) tenants.push(await createTenant(db.pools.app));
  const collectors = await Promise.all(
    tenants.map(async (tenant) => ({ tenant, c: collect(await h.hub.subscribe(tenant)) })),
  );
  const before = h.hub.status();
  // One transaction writes every tenant (the superuser bypasses RLS): one notice per tenant,
  // all delivered together at its commit.
  const rows = await asSuperuser(db, async (client) => {
    const { rows } = await client.query<{ id: string; tenant_id: string }>(
      `INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, occurred_at)
       SELECT t, 'investigation', gen_random_uuid(), 1, 'investigation.updated',
              jsonb_build_object('tenant', t), now()
         FROM unnest($1::uuid[]) AS t
       RETURNING id, tenant_id`,
      [tenants],
    );
    return rows;
  });
  await Promise.all(collectors.map(({ c }) => c.until(1)));
  for (const { tenant, c } of collectors) {
    assert.deepEqual(
      c.ids(),
      rows.filter((r) => r.tenant_id === tenant).map((r) => r.id),
      `tenant ${tenant}`,
    );
    assert.ok(c.events.every((e) => e.tenantId === tenant));
  }
  const status = h.hub.status();
  const reads = status.batches - before.batches;
  assert.equal(status.batchedTenants - before.batchedTenants, tenants.length);
  assert.ok(reads < tenants.length, `${tenants.length} tenants in ${reads} reads`);
});

test('§5.7.8 issue 33 an exhausted hub read pool refuses new streams at once or after readWaitMs with database_unavailable; open streams lose nothing', async () => {
  const h = await startHub(db, { readConnections: 1, readWaitMs: 300, readQueue: 1 });
  hubs.push(h);
  const [a, b] = victims as [string, string];
  const c = await createTenant(db.pools.app);
  const onA = collect(await h.hub.subscribe(a));
  // A lock no read can pass holds the hub's only read connection: B's positioning blocks on it.
  const locker = new pg.Client(db.superuser);
  await locker.connect();
  try {
    await locker.query('BEGIN; LOCK TABLE events IN ACCESS EXCLUSIVE MODE');
    const forB = h.hub.subscribe(b);
    forB.catch(() => undefined);
    await waitFor('B positioning blocked on the lock', () =>
      asSuperuser(db, async (client) => {
        const { rows } = await client.query(
          `SELECT 1 FROM pg_stat_activity WHERE application_name = 'svc-app-events-reads'
              AND datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return rows.length === 1;
      }),
    );
    // The next viewer waits for the connection, up to readWaitMs, then gets the defined answer.
    let waited = false;
    const waiting = h.hub.subscribe(attacker).finally(() => {
      waited = true;
    });
    waiting.catch(() => undefined);
    // Meanwhile the queue (1) is full: one more is refused without waiting at all.
    const refused = await h.hub.subscribe(c).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(refused instanceof DatabaseUnavailableError, String(refused));
    assert.equal(waited, false, 'refused while the first one was still waiting');
    const timedOut = await waiting.then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(timedOut instanceof DatabaseUnavailableError, String(timedOut));
    assert.equal(timedOut.code, 'database_unavailable');
    await locker.query('COMMIT');
    const onB = collect(await forB);
    const [ofA] = await appendSeparately(db.app, a, 1);
    const [ofB] = await appendSeparately(db.app, b, 1);
    await onA.until(1);
    await onB.until(1);
    assert.deepEqual(onA.ids(), [ofA?.id]);
    assert.deepEqual(onB.ids(), [ofB?.id]);
    assert.equal(h.hub.status().subscribers, 2, 'the refused viewers hold no subscription');
  } finally {
    await locker.end();
  }
});
