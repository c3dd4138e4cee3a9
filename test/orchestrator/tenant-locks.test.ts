import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import pg from 'pg';
import {
  createTenantLocks,
  TenantLockLostError,
  type TenantLocks,
} from '../../src/orchestrator/tenant-locks.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

/**
 * Issue 33: every tenant lock of a process on one direct session, a mutex inside the process,
 * and an abort signal for every holder when that session is lost. Real PostgreSQL; the
 * session is killed from a superuser connection as an operator (or a failover) would.
 */

let db: TestDatabase;
let one: TenantLocks;
let other: TenantLocks;
before(async () => {
  db = await createTestDatabase();
  one = createTenantLocks(db.target);
  other = createTenantLocks(db.target);
});
after(async () => {
  await Promise.all([one?.close(), other?.close()]);
  await db?.drop();
});

async function asSuperuser<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client(db.superuser);
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/** The lock sessions of this test's database: backend pid and how many advisory locks each holds. */
function lockSessions() {
  return asSuperuser<{ pid: number; held: number }>(
    `SELECT a.pid, count(l.*)::int AS held FROM pg_stat_activity a
       LEFT JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'advisory' AND l.granted
      WHERE a.datname = current_database() AND a.application_name = 'svc-tenant-locks'
      GROUP BY a.pid ORDER BY a.pid`,
  );
}

test('issue 33 tenant locks: many tenants held on one session; a tenant held in this process is refused to a second task and to another process until released', async () => {
  const ids = Array.from({ length: 30 }, () => randomUUID());
  const releases = await Promise.all(ids.map((id) => one.tryAcquire(id)));
  assert.ok(releases.every((r) => r !== undefined));
  const sessions = await lockSessions();
  assert.deepEqual(
    sessions.map((s) => s.held),
    [30],
    'one backend holds every lock of the process',
  );

  const [first] = ids as [string];
  assert.equal(
    await one.tryAcquire(first),
    undefined,
    'the in-process mutex refuses a second task',
  );
  assert.equal(
    await other.tryAcquire(first),
    undefined,
    'the advisory lock refuses another process',
  );

  await releases[0]?.();
  await releases[0]?.(); // a second release is harmless
  const again = await one.tryAcquire(first);
  assert.ok(again, 'released, it can be taken again in this process');
  await again();
  const elsewhere = await other.tryAcquire(first);
  assert.ok(elsewhere, 'and by another process');
  await elsewhere();
  await Promise.all(releases.slice(1).map((release) => release?.()));
  const left = await lockSessions();
  assert.deepEqual(
    left.map((s) => s.held),
    [0, 0],
  );
});

test('issue 33 tenant locks: a terminated lock session aborts every holder with tenant_lock_lost; the tenants are free for another process at once; the next acquisition opens a new session', async () => {
  const ids = [randomUUID(), randomUUID()];
  const held = await Promise.all(ids.map((id) => one.tryAcquire(id)));
  const [a, b] = held;
  assert.ok(a && b);
  const lost = Promise.all(
    [a, b].map(
      (h) =>
        new Promise<unknown>((resolve) =>
          h.signal.addEventListener('abort', () => resolve(h.signal.reason), { once: true }),
        ),
    ),
  );
  const [victim] = (await lockSessions()).filter((s) => s.held === 2);
  assert.ok(victim, 'the session holding both locks');
  await asSuperuser('SELECT pg_terminate_backend($1)', [victim.pid]);

  for (const reason of await lost) {
    assert.ok(reason instanceof TenantLockLostError);
    assert.equal(reason.code, 'tenant_lock_lost');
  }
  // PostgreSQL dropped the locks with the session: another process takes them now.
  const taken = await Promise.all(ids.map((id) => other.tryAcquire(id)));
  assert.ok(taken.every((t) => t !== undefined));
  // Until its holders release, this process still keeps the tenants from its other tasks.
  assert.equal(await one.tryAcquire(ids[0] as string), undefined);
  await Promise.all([a(), b()]); // releasing a lost lock is harmless
  assert.equal(await one.tryAcquire(ids[0] as string), undefined, 'held by the other process now');
  await Promise.all(taken.map((t) => t?.()));
  const fresh = await one.tryAcquire(ids[0] as string);
  assert.ok(fresh, 'a new session took it');
  assert.equal(fresh.signal.aborted, false);
  assert.ok(!(await lockSessions()).some((s) => s.pid === victim.pid));
  await fresh();
});

test('issue 33 tenant locks: closed locks refuse new acquisitions with an error; closing twice is harmless', async () => {
  const locks = createTenantLocks(db.target);
  const held = await locks.tryAcquire(randomUUID());
  assert.ok(held);
  await locks.close();
  await locks.close();
  assert.equal(held.signal.aborted, true, 'a holder learns that its lock is gone');
  await held();
  await assert.rejects(locks.tryAcquire(randomUUID()), /tenant locks are closed/);
});
