import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';

/**
 * Issue 11: an authenticated request costs one pooled connection and one transaction, in as
 * few round trips as PostgreSQL allows. Every statement the app's pool sends is recorded.
 */
let db: TestDatabase;
let api: TestApi;
/** `riding`: written while an earlier statement on the connection was still unanswered. */
const sent: { pid: number; text: string; riding: boolean }[] = [];

before(async () => {
  db = await createTestDatabase();
  let next = 0;
  // Before the pool's first connection: every client it hands out is recorded.
  db.app.pool.on('connect', (client) => {
    const pid = next++;
    let unanswered = 0;
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = ((...args: unknown[]) => {
      const first = args[0] as string | { text?: string };
      const text = typeof first === 'string' ? first : String(first.text);
      sent.push({ pid, text, riding: unanswered > 0 });
      unanswered++;
      const result = query(...args);
      const answered = () => {
        unanswered--;
      };
      if (result instanceof Promise) result.then(answered, answered);
      return result;
    }) as typeof client.query;
  });
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
});
after(async () => {
  await api.close();
  await db.drop();
});

test('§5.5 issue 11: a customer read is BEGIN with the session check, the query, COMMIT: three round trips on one connection', async () => {
  const tenant = await createTenant(db.pools.app);
  const svc = await signedInAs({ db, api }, 'customer_viewer', { tenantId: tenant });
  sent.length = 0;
  const res = await svc.tenant.overview();
  assert.equal(res.status, 200);
  assert.deepEqual(
    sent.map((s) => s.text.trim().split(/\s+/).slice(0, 4).join(' ')),
    ['BEGIN; SELECT * FROM', 'WITH open_counts AS (', 'COMMIT'],
  );
  assert.match(sent[0]?.text ?? '', /svc_session_check/);
  assert.equal(new Set(sent.map((s) => s.pid)).size, 1, 'one pooled connection');
});

test('§5.5 issue 11: an unknown session is refused after the check alone, and its transaction is closed', async () => {
  sent.length = 0;
  // Well-formed (16 bytes, base64url) but issued to nobody.
  const res = await fetch(`${api.url}/api/tenant/overview`, {
    headers: { cookie: `svc_session=${'A'.repeat(22)}` },
  });
  assert.equal(res.status, 401);
  assert.deepEqual(
    sent.map((s) => s.text.trim().split(/\s+/)[0]),
    ['BEGIN;', 'COMMIT'],
  );
});

test('§5.5 issue 11: the next read on that session is one round trip: BEGIN with the session assert, and the query written behind it before its answer', async () => {
  const tenant = await createTenant(db.pools.app);
  const svc = await signedInAs({ db, api }, 'customer_viewer', { tenantId: tenant });
  assert.equal((await svc.tenant.overview()).status, 200, 'the first read checks the session');
  sent.length = 0;
  const res = await svc.tenant.overview();
  assert.equal(res.status, 200);
  assert.deepEqual(
    sent.map((s) =>
      s.text
        .trim()
        .split(/[\s(]+/)
        .slice(0, 3)
        .join(' '),
    ),
    ['BEGIN; SELECT svc_session_assert', 'WITH open_counts AS', 'COMMIT'],
  );
  assert.match(sent[0]?.text ?? '', /; SET TRANSACTION READ ONLY$/);
  assert.deepEqual(
    sent.map((s) => s.riding),
    [false, true, false],
    'the query rides in the assert round trip; COMMIT follows the answer',
  );
  assert.equal(new Set(sent.map((s) => s.pid)).size, 1, 'one pooled connection');
});
