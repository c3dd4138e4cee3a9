import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { REVOCATION_CHANNEL } from '../../src/domains/events/event-repository.ts';
import type { RevocationNotice } from '../../src/domains/events/notice.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { startHub, type TestHub } from './support.ts';

/**
 * Issue 33: the hub's `SELECT 1` barrier on its LISTEN connection (every page read with events,
 * every settle after a revoking request) is coalesced to one in flight plus one queued. Each
 * caller must still get its guarantee: every notice committed before its call has been handed
 * on when its sync() resolves.
 */

let db: TestDatabase;
const hubs: TestHub[] = [];
before(async () => {
  db = await createTestDatabase();
});
after(async () => {
  await Promise.all(hubs.map((h) => h.close()));
  await db.drop();
});

/** What the LISTEN client has sent and had answered of its barriers, counted on the real client. */
interface BarrierLog {
  sent: number;
  /** The highest barrier (by send order) whose answer has come. */
  answered: number;
}

async function recordingHub(log: BarrierLog): Promise<TestHub> {
  const started = await startHub(db, {
    connect: (make: () => pg.Client) => {
      const client = make();
      const send = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      (client as unknown as { query: typeof send }).query = (...args: unknown[]) => {
        const result = send(...args);
        if (args[0] !== 'SELECT 1') return result;
        const index = ++log.sent;
        // Attached before the caller's own handlers, so it runs first.
        return result.then((value) => {
          log.answered = Math.max(log.answered, index);
          return value;
        });
      };
      return client;
    },
  });
  hubs.push(started);
  return started;
}

test('issue 33 concurrent sync() calls share one barrier in flight and one queued', async () => {
  const log: BarrierLog = { sent: 0, answered: 0 };
  const { hub } = await recordingHub(log);
  const before = hub.status().barriers;
  await Promise.all(Array.from({ length: 200 }, () => hub.sync()));
  const sent = hub.status().barriers - before;
  assert.ok(sent >= 1 && sent <= 2, `200 callers sent ${sent} barriers`);
  assert.equal(log.sent - log.answered, 0);
});

test('issue 33 every sync() resolves only after a barrier sent after its call was answered', async () => {
  const log: BarrierLog = { sent: 0, answered: 0 };
  const { hub } = await recordingHub(log);
  const calls: Promise<void>[] = [];
  const call = () => {
    const sentAtCall = log.sent;
    calls.push(
      hub.sync().then(() => {
        assert.ok(
          log.answered > sentAtCall,
          `resolved on barrier ${log.answered}, but ${sentAtCall} were sent before the call`,
        );
      }),
    );
  };
  // Callers arrive while a barrier is in flight, while one is queued, and in between.
  for (let round = 0; round < 50; round++) {
    call();
    call();
    await Promise.resolve();
    call();
    await new Promise((resolve) => setImmediate(resolve));
    call();
  }
  await Promise.all(calls);
  assert.ok(hub.status().barriers < calls.length, 'the barriers were shared');
});

test('issue 33 a revocation committed before sync() has reached the observers when it resolves, with barriers in flight', async () => {
  const { hub } = await recordingHub({ sent: 0, answered: 0 });
  const seen = new Set<string>();
  hub.watch({
    notice: () => undefined,
    reconnected: () => undefined,
    revocation: (notice: RevocationNotice) => {
      seen.add(notice.id);
    },
  });
  for (let round = 0; round < 40; round++) {
    const id = randomUUID();
    // A barrier sent before the notice commits: it must not satisfy the sync() below.
    const early = hub.sync();
    await db.pools.app.query('SELECT pg_notify($1, $2)', [
      REVOCATION_CHANNEL,
      JSON.stringify({ user: id }),
    ]);
    await hub.sync();
    assert.ok(seen.has(id), `round ${round}: the revocation had not reached the observer`);
    await early;
  }
});

test('issue 33 sync() rejects while the LISTEN connection is down', async () => {
  const { hub, close } = await startHub(db);
  await hub.sync();
  await close();
  await assert.rejects(hub.sync(), /LISTEN connection is down/);
});
