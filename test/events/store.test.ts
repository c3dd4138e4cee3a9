import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { clientConfig } from '../../src/db/target.ts';
import type { InstallTx, TenantTx } from '../../src/db/tenant-context.ts';
import {
  appendUncheckedEvent,
  latestEventId,
  readEventsAfter,
  StreamConflictError,
} from '../../src/domains/events/event-repository.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { appendSeparately, waitFor } from './support.ts';

let db: TestDatabase;
let a: string;
let b: string;
before(async () => {
  db = await createTestDatabase();
  a = await createTenant(db.pools.app);
  b = await createTenant(db.pools.app);
});
after(() => db.drop());

function event(tenantId: string, streamId: string, streamSeq: number, payload: unknown = {}) {
  return {
    tenantId,
    streamType: 'investigation',
    streamId,
    streamSeq,
    type: 'investigation.updated',
    payload,
    actor: 'User',
  };
}

async function countEvents(where: string, values: unknown[]): Promise<number> {
  const { rows } = await db.pools.mssp.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM events WHERE ${where}`,
    values,
  );
  return rows[0]?.n ?? -1;
}

/** Advisory locks in this test's database (pg_locks is cluster-wide; other files run too). */
async function advisoryLocks(granted: boolean, mode?: 'ShareLock' | 'ExclusiveLock') {
  const { rows } = await db.pools.mssp.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_locks
      WHERE locktype = 'advisory' AND granted = $1 AND ($2::text IS NULL OR mode = $2)
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [granted, mode ?? null],
  );
  return rows[0]?.n ?? 0;
}

/** Resolves once some session waits for an advisory lock (an append queued behind another). */
function appendQueued(): Promise<true> {
  return waitFor('an append waiting behind another', async () => (await advisoryLocks(false)) > 0);
}

/** Resolves once an open transaction holds an append lock of the given mode. */
function appendHeld(mode: 'ShareLock' | 'ExclusiveLock'): Promise<true> {
  return waitFor(
    `an open append holding ${mode}`,
    async () => (await advisoryLocks(true, mode)) > 0,
  );
}

test('§6.2 appendEvent writes the event in the tenant context and returns the stored row', async () => {
  const streamId = randomUUID();
  const stored = await db.app.withTenant(a, (tx) =>
    appendUncheckedEvent(tx, event(a, streamId, 1, { title: 'Suspicious login' })),
  );
  assert.match(stored.id, /^\d+$/);
  assert.equal(stored.tenantId, a);
  assert.equal(stored.streamSeq, 1);
  assert.deepEqual(stored.payload, { title: 'Suspicious login' });
  assert.equal(stored.actor, 'User');
  assert.ok(stored.occurredAt instanceof Date);
  const read = await db.app.withTenant(a, (tx) => readEventsAfter(tx, BigInt(stored.id) - 1n, 10));
  assert.deepEqual(read, [stored]);
});

test('§6.2 appendEvent: a position already taken or skipped raises StreamConflictError and writes nothing', async () => {
  const streamId = randomUUID();
  await db.app.withTenant(a, (tx) => appendUncheckedEvent(tx, event(a, streamId, 1)));
  for (const seq of [1, 3]) {
    const error = await db.app
      .withTenant(a, (tx) => appendUncheckedEvent(tx, event(a, streamId, seq)))
      .catch((e: unknown) => e);
    assert.ok(error instanceof StreamConflictError, String(error));
    assert.equal(error.expectedSeq, seq);
    assert.equal(error.currentSeq, 1);
  }
  assert.equal(await countEvents('stream_id = $1', [streamId]), 1);
});

test('§6.2 appendEvent: of two concurrent writers at one position, one wins; the loser gets StreamConflictError in a usable transaction', async () => {
  const streamId = randomUUID();
  await db.app.withTenant(a, (tx) => appendUncheckedEvent(tx, event(a, streamId, 1)));
  const release = Promise.withResolvers<void>();
  const first = db.app.withTenant(a, async (tx) => {
    const stored = await appendUncheckedEvent(tx, event(a, streamId, 2, { writer: 'first' }));
    await release.promise;
    return stored;
  });
  await appendHeld('ExclusiveLock');
  // The second writer read the stream at 1 (the first has not committed) and queues behind it.
  const second = db.app.withTenant(a, async (tx) => {
    const outcome = await appendUncheckedEvent(
      tx,
      event(a, streamId, 2, { writer: 'second' }),
    ).catch((e: unknown) => e);
    const { rows } = await tx.query<{ ok: number }>('SELECT 1 AS ok');
    return { outcome, usable: rows[0]?.ok === 1 };
  });
  await appendQueued();
  release.resolve();
  await first;
  const { outcome, usable } = await second;
  assert.ok(outcome instanceof StreamConflictError, String(outcome));
  assert.equal(outcome.currentSeq, 2);
  assert.ok(usable);
  assert.equal(await countEvents('stream_id = $1 AND stream_seq = 2', [streamId]), 1);
});

test('§5.7.1 appendEvent with a tenant id other than the context is rejected by RLS, even onto a taken position of that tenant', async () => {
  const streamId = randomUUID();
  await db.app.withTenant(b, (tx) => appendUncheckedEvent(tx, event(b, streamId, 1)));
  // Position 1 of B's stream is taken: a conflict answer would reveal that to tenant A.
  await assert.rejects(
    db.app.withTenant(a, (tx) => appendUncheckedEvent(tx, event(b, streamId, 1))),
    (error: unknown) => error instanceof pg.DatabaseError && error.code === '42501',
  );
  await assert.rejects(
    db.app.withTenant(a, (tx) => appendUncheckedEvent(tx, event(b, randomUUID(), 1))),
    (error: unknown) => error instanceof pg.DatabaseError && error.code === '42501',
  );
  assert.equal(await countEvents('stream_id = $1', [streamId]), 1);
});

test('§5.7.8 readEventsAfter is decided by the context: A reads only A, no context reads nothing', async () => {
  const mine = await appendSeparately(db.app, a, 2);
  await appendSeparately(db.app, b, 2);
  const read = await db.app.withTenant(a, (tx) => readEventsAfter(tx, 0n, 1000));
  assert.ok(read.length >= 2);
  assert.ok(read.every((e) => e.tenantId === a));
  assert.deepEqual(
    read.slice(-2).map((e) => e.id),
    mine.map((e) => e.id),
  );
  const ids = read.map((e) => BigInt(e.id));
  assert.deepEqual(
    ids,
    [...ids].sort((x, y) => (x < y ? -1 : 1)),
  );
  // The compiler already refuses a transaction without tenant context here; the cast defeats
  // it on purpose, to show that RLS refuses it too.
  const misused = (tx: InstallTx) => tx as unknown as TenantTx;
  assert.deepEqual(await db.app.withoutTenant((tx) => readEventsAfter(misused(tx), 0n, 1000)), []);
  assert.equal(await db.app.withoutTenant((tx) => latestEventId(misused(tx))), 0n);
});

test('§5.7.8 the notification names tenant and event id only, is sent at commit and never for a rollback', async () => {
  const listener = new pg.Client(clientConfig(db.target, 'app'));
  await listener.connect();
  try {
    const received: pg.Notification[] = [];
    listener.on('notification', (n) => received.push(n));
    await listener.query('LISTEN svc_events');
    await db.app
      .withTenant(a, async (tx) => {
        await appendUncheckedEvent(tx, event(a, randomUUID(), 1, { secret: 'rolled-back' }));
        throw new Error('roll back');
      })
      .catch(() => undefined);
    const stored = await db.app.withTenant(a, (tx) =>
      appendUncheckedEvent(tx, event(a, randomUUID(), 1, { secret: 'do-not-broadcast' })),
    );
    const [first] = await waitFor('one notification', () => received.length > 0 && received);
    assert.equal(first?.channel, 'svc_events');
    const body = JSON.parse(first?.payload ?? '') as Record<string, unknown>;
    assert.deepEqual(body, { tenant_id: a, id: stored.id });
    assert.doesNotMatch(first?.payload ?? '', /secret|broadcast|rolled/);
  } finally {
    await listener.end();
  }
});

test('§5.7.8 the trigger functions are SECURITY INVOKER and not callable directly; svc_app gains no grant on events', async () => {
  const { rows } = await db.pools.admin.query<{ name: string; definer: boolean; app: boolean }>(
    `SELECT proname AS name, prosecdef AS definer,
            has_function_privilege('svc_app', p.oid, 'EXECUTE') AS app
       FROM pg_proc p WHERE proname IN ('events_notify_statement', 'events_serialize_appends')
      ORDER BY 1`,
  );
  assert.deepEqual(rows, [
    { name: 'events_notify_statement', definer: false, app: false },
    { name: 'events_serialize_appends', definer: false, app: false },
  ]);
  const grants = await db.pools.admin.query<{ privilege_type: string }>(
    `SELECT privilege_type FROM information_schema.role_table_grants
      WHERE grantee = 'svc_app' AND table_name = 'events' ORDER BY 1`,
  );
  assert.deepEqual(
    grants.rows.map((r) => r.privilege_type),
    ['INSERT', 'SELECT'],
  );
});

test('§5.7.8 appends in one tenant are serialized so ids become visible in order; other tenants do not wait', async () => {
  const release = Promise.withResolvers<void>();
  const first = db.app.withTenant(a, async (tx) => {
    const stored = await appendUncheckedEvent(tx, event(a, randomUUID(), 1));
    await release.promise;
    return stored;
  });
  await appendHeld('ExclusiveLock');
  // Another tenant appends and commits while A's first append is still open.
  const [other] = await appendSeparately(db.app, b, 1);
  const second = db.app.withTenant(a, (tx) => appendUncheckedEvent(tx, event(a, randomUUID(), 1)));
  await appendQueued();
  release.resolve();
  const [one, two] = await Promise.all([first, second]);
  assert.ok(other && one && two);
  assert.ok(BigInt(two.id) > BigInt(one.id), `${two.id} must follow ${one.id}`);
  assert.ok(BigInt(other.id) > BigInt(one.id), 'B drew its id while A was still open');
});

test('§5.7.8 an append that bypasses RLS (svc_mssp) waits for every open tenant append', async () => {
  const release = Promise.withResolvers<void>();
  const open = db.app.withTenant(a, async (tx) => {
    const stored = await appendUncheckedEvent(tx, event(a, randomUUID(), 1));
    await release.promise;
    return stored;
  });
  await appendHeld('ShareLock');
  const bypass = db.pools.mssp.query<{ id: string }>(
    `INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, occurred_at)
       VALUES ($1, 'investigation', $2, 1, 'investigation.opened', now()) RETURNING id`,
    [b, randomUUID()],
  );
  await appendQueued();
  release.resolve();
  const [stored, inserted] = await Promise.all([open, bypass]);
  assert.ok(BigInt(inserted.rows[0]?.id ?? '0') > BigInt(stored.id));
});
