import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { type SvcClient, tenantContract } from '../../contracts/index.ts';
import { problemCode, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';
import {
  assertMatches,
  errorPaths,
  PASSWORD,
  type SeededTenant,
  seedTenant,
  signedIn,
  utcDay,
} from './support.ts';

let db: TestDatabase;
let api: TestApi;
let a: SeededTenant;
let c: SeededTenant;
let staffId: string;
let svc: SvcClient;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  staffId = await seedUser(db, api.hasher, {
    email: 'an@mssp.test',
    role: 'analyst',
    password: PASSWORD,
  });
  a = await seedTenant(db, api, 'alpha', { staffId });
  await seedTenant(db, api, 'bravo', { staffId, scale: 1000 });
  c = await seedTenant(db, api, 'charlie', { staffId, branded: false });
  svc = await signedIn(api, a.viewer.email);
});
after(async () => {
  await api.close();
  await db.drop();
});

/** The ids of one of A's tables in the order the API promises, read straight from SQL. */
async function idsInOrder(sql: string): Promise<string[]> {
  const { rows } = await db.app.withTenant(a.id, (tx) => tx.query<{ id: string }>(sql));
  return rows.map((r) => r.id);
}

/** Follows next_cursor to the end; returns every id in the order served. */
async function walk(
  fetchPage: (cursor: string | undefined) => Promise<{
    status: number;
    body: unknown;
  }>,
): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const res = await fetchPage(cursor);
    assert.equal(res.status, 200);
    const body = res.body as { items: { id: string }[]; next_cursor: string | null };
    seen.push(...body.items.map((item) => item.id));
    if (body.next_cursor === null) return seen;
    cursor = body.next_cursor;
  }
  throw new Error('pagination did not end');
}

test('§4.3 overview: open investigations by severity and status, pending reviews, 24 h events, 7-day resolutions, tenant name and state', async () => {
  const res = await svc.tenant.overview();
  assert.equal(res.status, 200);
  assertMatches(tenantContract.overview.responses[200], res.body, 'overview');
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.deepEqual(res.body, {
    tenant: { id: a.id, display_name: 'Tenant alpha', state: 'pending' },
    open_investigations: {
      total: 5,
      by_severity: { info: 0, low: 1, medium: 1, high: 2, critical: 1 },
      by_status: { open: 3, triaging: 1, awaiting_review: 1 },
    },
    pending_reviews: 2,
    events_last_24h: 3,
    resolved_last_7d: 1,
    as_of: api.clock.now().toISOString(),
  });
});

test('§4.3 incidents: newest first, only customer-facing fields, filtered by status and severity', async () => {
  const all = await svc.tenant.incidents();
  assert.ok(all.status === 200);
  assertMatches(tenantContract.incidents.responses[200], all.body, 'incidents');
  assert.deepEqual(
    all.body.items.map((i) => i.id),
    await idsInOrder('SELECT id FROM investigations ORDER BY opened_at DESC, id DESC'),
  );
  assert.deepEqual(
    all.body.items.slice(0, 2).map((i) => i.id),
    [a.investigations[6], a.investigations[5]],
  );
  assert.equal(all.body.next_cursor, null);
  const [first] = all.body.items;
  assert.deepEqual(Object.keys(first ?? {}).sort(), [
    'alert_count',
    'closed_at',
    'id',
    'last_alert_at',
    'opened_at',
    'resolved_at',
    'severity',
    'source',
    'source_ref',
    'status',
    'summary',
    'title',
    'updated_at',
    'verdict',
  ]);
  const filtered = async (query: Parameters<typeof svc.tenant.incidents>[0]) => {
    const res = await svc.tenant.incidents(query);
    assert.ok(res.status === 200);
    return new Set(res.body.items.map((i) => i.id));
  };
  const inv = a.investigations;
  assert.deepEqual(
    await filtered({ query: { status: 'open' } }),
    new Set([inv[0], inv[1], inv[6]]),
  );
  assert.deepEqual(await filtered({ query: { severity: 'high' } }), new Set([inv[1], inv[2]]));
  assert.deepEqual(
    await filtered({ query: { status: 'open', severity: 'high' } }),
    new Set([inv[1]]),
  );
  assert.deepEqual(
    await filtered({ query: { status: 'resolved', severity: 'critical' } }),
    new Set(),
  );
});

test('§4.3 incidents pagination walks every row exactly once, in order, ties broken by id to the microsecond', async () => {
  const expected = await idsInOrder(
    'SELECT id FROM investigations ORDER BY opened_at DESC, id DESC',
  );
  assert.equal(expected.length, 7);
  for (const limit of [1, 2, 3, 6, 7, 200]) {
    const seen = await walk((cursor) =>
      svc.tenant.incidents({ query: { limit, ...(cursor ? { cursor } : {}) } }),
    );
    assert.deepEqual(seen, expected, `limit ${limit}`);
  }
  const filtered = await walk((cursor) =>
    svc.tenant.incidents({ query: { limit: 1, status: 'open', ...(cursor ? { cursor } : {}) } }),
  );
  assert.deepEqual(
    new Set(filtered),
    new Set([a.investigations[0], a.investigations[1], a.investigations[6]]),
  );
  assert.equal(filtered.length, 3);
});

test('§4.3 audit: newest first, impersonation rows flagged, filtered by action and since', async () => {
  const all = await svc.tenant.audit();
  assert.ok(all.status === 200);
  assertMatches(tenantContract.audit.responses[200], all.body, 'audit');
  assert.deepEqual(
    all.body.items.map((row) => row.id),
    await idsInOrder('SELECT id FROM audit_log ORDER BY "timestamp" DESC, id DESC'),
  );
  const impersonation = all.body.items.find((row) => row.action === 'user.impersonate');
  assert.deepEqual(
    impersonation && {
      actor_principal: impersonation.actor_principal,
      actor_id: impersonation.actor_id,
      acting_as: impersonation.acting_as,
      impersonated: impersonation.impersonated,
      details: impersonation.details,
    },
    {
      actor_principal: 'User',
      actor_id: staffId,
      acting_as: a.id,
      impersonated: true,
      details: { reason: 'ALPHA' },
    },
  );
  for (const row of all.body.items) assert.equal(row.impersonated, row.acting_as !== null);
  assert.deepEqual(
    all.body.items
      .filter((row) => row.impersonated)
      .map((row) => row.action)
      .sort(),
    ['investigation.approve', 'settings.update', 'user.impersonate'],
  );

  const created = await svc.tenant.audit({ query: { action: 'tenant.create' } });
  assert.ok(created.status === 200);
  assert.deepEqual(
    created.body.items.map((row) => [row.actor_principal, row.actor_id, row.impersonated]),
    [['System', 'system:orchestrator', false]],
  );
  const since = new Date(Date.now() - 90 * 60_000).toISOString();
  const recent = await svc.tenant.audit({ query: { since } });
  assert.ok(recent.status === 200);
  const actions = new Set(recent.body.items.map((row) => row.action));
  assert.ok(actions.has('user.impersonate') && actions.has('auth.login.success'));
  assert.ok(!actions.has('tenant.create') && !actions.has('investigation.update'));
  for (const row of recent.body.items) assert.ok(row.timestamp >= since, row.timestamp);
});

test('§4.3 audit pagination walks every row exactly once, in order, including rows sharing a timestamp', async () => {
  const expected = await idsInOrder('SELECT id FROM audit_log ORDER BY "timestamp" DESC, id DESC');
  assert.ok(expected.length >= 6);
  for (const limit of [1, 2, 5]) {
    const seen = await walk((cursor) =>
      svc.tenant.audit({ query: { limit, ...(cursor ? { cursor } : {}) } }),
    );
    assert.deepEqual(seen, expected, `limit ${limit}`);
  }
});

function encode(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

test('§4.3 a malformed or tampered cursor is 400 invalid_cursor, on both paginated lists', async () => {
  const page = await svc.tenant.incidents({ query: { limit: 1 } });
  assert.ok(page.status === 200 && page.body.next_cursor);
  const real = page.body.next_cursor;
  const [list, at, id] = JSON.parse(Buffer.from(real, 'base64url').toString()) as string[];
  assert.equal(list, 'incidents');
  assert.match(at ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  const flipped = (real[0] === 'W' ? 'X' : 'W') + real.slice(1);
  const bad = {
    'not base64url': 'not a cursor!',
    empty: '',
    'first character flipped': flipped,
    truncated: real.slice(0, -4),
    'byte appended': `${real}A`,
    'standard base64 with padding': Buffer.from(JSON.stringify([list, at, id])).toString('base64'),
    'plain JSON': JSON.stringify([list, at, id]),
    'other list': encode(['audit', at, id]),
    'no list': encode([at, id]),
    '30 February': encode([list, '2025-02-30T00:00:00.000000Z', id]),
    'year 0': encode([list, '0000-01-01T00:00:00.000000Z', id]),
    'millisecond key': encode([list, '2025-01-01T00:00:00.000Z', id]),
    'id not a uuid': encode([list, at, `${id}' OR '1'='1`]),
    'extra member': encode([list, at, id, 'x']),
    'object instead of array': encode({ list, at, id }),
    'spaced JSON': Buffer.from(`["${list}", "${at}", "${id}"]`).toString('base64url'),
  };
  for (const [why, cursor] of Object.entries(bad)) {
    const res = await svc.tenant.incidents({ query: { cursor } });
    assert.deepEqual([res.status, problemCode(res)], [400, 'invalid_cursor'], why);
  }
  const audit = await svc.tenant.audit({ query: { cursor: real } });
  assert.deepEqual([audit.status, problemCode(audit)], [400, 'invalid_cursor'], 'incidents cursor');
  const forged = encode(['audit', at, randomUUID()]);
  assert.equal((await svc.tenant.audit({ query: { cursor: forged } })).status, 200);
});

test('§4.3 bad list parameters are 400 validation_failed naming the parameter', async () => {
  const cases: [string, Promise<{ status: number; body: unknown }>, string][] = [
    ['limit 0', svc.tenant.incidents({ query: { limit: 0 } }), '/query/limit'],
    ['limit 201', svc.tenant.audit({ query: { limit: 201 } }), '/query/limit'],
    ['limit abc', svc.tenant.incidents({ query: { limit: 'abc' as never } }), '/query/limit'],
    ['status', svc.tenant.incidents({ query: { status: 'deleted' as never } }), '/query/status'],
    [
      'severity',
      svc.tenant.incidents({ query: { severity: 'urgent' as never } }),
      '/query/severity',
    ],
    ['since', svc.tenant.audit({ query: { since: 'yesterday' } }), '/query/since'],
    ['action', svc.tenant.audit({ query: { action: "x' OR 1=1" } }), '/query/action'],
    ['days 0', svc.tenant.reports({ query: { days: 0 } }), '/query/days'],
    ['days 91', svc.tenant.reports({ query: { days: 91 } }), '/query/days'],
    ['long cursor', svc.tenant.audit({ query: { cursor: 'A'.repeat(513) } }), '/query/cursor'],
  ];
  for (const [why, pending, path] of cases) {
    const res = await pending;
    assert.deepEqual([res.status, problemCode(res)], [400, 'validation_failed'], why);
    assert.ok(errorPaths(res).includes(path), `${why}: ${errorPaths(res).join()}`);
  }
});

test('§4.3 reports: daily rollups over `days` UTC days (default 7, max 90), top ten rules and IOCs', async () => {
  const week = await svc.tenant.reports();
  assert.ok(week.status === 200);
  assertMatches(tenantContract.reports.responses[200], week.body, 'reports');
  const day = (n: number) => utcDay(n).slice(0, 10);
  assert.deepEqual(
    { days: week.body.days, from: week.body.from, to: week.body.to },
    { days: 7, from: day(6), to: day(0) },
  );
  assert.deepEqual(
    week.body.daily,
    [6, 5, 4, 3, 2, 1, 0].map((n) => ({
      date: day(n),
      metrics:
        n === 0
          ? { 'alerts.ingested': 5, 'incidents.opened': 1 }
          : n === 1
            ? { 'alerts.ingested': 5 }
            : {},
    })),
  );
  assert.deepEqual(week.body.totals, { 'alerts.ingested': 10, 'incidents.opened': 1 });
  assert.deepEqual(
    week.body.top_rules.map((r) => [r.rule_id, r.fired]),
    [12, 11, 10, 9, 8, 7, 6, 5, 4, 3].map((i) => [`ALPHA-rule-${i}`, i]),
  );
  assert.deepEqual(
    week.body.top_iocs.map((i) => [i.ioc_value, i.hits, i.malicious_verdicts]),
    [
      ['alpha-3.example', 3, 2],
      ['alpha-2.example', 2, 1],
      ['alpha-1.example', 1, 0],
    ],
  );
  const month = await svc.tenant.reports({ query: { days: 30 } });
  assert.ok(month.status === 200);
  assert.equal(month.body.daily.length, 30);
  assert.deepEqual(month.body.totals, { 'alerts.ingested': 110, 'incidents.opened': 1 });
  const longest = await svc.tenant.reports({ query: { days: 90 } });
  assert.ok(longest.status === 200 && longest.body.daily.length === 90);
  assert.equal(longest.body.from, day(89));
});

test('§4.3 branding: the tenant row, or the install defaults when the tenant has none', async () => {
  const own = await svc.tenant.branding();
  assert.ok(own.status === 200);
  assertMatches(tenantContract.branding.responses[200], own.body, 'branding');
  const { updated_at, ...rest } = own.body;
  assert.ok(updated_at !== null && !Number.isNaN(Date.parse(updated_at)));
  assert.deepEqual(rest, {
    app_name: 'ALPHA Portal',
    logo_url: 'https://cdn.example/logo.png',
    primary_color: '#112233',
    secondary_color: '#abcdef',
    favicon: '',
    is_default: false,
  });
  const plain = await (await signedIn(api, c.viewer.email)).tenant.branding();
  assert.ok(plain.status === 200);
  assertMatches(tenantContract.branding.responses[200], plain.body, 'default branding');
  assert.deepEqual(plain.body, {
    app_name: 'svc',
    logo_url: null,
    primary_color: '#374151',
    secondary_color: '#9ca3af',
    favicon: '',
    is_default: true,
    updated_at: null,
  });
});
