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
const sent: { pid: number; text: string }[] = [];

before(async () => {
  db = await createTestDatabase();
  let next = 0;
  // Before the pool's first connection: every client it hands out is recorded.
  db.app.pool.on('connect', (client) => {
    const pid = next++;
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = ((...args: unknown[]) => {
      const first = args[0] as string | { text?: string };
      sent.push({ pid, text: typeof first === 'string' ? first : String(first.text) });
      return query(...args);
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
