import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

/**
 * Issue 10 item 7: whoever can read `sessions` must not be able to replay a session. The
 * table keeps only a hash of the cookie's secret (sql/0011_session_hash.sql).
 */

const PASSWORD = 'correct horse battery';

let db: TestDatabase;
let api: TestApi;
let tenant: string;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  tenant = await createTenant(db.pools.app);
});
after(async () => {
  await api.close();
  await db.drop();
});

/** Every value of the user's session rows, as text, read by the most privileged app role. */
async function storedValues(userId: string): Promise<string[]> {
  const { rows } = await db.pools.admin.query<{ value: string | null }>(
    `SELECT v.value FROM sessions s, jsonb_each_text(to_jsonb(s)) v WHERE s.user_id = $1`,
    [userId],
  );
  return rows.map((r) => r.value ?? '');
}

/** The forms a cookie's 16 bytes could be stored in: as sent, as a uuid, as hex. */
function formsOf(cookie: string): string[] {
  const hex = Buffer.from(cookie, 'base64url').toString('hex');
  const uuid = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return [cookie, hex, uuid];
}

async function me(cookie: string): Promise<{ status: number; code: string | undefined }> {
  const res = await fetch(`${api.url}/api/auth/me`, {
    headers: { cookie: `svc_session=${cookie}` },
  });
  const body = (await res.json()) as { code?: string };
  return { status: res.status, code: body.code };
}

test('issue 10.7 the sessions table holds no value equal to the session cookie', async () => {
  const id = await seedUser(db, api.hasher, {
    email: 'viewer@acme.test',
    role: 'customer_viewer',
    tenantId: tenant,
    password: PASSWORD,
  });
  const browser = client(api);
  assert.equal((await browser.login('viewer@acme.test', PASSWORD)).status, 200);
  const cookie = (browser.cookie() ?? '').replace(/^svc_session=/, '');
  assert.equal((await me(cookie)).status, 200, 'the cookie itself works');

  const values = await storedValues(id);
  assert.ok(values.length > 0, 'the session row exists');
  for (const form of formsOf(cookie)) {
    const found = values.filter((value) => value.toLowerCase().includes(form.toLowerCase()));
    assert.deepEqual(found, [], `the cookie is not stored as ${form}`);
  }
});

test('issue 10.7 what the table holds does not sign in: stored hash and row id are refused', async () => {
  const userId = await seedUser(db, api.hasher, {
    email: 'reader@acme.test',
    role: 'customer_viewer',
    tenantId: tenant,
    password: PASSWORD,
  });
  assert.equal((await client(api).login('reader@acme.test', PASSWORD)).status, 200);
  const { rows } = await db.pools.admin.query<{ id: string; secret_hash: string }>(
    'SELECT id, secret_hash FROM sessions WHERE user_id = $1',
    [userId],
  );
  const row = rows[0];
  assert.ok(row);
  const hash = Buffer.from(row.secret_hash, 'hex');
  const replays = {
    'the hash as hex': row.secret_hash,
    'the hash as base64url': hash.toString('base64url'),
    'the first 16 bytes of the hash, shaped like a cookie': hash
      .subarray(0, 16)
      .toString('base64url'),
    'the row id, encoded as cookies were before': Buffer.from(
      row.id.replaceAll('-', ''),
      'hex',
    ).toString('base64url'),
  };
  for (const [what, cookie] of Object.entries(replays)) {
    assert.deepEqual(await me(cookie), { status: 401, code: 'session_expired' }, what);
  }
});
