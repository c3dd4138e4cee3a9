import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { SvcClient } from '../../contracts/index.ts';
import { impersonating, problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';

/**
 * Issue 14 "incidents across tenants and per tenant; the review queue": `GET /api/mssp/incidents`
 * and `GET /api/mssp/reviews` read every tenant through the system gate (spec §4 rule 2).
 */
let db: TestDatabase;
let api: TestApi;
let alpha: string;
let bravo: string;
let gone: string;
/** An open review of the soft-deleted tenant: in no cross-tenant queue. */
let ofGone: string;
let analyst: SvcClient;

const STATUSES = ['open', 'triaging', 'resolved'] as const;
const SEVERITIES = ['high', 'low'] as const;
/** Both tenants open incidents at the same minutes: ties across tenants fall to the id. */
const T0 = Date.parse('2026-03-01T08:00:00Z');

async function seedIncidents(tenantId: string, n: number, prefix: string): Promise<void> {
  await db.app.withTenant(tenantId, async (tx) => {
    for (let i = 0; i < n; i++) {
      await tx.query(
        `INSERT INTO investigations (tenant_id, title, status, severity, opened_at)
         VALUES ($1, $2, $3, $4, $5)`,
        [
          tenantId,
          `${prefix} ${i}`,
          STATUSES[i % STATUSES.length],
          SEVERITIES[i % SEVERITIES.length],
          new Date(T0 + (i % 4) * 60_000),
        ],
      );
    }
  });
}

async function seedReview(tenantId: string, requestedAt: Date, action: string): Promise<string> {
  return db.app.withTenant(tenantId, async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, rationale, risk,
         requested_by, requested_at)
       SELECT $1, id, $2, 'Beaconing to known C2', 'high', 'worker:triage', $3
         FROM investigations WHERE tenant_id = $1 ORDER BY id LIMIT 1
       RETURNING id`,
      [tenantId, action, requestedAt],
    );
    const id = rows[0]?.id;
    assert.ok(id);
    return id;
  });
}

/** What the list must show, straight from the table (no soft-deleted tenant). */
async function expected(where = 'TRUE', values: unknown[] = []): Promise<string[]> {
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    `SELECT i.id FROM investigations i JOIN tenants t ON t.id = i.tenant_id
      WHERE t.state <> 'soft-deleted' AND ${where}
      ORDER BY i.opened_at DESC, i.id DESC`,
    values,
  );
  return rows.map((r) => r.id);
}

/** Every page of the cross-tenant list, following next_cursor to the end. */
async function allPages(
  client: SvcClient,
  query: { status?: 'open'; severity?: 'low'; tenant_id?: string; limit: number },
): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const res = await client.mssp.allIncidents({
      query: { ...query, ...(cursor ? { cursor } : {}) },
    });
    assert.equal(res.status, 200);
    if (res.status !== 200) break;
    assert.ok(res.body.items.length <= query.limit);
    ids.push(...res.body.items.map((i) => i.id));
    if (res.body.next_cursor === null) return ids;
    cursor = res.body.next_cursor;
  }
  assert.fail('the list never ended');
}

async function gateEntries(reason: string): Promise<Array<{ request_id: string | null }>> {
  const { rows } = await db.pools.mssp.query<{ request_id: string | null }>(
    `SELECT request_id FROM audit_log WHERE actor_id = $1 ORDER BY "timestamp"`,
    [`system:${reason}`],
  );
  return rows;
}

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  alpha = await createTenant(db.pools.app, 'alpha');
  bravo = await createTenant(db.pools.app, 'bravo');
  gone = await createTenant(db.pools.app, 'gone');
  await seedIncidents(alpha, 7, 'Alpha incident');
  await seedIncidents(bravo, 6, 'Bravo incident');
  await seedIncidents(gone, 2, 'Gone incident');
  ofGone = await seedReview(gone, new Date(T0 - 9_000_000), 'isolate_host');
  await db.pools.app.query(
    `UPDATE tenants SET state = 'soft-deleted', deleted_at = now() WHERE id = $1`,
    [gone],
  );
  analyst = await signedInAs({ db, api }, 'analyst');
});
after(async () => {
  await api.close();
  await db.drop();
});

test('issue 14: every tenant’s incidents in one list, newest opened first, each with its tenant id and slug', async () => {
  const res = await analyst.mssp.allIncidents({ query: { limit: 200 } });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.deepEqual(
    res.body.items.map((i) => i.id),
    await expected(),
  );
  assert.equal(res.body.next_cursor, null);
  const slugOf = new Map([
    [alpha, 'alpha'],
    [bravo, 'bravo'],
  ]);
  for (const item of res.body.items) {
    assert.equal(item.tenant_slug, slugOf.get(item.tenant_id), item.title);
    assert.ok(item.title.startsWith(item.tenant_slug === 'alpha' ? 'Alpha' : 'Bravo'));
  }
  assert.deepEqual(new Set(res.body.items.map((i) => i.tenant_slug)), new Set(['alpha', 'bravo']));
  assert.ok(!JSON.stringify(res.body).includes('Gone incident'), 'a soft-deleted tenant is out');
});

test('issue 14: pages of the cross-tenant list show every incident once, ties across tenants included', async () => {
  for (const limit of [1, 2, 5]) {
    const ids = await allPages(analyst, { limit });
    assert.deepEqual(ids, await expected(), `pages of ${limit}`);
  }
});

test('issue 14: status, severity and tenant_id filter the cross-tenant list, paged as well', async () => {
  assert.deepEqual(
    await allPages(analyst, { status: 'open', limit: 2 }),
    await expected(`i.status = 'open'`),
  );
  assert.deepEqual(
    await allPages(analyst, { severity: 'low', limit: 3 }),
    await expected(`i.severity = 'low'`),
  );
  const onlyBravo = await allPages(analyst, { tenant_id: bravo, status: 'open', limit: 1 });
  assert.deepEqual(onlyBravo, await expected(`i.tenant_id = $1 AND i.status = 'open'`, [bravo]));
  assert.ok(onlyBravo.length > 0);
  assert.deepEqual(await allPages(analyst, { tenant_id: gone, limit: 5 }), []);
});

test('§4 rule 2 each cross-tenant read enters the system gate once, audited as System with its reason and the request id', async () => {
  const before = await gateEntries('mssp.incidents');
  const res = await analyst.mssp.allIncidents({ query: { limit: 3 } });
  assert.equal(res.status, 200);
  const entries = await gateEntries('mssp.incidents');
  assert.equal(entries.length, before.length + 1);
  assert.equal(entries.at(-1)?.request_id, res.headers.get('x-request-id'));

  const reviewsBefore = await gateEntries('mssp.reviews');
  const reviews = await analyst.mssp.allReviews();
  assert.equal(reviews.status, 200);
  const reviewEntries = await gateEntries('mssp.reviews');
  assert.equal(reviewEntries.length, reviewsBefore.length + 1);
  assert.equal(reviewEntries.at(-1)?.request_id, reviews.headers.get('x-request-id'));
  const { rows } = await db.pools.mssp.query(
    `SELECT DISTINCT tenant_id, actor_principal, action, resource_type, resource_id
       FROM audit_log WHERE actor_id IN ('system:mssp.incidents', 'system:mssp.reviews')
      ORDER BY resource_id`,
  );
  assert.deepEqual(rows, [
    {
      tenant_id: null,
      actor_principal: 'System',
      action: 'system.enter',
      resource_type: 'system_context',
      resource_id: 'mssp.incidents',
    },
    {
      tenant_id: null,
      actor_principal: 'System',
      action: 'system.enter',
      resource_type: 'system_context',
      resource_id: 'mssp.reviews',
    },
  ]);
});

test('issue 14: the review queue across tenants, oldest first with slugs; a decision by the row’s tenant takes it off', async () => {
  const first = await seedReview(bravo, new Date(T0 - 3_600_000), 'isolate_host');
  const second = await seedReview(alpha, new Date(T0 - 1_800_000), 'block_ip');
  const third = await seedReview(bravo, new Date(T0), 'close_investigation');
  const decided = await seedReview(alpha, new Date(T0 - 7_200_000), 'block_ip');
  await db.app.withTenant(alpha, (tx) =>
    tx.query(`UPDATE pending_reviews SET decision = 'approved', decided_at = now() WHERE id = $1`, [
      decided,
    ]),
  );

  const res = await analyst.mssp.allReviews();
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.deepEqual(
    res.body.items.map((r) => [r.id, r.tenant_id, r.tenant_slug, r.proposed_action]),
    [
      [first, bravo, 'bravo', 'isolate_host'],
      [second, alpha, 'alpha', 'block_ip'],
      [third, bravo, 'bravo', 'close_investigation'],
    ],
  );
  assert.ok(!res.body.items.some((r) => r.id === decided || r.id === ofGone));

  const row = res.body.items[1];
  assert.ok(row);
  const approved = await analyst.mssp.approveReview({
    params: { tenant_id: row.tenant_id, review_id: row.id },
    body: { note: 'blocked at the edge' },
  });
  assert.equal(approved.status, 200);
  const after = await analyst.mssp.allReviews();
  assert.equal(after.status, 200);
  if (after.status === 200)
    assert.deepEqual(
      after.body.items.map((r) => r.id),
      [first, third],
    );
});

test('§4 a customer on the cross-tenant lists is 403 wrong_family', async () => {
  const customer = await signedInAs({ db, api }, 'customer_viewer', { tenantId: alpha });
  const incidents = await customer.mssp.allIncidents({ query: {} });
  const reviews = await customer.mssp.allReviews();
  assert.deepEqual(
    [incidents.status, problemCode(incidents), reviews.status, problemCode(reviews)],
    [403, 'wrong_family', 403, 'wrong_family'],
  );
});

test('§5.2 an impersonation token is refused on the cross-tenant lists, even naming its own tenant, before the gate', async () => {
  const asAlpha = await impersonating(api, analyst, alpha, 'queue duty');
  const before = [await gateEntries('mssp.incidents'), await gateEntries('mssp.reviews')];
  const answers = [
    await asAlpha.mssp.allIncidents({ query: {} }),
    await asAlpha.mssp.allIncidents({ query: { tenant_id: alpha } }),
    await asAlpha.mssp.allReviews(),
  ];
  assert.deepEqual(
    answers.map((r) => [r.status, problemCode(r)]),
    Array(3).fill([403, 'outside_impersonated_tenant']),
  );
  assert.deepEqual(
    [await gateEntries('mssp.incidents'), await gateEntries('mssp.reviews')],
    before,
  );
});

test('§4 a bad query on the cross-tenant incident list is 400 and enters no gate', async () => {
  const before = await gateEntries('mssp.incidents');
  const bad = [
    { status: 'bogus' },
    { severity: 'HIGH' },
    { tenant_id: 'not-a-uuid' },
    { limit: 0 },
    { limit: 201 },
    { tenant: alpha },
  ];
  for (const query of bad) {
    const res = await analyst.mssp.allIncidents({ query: query as never });
    assert.deepEqual(
      [res.status, problemCode(res)],
      [400, 'validation_failed'],
      JSON.stringify(query),
    );
  }
  const perTenant = await analyst.mssp.tenantIncidents({
    params: { tenant_id: alpha },
    query: { limit: 1 },
  });
  assert.equal(perTenant.status, 200);
  const foreignCursor = perTenant.status === 200 ? perTenant.body.next_cursor : null;
  assert.ok(foreignCursor);
  const res = await analyst.mssp.allIncidents({ query: { cursor: foreignCursor } });
  assert.deepEqual([res.status, problemCode(res)], [400, 'invalid_cursor']);
  assert.deepEqual(await gateEntries('mssp.incidents'), before);
});

test('issue 14: the cross-tenant review queue pages past 500, oldest first, every open review once', async () => {
  await db.app.withTenant(alpha, (tx) =>
    tx.query(
      `INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, rationale, risk,
         requested_by, requested_at)
       SELECT $1, (SELECT id FROM investigations WHERE tenant_id = $1 ORDER BY id LIMIT 1),
              'block_ip', 'bulk', 'low', 'worker:triage', $2::timestamptz + make_interval(secs => n)
         FROM generate_series(1, 520) AS n`,
      [alpha, new Date(T0)],
    ),
  );
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 20; pages++) {
    const res = await analyst.mssp.allReviews({
      query: { limit: 200, ...(cursor ? { cursor } : {}) },
    });
    assert.equal(res.status, 200);
    if (res.status !== 200) return;
    assert.ok(res.body.items.length <= 200);
    ids.push(...res.body.items.map((r) => r.id));
    if (res.body.next_cursor === null) break;
    cursor = res.body.next_cursor;
  }
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    `SELECT r.id FROM pending_reviews r JOIN tenants t ON t.id = r.tenant_id
      WHERE r.decision IS NULL AND t.state <> 'soft-deleted'
      ORDER BY r.requested_at, r.id`,
  );
  assert.ok(rows.length > 520);
  assert.deepEqual(
    ids,
    rows.map((r) => r.id),
  );
});
