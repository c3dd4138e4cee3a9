import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { type SvcClient, tenantContract } from '../../contracts/index.ts';
import { client, problemCode, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';
import {
  anonymous,
  bearer,
  PASSWORD,
  type SeededTenant,
  seedTenant,
  signedIn,
  withTenantToken,
} from './support.ts';

let db: TestDatabase;
let api: TestApi;
let a: SeededTenant;
let b: SeededTenant;
let analystId: string;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  analystId = await seedUser(db, api.hasher, {
    email: 'an@mssp.test',
    role: 'analyst',
    password: PASSWORD,
  });
  await seedUser(db, api.hasher, {
    email: 'pa@mssp.test',
    role: 'platform_admin',
    password: PASSWORD,
  });
  a = await seedTenant(db, api, 'alpha', { staffId: analystId });
  b = await seedTenant(db, api, 'bravo', { staffId: analystId });
});
after(async () => {
  await api.close();
  await db.drop();
});

const ENDPOINTS = Object.keys(tenantContract) as (keyof typeof tenantContract)[];

/** Calls every endpoint of the family; returns `name status code` lines for one assertion. */
async function everyEndpoint(svc: SvcClient): Promise<string[]> {
  const lines: string[] = [];
  for (const name of ENDPOINTS) {
    // A route naming a resource gets a made-up id: who may call is decided before any lookup.
    const names = [...tenantContract[name].path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] ?? '');
    const call = svc.tenant[name] as unknown as (input?: {
      params: Record<string, string>;
    }) => Promise<{ status: number; body: unknown }>;
    const res = await call(
      names.length > 0
        ? { params: Object.fromEntries(names.map((n) => [n, randomUUID()])) }
        : undefined,
    );
    lines.push(`${name} ${res.status} ${problemCode(res)}`);
  }
  return lines;
}

function expected(status: number, code: string): string[] {
  return ENDPOINTS.map((name) => `${name} ${status} ${code}`);
}

async function viewer(slug: string, mustChange = false) {
  const email = `${slug}-${Math.random().toString(36).slice(2, 8)}@alpha.test`;
  const id = await seedUser(db, api.hasher, {
    email,
    role: 'customer_viewer',
    tenantId: a.id,
    password: PASSWORD,
    mustChange,
  });
  return { id, email };
}

async function sessionOf(userId: string): Promise<string> {
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    'SELECT id FROM sessions WHERE user_id = $1 AND revoked_at IS NULL',
    [userId],
  );
  assert.equal(rows.length, 1);
  return rows[0]?.id ?? '';
}

test('§4.3 anonymous callers get 401 unauthenticated from every endpoint', async () => {
  assert.deepEqual(await everyEndpoint(anonymous(api)), expected(401, 'unauthenticated'));
});

test('§4.3 MSSP staff sessions get 403 wrong_family: the tenant family serves customer_viewer only', async () => {
  for (const email of ['an@mssp.test', 'pa@mssp.test']) {
    assert.deepEqual(
      await everyEndpoint(await signedIn(api, email)),
      expected(403, 'wrong_family'),
      email,
    );
  }
});

test('§4.3 MSSP bearer tokens, impersonation tokens included, are not valid in the tenant family', async () => {
  const staff = await api.tokens.mintMsspUser({ userId: analystId, role: 'analyst' });
  const acting = await api.tokens.mintImpersonation({
    userId: analystId,
    role: 'analyst',
    tenantId: a.id,
  });
  for (const { token } of [staff, acting]) {
    assert.deepEqual(await everyEndpoint(bearer(api, token)), expected(401, 'invalid_token'));
  }
  const forged = `${(await api.tokens.mintTenantUser({ userId: a.viewer.id, tenantId: a.id })).token}x`;
  assert.deepEqual(await everyEndpoint(bearer(api, forged)), expected(401, 'invalid_token'));
});

test('§5.5 a revoked or expired session is rejected with 401 session_expired', async () => {
  // Expiry is moved relative to the session's own times: the test API's clock stands still.
  const cases = [
    'UPDATE sessions SET revoked_at = now() WHERE id = $1',
    `UPDATE sessions SET created_at = created_at - interval '13 hours',
       last_seen_at = last_seen_at - interval '13 hours',
       absolute_expiry = absolute_expiry - interval '13 hours',
       idle_expiry = idle_expiry - interval '13 hours' WHERE id = $1`,
    `UPDATE sessions SET last_seen_at = last_seen_at - interval '31 minutes',
       idle_expiry = idle_expiry - interval '31 minutes' WHERE id = $1`,
  ];
  for (const sql of cases) {
    const user = await viewer('expiring');
    const svc = await signedIn(api, user.email);
    assert.equal((await svc.tenant.overview()).status, 200);
    await db.pools.mssp.query(sql, [await sessionOf(user.id)]);
    const res = await svc.tenant.overview();
    assert.deepEqual([res.status, problemCode(res)], [401, 'session_expired'], sql);
  }
});

test('§5.2 a tenant token stops working once its user is disabled or moved to another tenant', async () => {
  const disabled = await viewer('disabled');
  const moved = await viewer('moved');
  const tokens = {
    disabled: await withTenantToken(api, disabled.id, a.id),
    moved: await withTenantToken(api, moved.id, a.id),
  };
  for (const svc of Object.values(tokens)) assert.equal((await svc.tenant.overview()).status, 200);
  await db.pools.mssp.query('UPDATE users SET disabled_at = now() WHERE id = $1', [disabled.id]);
  await db.pools.mssp.query('UPDATE users SET tenant_id = $2 WHERE id = $1', [moved.id, b.id]);
  for (const [why, svc] of Object.entries(tokens)) {
    assert.deepEqual(await everyEndpoint(svc), expected(401, 'invalid_token'), why);
  }
});

test('§5.4.4 a customer whose password must change gets 403 password_change_required', async () => {
  const user = await viewer('must-change', true);
  const lines = await everyEndpoint(await signedIn(api, user.email));
  assert.deepEqual(lines, expected(403, 'password_change_required'));
});

test('§4.3 the family is read-only: write methods on its paths are 405 with Allow (issue 10 item 8)', async () => {
  const browser = client(api);
  assert.equal((await browser.login(a.viewer.email, PASSWORD)).status, 200);
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
    for (const r of Object.values(tenantContract)) {
      const res = await browser.call(method, r.path, {});
      assert.deepEqual(
        [res.status, res.body.code, res.headers.get('allow')],
        [405, 'method_not_allowed', 'GET, HEAD'],
        `${method} ${r.path}`,
      );
    }
  }
});
