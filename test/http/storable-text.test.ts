import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { contract } from '../../contracts/index.ts';
import type { Route } from '../../contracts/route.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant, TENANT_ROW_FIXTURES } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';

/**
 * Issue 10 item 5: U+0000 and lone surrogates are refused by the contract layer for every
 * string input of every route (derived from the contracts, so a new route is covered by
 * itself), and PostgreSQL never sees them; timestamps it cannot hold are refused too.
 */

let db: TestDatabase;
let api: TestApi;
let tenant: string;
let review: string;
type Caller = ReturnType<typeof client>;
let staff: Caller;
let customer: Caller;
let adapter: Caller;
let anonymous: Caller;
const PASSWORD = 'correct horse battery';

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  tenant = await createTenant(db.pools.app);
  await db.app.withTenant(
    tenant,
    (tx) => TENANT_ROW_FIXTURES.pending_reviews?.(tx, tenant) ?? Promise.resolve(),
  );
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    'SELECT id FROM pending_reviews WHERE tenant_id = $1',
    [tenant],
  );
  review = rows[0]?.id ?? '';
  await seedUser(db, api.hasher, {
    email: 'pa@mssp.test',
    role: 'platform_admin',
    password: PASSWORD,
  });
  await seedUser(db, api.hasher, {
    email: 'cv@customer.test',
    role: 'customer_viewer',
    tenantId: tenant,
    password: PASSWORD,
  });
  staff = client(api);
  assert.equal((await staff.login('pa@mssp.test', PASSWORD)).status, 200);
  customer = client(api);
  assert.equal((await customer.login('cv@customer.test', PASSWORD)).status, 200);
  const token = (await api.tokens.mintAdapter({ tenantId: tenant })).token;
  adapter = client(api, { authorization: `Bearer ${token}` });
  anonymous = client(api);
});
after(async () => {
  await api.close();
  await db.drop();
});

/** Rows in every table, read as the superuser so RLS hides nothing. */
async function rowCounts(): Promise<Record<string, number>> {
  const su = new pg.Client(db.superuser);
  await su.connect();
  try {
    const { rows } = await su.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables
        WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`,
    );
    const counts: Record<string, number> = {};
    for (const { table_name } of rows) {
      const r = await su.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table_name}"`);
      counts[table_name] = r.rows[0]?.n ?? -1;
    }
    return counts;
  } finally {
    await su.end();
  }
}

interface Schema {
  type?: string;
  const?: unknown;
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
  patternProperties?: Record<string, Schema>;
  items?: Schema;
}

/** Every place in a schema where a string can go, as pointer segments ('k' for a record key). */
function stringSlots(schema: Schema, at: string[] = []): string[][] {
  if (schema.anyOf) {
    const all = schema.anyOf.flatMap((s) => stringSlots(s, at));
    return [...new Map(all.map((slot) => [slot.join('/'), slot])).values()];
  }
  if (schema.type === 'string' || typeof schema.const === 'string') return [at];
  if (schema.type === 'array' && schema.items) return stringSlots(schema.items, [...at, '0']);
  if (schema.type === 'object') {
    return [
      ...Object.entries(schema.properties ?? {}).flatMap(([k, s]) => stringSlots(s, [...at, k])),
      ...Object.values(schema.patternProperties ?? {}).flatMap((s) => stringSlots(s, [...at, 'k'])),
    ];
  }
  return [];
}

/** A body holding only `value` at `slot`: the rule must run before the schema is checked. */
function bodyWith(slot: string[], value: unknown): unknown {
  return slot.reduceRight<unknown>(
    (inner, segment) => (segment === '0' ? [inner] : { [segment]: inner }),
    value,
  );
}

function callerFor(family: string, r: Route): Caller {
  if (r.anonymous) return anonymous;
  if (family === 'tenant') return customer;
  if (family === 'internal') return adapter;
  return staff;
}

function pathWith(r: Route, replace: Record<string, string> = {}): string {
  return r.path.replace(/\{([a-z_]+)\}/g, (_, name: string) => replace[name] ?? randomUUID());
}

interface Attack {
  label: string;
  caller: Caller;
  method: string;
  path: string;
  body?: unknown;
  pointer: string;
}

/** NUL in the middle, a lone high and a lone low surrogate. */
const POISONS = { nul: 'a\u0000b', high: 'a\ud800b', low: '\udc00' } as const;

function attacks(): Attack[] {
  const list: Attack[] = [];
  for (const [family, routes] of Object.entries(contract)) {
    for (const [name, r] of Object.entries(routes as Record<string, Route>)) {
      const caller = callerFor(family, r);
      const label = `${family}.${name}`;
      for (const [param] of stringSlots((r.params ?? {}) as Schema)) {
        if (param === undefined) continue;
        for (const raw of ['a%00b', '%ED%A0%80']) {
          list.push({
            label: `${label} params ${param}=${raw}`,
            caller,
            method: r.method,
            path: pathWith(r, { [param]: raw }),
            ...(r.body ? { body: {} } : {}),
            pointer: `/params/${param}`,
          });
        }
      }
      for (const [key] of stringSlots((r.query ?? {}) as Schema)) {
        if (key === undefined) continue;
        list.push({
          label: `${label} query ${key}`,
          caller,
          method: r.method,
          path: `${pathWith(r)}?${key}=a%00b`,
          ...(r.body ? { body: {} } : {}),
          pointer: `/query/${key}`,
        });
      }
      if (!r.body) continue;
      for (const slot of stringSlots(r.body as Schema)) {
        for (const [kind, poison] of Object.entries(POISONS)) {
          list.push({
            label: `${label} body /${slot.join('/')} ${kind}`,
            caller,
            method: r.method,
            path: pathWith(r),
            body: bodyWith(slot, poison),
            pointer: `/${slot.join('/')}`,
          });
        }
      }
      list.push({
        label: `${label} body key`,
        caller,
        method: r.method,
        path: pathWith(r),
        body: { 'x\u0000': 'v' },
        pointer: '/x\uFFFD',
      });
    }
  }
  return list;
}

test('issue 10 item 5: NUL and lone surrogates in every string input of every route are 400 invalid_characters and write nothing', async () => {
  const list = attacks();
  // The derivation really reaches the inputs the probe named.
  const labels = list.map((a) => a.label).join('\n');
  for (const named of [
    'auth.login body /email nul',
    'auth.changePassword body /new_password high',
    'mssp.createUser body /email nul',
    'mssp.createTenantUser body /email low',
    'mssp.approveReview body /note nul',
    'mssp.impersonate body /reason nul',
    'mssp.createTenant body /display_name nul',
    'mssp.audit query actor_id',
    'tenant.audit query action',
    'internal.health body /status/k high',
  ]) {
    assert.ok(labels.includes(named), named);
  }
  const before = await rowCounts();
  const failures: string[] = [];
  for (const a of list) {
    const res = await a.caller.call(a.method, a.path, a.body);
    const errors = res.body?.errors as { path: string }[] | undefined;
    const got = `${res.status} ${res.body?.code} ${errors?.[0]?.path}`;
    if (got !== `400 invalid_characters ${a.pointer}`) failures.push(`${a.label}: ${got}`);
  }
  assert.deepEqual(failures, []);
  assert.deepEqual(await rowCounts(), before);
});

test('issue 10 item 5: otherwise valid requests with one poisoned string are refused before any database work', async () => {
  const cases: [Caller, string, string, unknown][] = [
    [anonymous, 'POST', '/api/auth/login', { email: 'pa@mssp.test\u0000', password: PASSWORD }],
    [anonymous, 'POST', '/api/auth/login', { email: 'pa\ud800@mssp.test', password: PASSWORD }],
    [
      anonymous,
      'POST',
      '/api/auth/login',
      { email: 'pa@mssp.test', password: `${PASSWORD}\u0000` },
    ],
    [staff, 'POST', '/api/mssp/users', { email: 'new\u0000@mssp.test', role: 'analyst' }],
    [
      staff,
      'POST',
      `/api/mssp/tenants/${tenant}/users`,
      { email: 'n@x.test', display_name: 'N\u0000' },
    ],
    [staff, 'POST', `/api/mssp/tenants/${tenant}/reviews/${review}:approve`, { note: 'ok\u0000' }],
    [staff, 'POST', `/api/mssp/tenants/${tenant}/reviews/${review}:reject`, { note: 'no\ud800' }],
    [staff, 'POST', `/api/mssp/impersonate/${tenant}`, { reason: 'ticket\u0000 42' }],
    [
      adapter,
      'POST',
      '/api/internal/adapter/health',
      { version: '1.0.0', status: { monitor: 'up\u0000' } },
    ],
    [
      staff,
      'POST',
      '/api/auth/password/change',
      { current_password: PASSWORD, new_password: 'a fine new passphrase\u0000' },
    ],
    [staff, 'GET', '/api/mssp/audit?actor_id=pa%00', undefined],
    [customer, 'GET', '/api/tenant/audit?action=auth.login%00', undefined],
  ];
  const before = await rowCounts();
  for (const [caller, method, path, body] of cases) {
    const res = await caller.call(method, path, body);
    assert.deepEqual(
      [res.status, res.body?.code],
      [400, 'invalid_characters'],
      `${method} ${path}`,
    );
  }
  assert.deepEqual(await rowCounts(), before);
  const { rows } = await db.pools.mssp.query('SELECT decision FROM pending_reviews WHERE id = $1', [
    review,
  ]);
  assert.equal(rows[0]?.decision, null);
});

test('issue 10 item 5: a NUL in a header value never reaches the app (the HTTP parser answers 400)', async () => {
  const before = await rowCounts();
  const { port } = new URL(api.url);
  const body = JSON.stringify({ email: 'pa@mssp.test', password: 'wrong password!' });
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
    socket.write(
      `POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: ${api.origin}\r\n` +
        `User-Agent: probe\u0000agent\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      'latin1',
    );
  });
  assert.match(answer, /^HTTP\/1\.1 400 /);
  assert.deepEqual(await rowCounts(), before);
});

test('issue 10 item 5: a sign-in with an odd but storable email is refused as usual and audited', async () => {
  const odd = ' \u202eZ<b>\u0001é😀@EXAMPLE ';
  const res = await anonymous.login(odd, 'some password here');
  assert.deepEqual([res.status, res.body?.code], [401, 'invalid_credentials']);
  const { rows } = await db.pools.mssp.query<{ details: { email: string; reason: string } }>(
    `SELECT details FROM audit_log WHERE action = 'auth.login.failure' ORDER BY "timestamp" DESC LIMIT 1`,
  );
  assert.deepEqual(rows[0]?.details.email, '\u202ez<b>\u0001é😀@example');
  assert.equal(rows[0]?.details.reason, 'unknown_email');
});

const UNSTORABLE_TIMESTAMPS = [
  '2026-01-01T00:00:00+16:00',
  '2026-01-01T00:00:00-23:59',
  '0000-01-01T00:00:00Z',
  '2026-01-01T00:00:00Z[Europe/Paris]',
  '2026-02-30T00:00:00Z',
  '2026-01-01T00:00:00',
];

test('issue 10 item 5: timestamps PostgreSQL cannot hold are 400 validation_failed on both audit views', async () => {
  const views: [Caller, string, string[]][] = [
    [staff, '/api/mssp/audit', ['since', 'until']],
    [customer, '/api/tenant/audit', ['since']],
  ];
  const before = await rowCounts();
  for (const [caller, path, fields] of views) {
    for (const field of fields) {
      for (const value of UNSTORABLE_TIMESTAMPS) {
        const res = await caller.call('GET', `${path}?${field}=${encodeURIComponent(value)}`);
        const errors = res.body?.errors as { path: string }[] | undefined;
        assert.deepEqual(
          [res.status, res.body?.code, errors?.[0]?.path],
          [400, 'validation_failed', `/query/${field}`],
          `${path} ${field}=${value}`,
        );
      }
    }
  }
  assert.deepEqual(await rowCounts(), before);
  // The edges PostgreSQL does hold stay accepted.
  for (const value of [
    '0001-01-01T00:00:00Z',
    '9999-12-31T23:59:59.999999+15:59',
    '2026-01-01t00:00:00-15:59',
  ]) {
    for (const [caller, path] of views) {
      const res = await caller.call('GET', `${path}?since=${encodeURIComponent(value)}`);
      assert.equal(res.status, 200, `${path} since=${value}`);
    }
  }
});

test('issue 10 item 5: an X-Forwarded-For hop that is no address never reaches the database', async () => {
  const behindProxy = await startTestApi(db, { trustedProxyCidrs: ['127.0.0.1/32'] });
  try {
    for (const hop of ['junk', '1.2.3.4:80', '[::1]', 'a\u00e9b']) {
      const res = await client(behindProxy, { 'x-forwarded-for': hop }).login(
        'pa@mssp.test',
        PASSWORD,
      );
      assert.equal(res.status, 200, hop);
    }
    const { rows } = await db.pools.mssp.query<{ ip: string }>(
      `SELECT DISTINCT host(s.ip_created) AS ip FROM sessions s JOIN users u ON u.id = s.user_id
        WHERE u.email = 'pa@mssp.test'`,
    );
    assert.deepEqual(
      rows.map((r) => r.ip),
      ['127.0.0.1'],
    );
  } finally {
    await behindProxy.close();
  }
});
