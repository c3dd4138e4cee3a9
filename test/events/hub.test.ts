import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { readEventsAfter, type StoredEvent } from '../../src/domains/events/event-repository.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import {
  appendSeparately,
  appendTogether,
  asSuperuser,
  collect,
  listenerPids,
  startHub,
  type TestHub,
  waitFor,
} from './support.ts';

let db: TestDatabase;
const hubs: TestHub[] = [];
before(async () => {
  db = await createTestDatabase();
});
after(async () => {
  await Promise.all(hubs.map((h) => h.close()));
  await db.drop();
});

async function hub(options: Parameters<typeof startHub>[1] = {}): Promise<TestHub> {
  const started = await startHub(db, options);
  hubs.push(started);
  return started;
}

const ids = (events: readonly StoredEvent[]) => events.map((e) => e.id);

test('§5.7.8 two API processes: a mutation in tenant B delivers nothing to A on either hub; A gets its events in order on both', async () => {
  const [one, two] = [await hub(), await hub()];
  const a = await createTenant(db.pools.app);
  const b = await createTenant(db.pools.app);
  const a1 = collect(await one.hub.subscribe(a));
  const a2 = collect(await two.hub.subscribe(a));
  const b1 = collect(await one.hub.subscribe(b));
  const b2 = collect(await two.hub.subscribe(b));
  const written = { a: [] as StoredEvent[], b: [] as StoredEvent[] };
  for (let i = 0; i < 5; i++) {
    written.b.push(...(await appendSeparately(db.app, b, 2)));
    written.a.push(...(await appendSeparately(db.app, a, 1)));
  }
  written.b.push(...(await appendTogether(db.app, b, 10)));
  written.a.push(...(await appendTogether(db.app, a, 3)));
  await Promise.all([a1, a2].map((c) => c.until(written.a.length)));
  await Promise.all([b1, b2].map((c) => c.until(written.b.length)));
  for (const collector of [a1, a2]) {
    assert.deepEqual(collector.ids(), ids(written.a));
    assert.ok(collector.events.every((e) => e.tenantId === a));
  }
  for (const collector of [b1, b2]) {
    assert.deepEqual(collector.ids(), ids(written.b));
    assert.ok(collector.events.every((e) => e.tenantId === b));
  }
  // A is still clean after B's reads all finished (every B event is in B's collectors).
  const [sentinel] = await appendSeparately(db.app, a, 1);
  await Promise.all([a1, a2].map((c) => c.until(written.a.length + 1)));
  for (const collector of [a1, a2])
    assert.deepEqual(collector.ids(), [...ids(written.a), sentinel?.id]);
});

test('§5.7.8 a forged NOTIFY cannot make A receive B rows or anything else', async () => {
  const { hub: h, name } = await hub();
  const a = await createTenant(db.pools.app);
  const b = await createTenant(db.pools.app);
  const stranger = randomUUID();
  const onA = collect(await h.subscribe(a));
  const onB = collect(await h.subscribe(b));
  const [ofA] = await appendSeparately(db.app, a, 1);
  const [ofB] = await appendSeparately(db.app, b, 1, 'secret.created');
  await onA.until(1);
  await onB.until(1);
  assert.ok(ofA && ofB);
  const forged = [
    { tenant_id: a, id: ofB.id },
    { tenant_id: b, id: ofA.id },
    { tenant_id: a.toUpperCase(), id: ofB.id },
    { tenant_id: a, id: '9223372036854775807' },
    { tenant_id: a, id: ofB.id, type: 'evil', payload: { forged: true }, tenant: b },
    { tenant_id: stranger, id: '1' },
    { tenant_id: a, id: -1 },
    { tenant_id: a, id: '1e3' },
    { tenant_id: `${a}' OR true --`, id: '1' },
    { id: ofB.id },
    [a, ofB.id],
  ].map((body) => JSON.stringify(body));
  forged.push(
    '',
    'not json',
    'null',
    `${a}:${ofB.id}`,
    `{"tenant_id":"${a}","id":"${'9'.repeat(7000)}"}`,
  );
  // From svc_app, the role the API itself uses, and from the superuser: any session may NOTIFY.
  for (const payload of forged) {
    await db.pools.app.query(`SELECT pg_notify('svc_events', $1)`, [payload]);
    await asSuperuser(db, (c) => c.query(`SELECT pg_notify('svc_events', $1)`, [payload]));
  }
  // Notices reach a listener in order, so these real appends arrive after every forged one.
  const [lastB] = await appendSeparately(db.app, b, 1);
  const [lastA] = await appendSeparately(db.app, a, 1);
  await onB.until(2);
  await onA.until(2);
  assert.deepEqual(onA.ids(), [ofA.id, lastA?.id]);
  assert.deepEqual(onB.ids(), [ofB.id, lastB?.id]);
  assert.ok(onA.events.every((e) => e.tenantId === a && e.type !== 'evil'));
  const { barriers, offered, batches, batchedTenants, ...status } = h.status();
  assert.deepEqual(status, { listening: true, tenants: 2, subscribers: 2, reconnects: 0 });
  // Each real append reached its one subscriber once; the forged notices offered nothing.
  assert.equal(offered, 4);
  assert.ok(barriers >= 1);
  assert.ok(batches >= 1 && batchedTenants >= batches);
  assert.equal((await listenerPids(db, name)).length, 1);
});

test('§5.7.8 resume with lastEventId replays, then goes live, with no gap and no duplicate across a burst during replay', async () => {
  const { hub: h } = await hub({ pageSize: 5, maxQueue: 100 });
  const a = await createTenant(db.pools.app);
  const b = await createTenant(db.pools.app);
  const history = await appendSeparately(db.app, a, 30);
  await appendSeparately(db.app, b, 5);
  const resumeFrom = history[9];
  assert.ok(resumeFrom);
  const live = collect(await h.subscribe(a));
  const resumed = await h.subscribe(a, { lastEventId: resumeFrom.id });
  const first = await resumed.next();
  assert.equal(first.value?.kind === 'event' && first.value.event.id, history[10]?.id);
  // The burst lands while the resumed subscriber is still paging through history: concurrent
  // writers, each its own commit.
  const burst = (await Promise.all([0, 1, 2, 3].map(() => appendSeparately(db.app, a, 5)))).flat();
  await live.until(burst.length);
  const rest = collect(resumed);
  const expected = await db.app.withTenant(a, (tx) =>
    readEventsAfter(tx, BigInt(history[10]?.id ?? 0), 1000),
  );
  assert.equal(expected.length, 19 + burst.length);
  await rest.until(expected.length);
  const [next] = await appendSeparately(db.app, a, 1);
  await rest.until(expected.length + 1);
  assert.deepEqual(rest.ids(), [...ids(expected), next?.id]);
  assert.ok(rest.events.every((e) => e.tenantId === a));
});

test('§5.7.8 a lastEventId beyond the tenant (another tenant’s newer id, or any huge id) replays nothing foreign and still goes live', async () => {
  const { hub: h } = await hub();
  const a = await createTenant(db.pools.app);
  const b = await createTenant(db.pools.app);
  const earlier = await appendSeparately(db.app, a, 2);
  const [ofB] = await appendSeparately(db.app, b, 1);
  const fromB = collect(await h.subscribe(a, { lastEventId: ofB?.id ?? '' }));
  const huge = collect(await h.subscribe(a, { lastEventId: '9223372036854775807' }));
  const fromZero = collect(await h.subscribe(a, { lastEventId: '0' }));
  const [next] = await appendSeparately(db.app, a, 1);
  await Promise.all([fromB.until(1), huge.until(1), fromZero.until(3)]);
  assert.deepEqual(fromB.ids(), [next?.id]);
  assert.deepEqual(huge.ids(), [next?.id]);
  assert.deepEqual(fromZero.ids(), [...ids(earlier), next?.id]);
});

test('§5.7.8 a slow consumer that overflows its queue is dropped alone; the others keep their events', async () => {
  const { hub: h } = await hub({ maxQueue: 4 });
  const a = await createTenant(db.pools.app);
  const b = await createTenant(db.pools.app);
  const slow = await h.subscribe(a);
  const fast = collect(await h.subscribe(a));
  const other = collect(await h.subscribe(b));
  const written = await appendSeparately(db.app, a, 12);
  assert.equal(await slow.closed, 'overflow');
  await fast.until(written.length);
  assert.deepEqual(fast.ids(), ids(written));
  assert.deepEqual(await slow.next(), { done: true, value: undefined });
  assert.equal(slow.queued, 0);
  assert.equal(h.status().subscribers, 2);
  const [ofB] = await appendSeparately(db.app, b, 1);
  await other.until(1);
  assert.deepEqual(other.ids(), [ofB?.id]);
});

test('§5.7.8 a resuming consumer whose live backlog overflows during replay is dropped', async () => {
  const { hub: h } = await hub({ maxQueue: 3, pageSize: 3 });
  const a = await createTenant(db.pools.app);
  await appendSeparately(db.app, a, 2);
  const watcher = collect(await h.subscribe(a));
  const resuming = await h.subscribe(a, { lastEventId: '0' });
  // It never reads, so it stays in replay while live events pile up in its side buffer.
  const written = await appendSeparately(db.app, a, 6);
  await watcher.until(written.length);
  assert.equal(await resuming.closed, 'overflow');
});

test('§5.7.8 a killed LISTEN connection is re-established and what was appended meanwhile is backfilled', async () => {
  let attempts = 0;
  const gate = Promise.withResolvers<void>();
  const reconnecting = Promise.withResolvers<void>();
  const { hub: h, name } = await hub({
    reconnectMinMs: 10,
    connect: async (make: () => pg.Client) => {
      attempts++;
      if (attempts > 1) {
        reconnecting.resolve();
        await gate.promise;
      }
      return make();
    },
  });
  const a = await createTenant(db.pools.app);
  const b = await createTenant(db.pools.app);
  const onA = collect(await h.subscribe(a));
  const onB = collect(await h.subscribe(b));
  const earlier = await appendSeparately(db.app, a, 1);
  await onA.until(1);
  const [pid] = await listenerPids(db, name);
  await asSuperuser(db, (c) => c.query('SELECT pg_terminate_backend($1)', [pid]));
  await reconnecting.promise;
  assert.equal(h.status().listening, false);
  // Appended while the hub has no LISTEN connection: no notice will ever reach it.
  const missedA = await appendSeparately(db.app, a, 3);
  const missedB = await appendTogether(db.app, b, 2);
  gate.resolve();
  await onA.until(4);
  await onB.until(2);
  assert.deepEqual(onA.ids(), ids([...earlier, ...missedA]));
  assert.deepEqual(onB.ids(), ids(missedB));
  assert.equal(h.status().reconnects, 1);
  assert.equal(h.status().listening, true);
  const [live] = await appendSeparately(db.app, a, 1);
  await onA.until(5);
  assert.equal(onA.ids().at(-1), live?.id);
});

test('§5.7.8 idle subscribers get heartbeats as a separate signal, never as events', async () => {
  const { hub: h } = await hub({ heartbeatMs: 20 });
  const a = await createTenant(db.pools.app);
  const idle = collect(await h.subscribe(a));
  await waitFor('two heartbeats', () => idle.heartbeats >= 2);
  assert.deepEqual(idle.events, []);
});

test('§5.7.8 subscribe refuses a tenant id that is not a uuid and a lastEventId that is not a decimal id', async () => {
  const { hub: h } = await hub();
  const a = await createTenant(db.pools.app);
  for (const bad of ['', 'alpha', `${a}'--`]) await assert.rejects(h.subscribe(bad), TypeError);
  for (const bad of ['-1', '1e3', 'abc', ' 1', '99999999999999999999', '9223372036854775808'])
    await assert.rejects(h.subscribe(a, { lastEventId: bad }), TypeError);
  assert.equal(h.status().subscribers, 0);
});

test('§5.7.8 close() ends every subscription and releases the LISTEN connection', async () => {
  const started = await startHub(db);
  const a = await createTenant(db.pools.app);
  const sub = await started.hub.subscribe(a);
  const consumer = collect(sub);
  await started.close();
  assert.equal(await sub.closed, 'hub_closed');
  await consumer.ended;
  await waitFor(
    'the LISTEN backend to go',
    async () => (await listenerPids(db, started.name)).length === 0,
  );
  await assert.rejects(started.hub.subscribe(a), /closed/);
});
