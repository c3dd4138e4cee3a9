import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { appendUncheckedEvent } from '../../src/domains/events/index.ts';
import {
  impersonating,
  problemCode,
  seedUser,
  startTestApi,
  type TestApi,
} from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant, TENANT_ROW_FIXTURES } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
let api: TestApi;
let tenantA: string;
let tenantB: string;
const PASSWORD = 'correct horse battery';

async function setState(id: string, state: string) {
  await db.pools.mssp.query('UPDATE tenants SET state = $2 WHERE id = $1', [id, state]);
}

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  tenantA = await createTenant(db.pools.app, 'alpha');
  tenantB = await createTenant(db.pools.app, 'bravo');
  for (const t of [tenantA, tenantB]) {
    for (const insert of Object.values(TENANT_ROW_FIXTURES))
      await db.app.withTenant(t, (tx) => insert(tx, t));
  }
  await seedUser(db, api.hasher, {
    email: 'pa@mssp.test',
    role: 'platform_admin',
    password: PASSWORD,
  });
  await seedUser(db, api.hasher, { email: 'ma@mssp.test', role: 'mssp_admin', password: PASSWORD });
  await seedUser(db, api.hasher, { email: 'an@mssp.test', role: 'analyst', password: PASSWORD });
  await seedUser(db, api.hasher, {
    email: 'cv@alpha.test',
    role: 'customer_viewer',
    tenantId: tenantA,
    password: PASSWORD,
  });
});
after(async () => {
  await api.close();
  await db.drop();
});

test('§4.2 list tenants: filtered by state, keyset-paginated, every row once', async () => {
  const svc = await signedInAs({ db, api }, 'analyst', { email: 'an@mssp.test' });
  for (let i = 0; i < 3; i++) await createTenant(db.pools.app, `extra-${i}`);
  const seen: string[] = [];
  let cursor: string | undefined;
  do {
    const res = await svc.mssp.listTenants({ query: { limit: 2, ...(cursor ? { cursor } : {}) } });
    assert.equal(res.status, 200);
    if (res.status !== 200) return;
    seen.push(...res.body.items.map((t) => t.id));
    cursor = res.body.next_cursor ?? undefined;
  } while (cursor);
  assert.equal(seen.length, 5);
  assert.equal(new Set(seen).size, 5);
  await setState(tenantB, 'active');
  const active = await svc.mssp.listTenants({ query: { state: 'active' } });
  assert.deepEqual(active.status === 200 && active.body.items.map((t) => t.id), [tenantB]);
  await setState(tenantB, 'pending');
});

test('§4.2 bad list input: unknown state, unknown parameter, forged cursor', async () => {
  const svc = await signedInAs({ db, api }, 'analyst', { email: 'an@mssp.test' });
  const bad = [
    await svc.mssp.listTenants({ query: { state: 'gone' as never } }),
    await svc.mssp.listTenants({ query: { tenant: 'x' } as never }),
    await svc.mssp.listTenants({ query: { limit: 201 } }),
  ];
  for (const res of bad)
    assert.deepEqual([res.status, problemCode(res)], [400, 'validation_failed']);
  const forged = await svc.mssp.listTenants({
    query: { cursor: Buffer.from('["x","y"]').toString('base64url') },
  });
  assert.deepEqual([forged.status, problemCode(forged)], [400, 'invalid_cursor']);
});

test('§4.2 get a tenant with its lifecycle; unknown id 404; malformed id 400', async () => {
  const svc = await signedInAs({ db, api }, 'analyst', { email: 'an@mssp.test' });
  const res = await svc.mssp.getTenant({ params: { tenant_id: tenantA } });
  assert.equal(res.status, 200);
  if (res.status === 200) {
    assert.equal(res.body.tenant.slug, 'alpha');
    assert.ok(res.body.lifecycle.length >= 1);
  }
  const missing = await svc.mssp.getTenant({
    params: { tenant_id: '00000000-0000-4000-8000-000000000000' },
  });
  assert.deepEqual([missing.status, problemCode(missing)], [404, 'tenant_not_found']);
  const malformed = await svc.mssp.getTenant({ params: { tenant_id: 'alpha' } });
  assert.deepEqual([malformed.status, problemCode(malformed)], [400, 'validation_failed']);
});

test('§3.1 decommission moves an active tenant to decommissioning, records it, and is refused otherwise', async () => {
  const admin = await signedInAs({ db, api }, 'mssp_admin', { email: 'ma@mssp.test' });
  const analyst = await signedInAs({ db, api }, 'analyst', { email: 'an@mssp.test' });
  const t = await createTenant(db.pools.app, 'leaving');
  await setState(t, 'active');
  const denied = await analyst.mssp.decommission({ params: { tenant_id: t } });
  assert.deepEqual([denied.status, problemCode(denied)], [403, 'forbidden']);
  const ok = await admin.mssp.decommission({ params: { tenant_id: t } });
  assert.equal(ok.status, 200);
  if (ok.status === 200) assert.equal(ok.body.tenant.state, 'decommissioning');
  const again = await admin.mssp.decommission({ params: { tenant_id: t } });
  assert.deepEqual([again.status, problemCode(again)], [409, 'invalid_state']);
  const visible = await db.app.withTenant(t, (tx) =>
    tx.query(`SELECT action, before, after FROM audit_log WHERE action = 'tenant.decommission'`),
  );
  assert.deepEqual(visible.rows, [
    {
      action: 'tenant.decommission',
      before: { state: 'active' },
      after: { state: 'decommissioning' },
    },
  ]);
  const lifecycle = await db.app.withTenant(t, (tx) =>
    tx.query(`SELECT from_state, to_state FROM tenant_lifecycle_events WHERE kind = 'transition'`),
  );
  assert.deepEqual(lifecycle.rows, [{ from_state: 'active', to_state: 'decommissioning' }]);
});

test('§4 the plain tenant path never serves the custom :decommission method', async () => {
  const admin = await signedInAs({ db, api }, 'mssp_admin', { email: 'ma@mssp.test' });
  const res = await fetch(`${api.url}/api/mssp/tenants/${tenantA}:hibernate`, {
    method: 'POST',
    headers: { origin: api.origin, cookie: '' },
  });
  assert.equal(res.status, 401, 'unauthenticated callers learn nothing');
  const viaSdk = await admin.mssp.getTenant({
    params: { tenant_id: `${tenantA}:decommission` as string },
  });
  assert.equal(viaSdk.status, 400);
});

test("§9.5.5 impersonation writes an audit row with acting_as and tenant_id that the tenant's customer can read", async () => {
  const analyst = await signedInAs({ db, api }, 'analyst', { email: 'an@mssp.test' });
  const res = await analyst.mssp.impersonate({
    params: { tenant_id: tenantA },
    body: { reason: 'triage case 42' },
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  if (res.status !== 200) return;
  const claims = await api.tokens.verify(res.body.token, { expect: 'mssp' });
  assert.equal(claims.current_tenant, tenantA);
  assert.ok(claims.exp - claims.iat <= 1800);
  const { rows } = await db.app.withTenant(tenantA, (tx) =>
    tx.query<{ tenant_id: string; acting_as: string; action: string; reason: string }>(
      `SELECT tenant_id, acting_as, action, details->>'reason' AS reason FROM audit_log WHERE action = 'user.impersonate'`,
    ),
  );
  assert.deepEqual(rows, [
    {
      tenant_id: tenantA,
      acting_as: tenantA,
      action: 'user.impersonate',
      reason: 'triage case 42',
    },
  ]);
  // …and through the customer's own API, flagged as impersonation.
  const customer = await signedInAs({ db, api }, 'customer_viewer', { email: 'cv@alpha.test' });
  const seen = await customer.tenant.audit({ query: { action: 'user.impersonate' } });
  assert.equal(seen.status, 200);
  if (seen.status === 200) {
    assert.ok(seen.body.items.length >= 1);
    assert.ok(seen.body.items.every((r) => r.impersonated && r.acting_as === tenantA));
  }
  const fromB = await db.app.withTenant(tenantB, (tx) =>
    tx.query(`SELECT 1 FROM audit_log WHERE action = 'user.impersonate'`),
  );
  assert.equal(fromB.rowCount, 0);
});

test('§5.2 an impersonation token acts for its one tenant only', async () => {
  const analyst = await signedInAs({ db, api }, 'analyst', { email: 'an@mssp.test' });
  const asA = await impersonating(api, analyst, tenantA, 'look around');
  assert.equal((await asA.mssp.getTenant({ params: { tenant_id: tenantA } })).status, 200);
  for (const res of [
    await asA.mssp.getTenant({ params: { tenant_id: tenantB } }),
    await asA.mssp.listTenants(),
    await asA.mssp.fleetSummary(),
    await asA.mssp.audit({ query: { tenant_id: tenantB } }),
    await asA.mssp.impersonate({ params: { tenant_id: tenantB }, body: { reason: 'chain' } }),
  ]) {
    assert.deepEqual([res.status, problemCode(res)], [403, 'outside_impersonated_tenant']);
  }
  const audit = await asA.mssp.audit();
  assert.equal(audit.status, 200);
  if (audit.status === 200) {
    assert.ok(audit.body.items.length > 0);
    assert.deepEqual([...new Set(audit.body.items.map((r) => r.tenant_id))], [tenantA]);
  }
  api.clock.advance(31 * 60 * 1000);
  const expired = await asA.mssp.getTenant({ params: { tenant_id: tenantA } });
  assert.deepEqual([expired.status, problemCode(expired)], [401, 'invalid_token']);
  api.clock.advance(-31 * 60 * 1000);
});

test('§8 impersonation is at most 30 minutes and is for MSSP staff only', async () => {
  const analyst = await signedInAs({ db, api }, 'analyst', { email: 'an@mssp.test' });
  const long = await analyst.mssp.impersonate({
    params: { tenant_id: tenantA },
    body: { reason: 'too long', ttl_seconds: 1801 },
  });
  assert.deepEqual([long.status, problemCode(long)], [400, 'validation_failed']);
  const customer = await signedInAs({ db, api }, 'customer_viewer', { email: 'cv@alpha.test' });
  const denied = await customer.mssp.impersonate({
    params: { tenant_id: tenantA },
    body: { reason: 'escalate' },
  });
  assert.deepEqual([denied.status, problemCode(denied)], [403, 'wrong_family']);
});

test('§9.5.5 the fleet summary writes a system-context audit row with its reason', async () => {
  const analyst = await signedInAs({ db, api }, 'analyst', { email: 'an@mssp.test' });
  const before = await db.pools.mssp.query(
    `SELECT count(*)::int AS n FROM audit_log WHERE actor_id = 'system:fleet.summary'`,
  );
  const res = await analyst.mssp.fleetSummary();
  assert.equal(res.status, 200);
  if (res.status === 200) {
    const a = res.body.tenants.find((t) => t.tenant_id === tenantA);
    assert.ok(a && a.open_incidents >= 1 && a.pending_reviews >= 1 && a.last_event_at !== null);
  }
  const afterRows = await db.pools.mssp.query(
    `SELECT count(*)::int AS n FROM audit_log WHERE actor_id = 'system:fleet.summary' AND actor_principal = 'System'`,
  );
  assert.equal(afterRows.rows[0]?.n, (before.rows[0]?.n ?? 0) + 1);
});

test('§4.2 cross-tenant audit: filters, pagination, System-gate entry; export for platform_admin only', async () => {
  await db.app.withTenant(tenantA, (tx) =>
    tx.query(
      `INSERT INTO audit_log (tenant_id, actor_principal, actor_id, action, resource_type, resource_id)
       VALUES ($1, 'User', 'x', 'settings.update', 'setting', '=HYPERLINK("http://evil")')`,
      [tenantA],
    ),
  );
  const admin = await signedInAs({ db, api }, 'platform_admin', { email: 'pa@mssp.test' });
  const analyst = await signedInAs({ db, api }, 'analyst', { email: 'an@mssp.test' });
  const filtered = await analyst.mssp.audit({ query: { tenant_id: tenantA, limit: 1 } });
  assert.equal(filtered.status, 200);
  if (filtered.status === 200) {
    assert.deepEqual(
      filtered.body.items.map((r) => r.tenant_id),
      [tenantA],
    );
    assert.ok(filtered.body.next_cursor);
  }
  const gate = await db.pools.mssp.query(
    `SELECT 1 FROM audit_log WHERE actor_id = 'system:mssp.audit'`,
  );
  assert.ok((gate.rowCount ?? 0) >= 1);
  const denied = await analyst.mssp.audit({ query: { format: 'csv' } });
  assert.deepEqual([denied.status, problemCode(denied)], [403, 'forbidden']);
  const csv = await admin.mssp.audit({ query: { format: 'csv', tenant_id: tenantA } });
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
  const text = String(csv.body);
  assert.match(text, /^id,timestamp,tenant_id,/);
  assert.match(text, /"'=HYPERLINK\(""http:\/\/evil""\)"/, 'formula neutralised');
  const jsonl = await admin.mssp.audit({ query: { format: 'jsonl', tenant_id: tenantA } });
  const lines = String(jsonl.body)
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { tenant_id: string });
  assert.ok(lines.length >= 2);
  assert.deepEqual([...new Set(lines.map((l) => l.tenant_id))], [tenantA]);
});

test("§5.7.8 the MSSP event stream of tenant A carries A's events and never B's", async () => {
  const login = await fetch(`${api.url}/api/auth/login`, {
    method: 'POST',
    headers: { origin: api.origin, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'an@mssp.test', password: PASSWORD }),
  });
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const controller = new AbortController();
  const res = await fetch(`${api.url}/api/mssp/tenants/${tenantA}/events`, {
    headers: { cookie },
    signal: controller.signal,
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const reader = res.body?.getReader();
  assert.ok(reader);
  const append = (t: string, type: string) =>
    db.app.withTenant(t, (tx) =>
      appendUncheckedEvent(tx, {
        tenantId: t,
        streamType: 'investigation',
        streamId: randomUUID(),
        streamSeq: 1,
        type,
      }),
    );
  await append(tenantB, 'bravo.secret');
  await append(tenantA, 'alpha.visible');
  let text = '';
  const deadline = Date.now() + 10_000;
  while (!text.includes('alpha.visible') && Date.now() < deadline) {
    const chunk = await reader.read();
    if (chunk.done) break;
    text += new TextDecoder().decode(chunk.value);
  }
  controller.abort();
  assert.match(text, /event: alpha\.visible/);
  assert.doesNotMatch(text, /bravo/);
  const other = await fetch(
    `${api.url}/api/mssp/tenants/00000000-0000-4000-8000-000000000000/events`,
    { headers: { cookie } },
  );
  assert.equal(other.status, 404);
});

test('§4.2 bad input to impersonation, decommission and the audit view is refused and writes nothing', async () => {
  const admin = await signedInAs({ db, api }, 'mssp_admin', { email: 'ma@mssp.test' });
  const before = await db.pools.mssp.query(
    `SELECT count(*)::int AS n FROM audit_log WHERE action IN ('user.impersonate', 'tenant.decommission')`,
  );
  const cases = [
    await admin.mssp.impersonate({ params: { tenant_id: tenantA }, body: {} as never }),
    await admin.mssp.impersonate({
      params: { tenant_id: tenantA },
      body: { reason: 'ok reason', ttl_seconds: 10 },
    }),
    await admin.mssp.impersonate({ params: { tenant_id: 'alpha' }, body: { reason: 'ok reason' } }),
    await admin.mssp.decommission({ params: { tenant_id: 'not-a-uuid' } }),
    await admin.mssp.audit({ query: { format: 'xml' as never } }),
    await admin.mssp.audit({ query: { since: 'yesterday' } }),
    await admin.mssp.audit({ query: { tenant_id: 'alpha' } }),
    await admin.mssp.audit({ query: { limit: 5000 } }),
  ];
  for (const res of cases)
    assert.deepEqual([res.status, problemCode(res)], [400, 'validation_failed']);
  const missing = await admin.mssp.impersonate({
    params: { tenant_id: '00000000-0000-4000-8000-000000000000' },
    body: { reason: 'nobody' },
  });
  assert.deepEqual([missing.status, problemCode(missing)], [404, 'tenant_not_found']);
  const after = await db.pools.mssp.query(
    `SELECT count(*)::int AS n FROM audit_log WHERE action IN ('user.impersonate', 'tenant.decommission')`,
  );
  assert.deepEqual(after.rows, before.rows);
});
