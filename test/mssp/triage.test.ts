import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { SvcClient } from '../../contracts/index.ts';
import { impersonating, problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant, TENANT_ROW_FIXTURES } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';

let db: TestDatabase;
let api: TestApi;
let tenantA: string;
let tenantB: string;
let analyst: SvcClient;

async function reviewOf(tenantId: string): Promise<string> {
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    'SELECT id FROM pending_reviews WHERE tenant_id = $1 AND decision IS NULL LIMIT 1',
    [tenantId],
  );
  const id = rows[0]?.id;
  assert.ok(id);
  return id;
}

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  tenantA = await createTenant(db.pools.app, 'alpha');
  tenantB = await createTenant(db.pools.app, 'bravo');
  for (const t of [tenantA, tenantB]) {
    for (let i = 0; i < 3; i++)
      await db.app.withTenant(
        t,
        (tx) => TENANT_ROW_FIXTURES.pending_reviews?.(tx, t) ?? Promise.resolve(),
      );
  }
  analyst = await signedInAs({ db, api }, 'analyst');
});
after(async () => {
  await api.close();
  await db.drop();
});

test("§1.6 an analyst reads one tenant's incidents and review queue, never another's", async () => {
  const incidents = await analyst.mssp.tenantIncidents({
    params: { tenant_id: tenantA },
    query: { limit: 2 },
  });
  assert.equal(incidents.status, 200);
  const reviews = await analyst.mssp.tenantReviews({ params: { tenant_id: tenantA } });
  assert.equal(reviews.status, 200);
  if (reviews.status !== 200 || incidents.status !== 200) return;
  assert.equal(reviews.body.items.length, 3);
  assert.ok(incidents.body.next_cursor);
  const bRows = await db.pools.mssp.query<{ id: string }>(
    'SELECT id FROM investigations WHERE tenant_id = $1 UNION ALL SELECT id FROM pending_reviews WHERE tenant_id = $1',
    [tenantB],
  );
  const text = JSON.stringify([incidents.body, reviews.body]);
  for (const { id } of bRows.rows) assert.ok(!text.includes(id), `tenant B row ${id} leaked`);
});

test('§2.6 approving a review is audited as investigation.approve, visible to the tenant, and appends an event', async () => {
  const reviewId = await reviewOf(tenantA);
  const res = await analyst.mssp.approveReview({
    params: { tenant_id: tenantA, review_id: reviewId },
    body: { note: 'host isolated' },
  });
  assert.equal(res.status, 200);
  if (res.status === 200) assert.equal(res.body.review.decision, 'approved');
  const audit = await db.app.withTenant(tenantA, (tx) =>
    tx.query(
      `SELECT action, resource_id, after FROM audit_log WHERE action = 'investigation.approve'`,
    ),
  );
  assert.deepEqual(audit.rows, [
    {
      action: 'investigation.approve',
      resource_id: reviewId,
      after: { decision: 'approved', note: 'host isolated' },
    },
  ]);
  const event = await db.app.withTenant(tenantA, (tx) =>
    tx.query(`SELECT type FROM events WHERE type = 'review.approved'`),
  );
  assert.equal(event.rowCount, 1);
  const twice = await analyst.mssp.rejectReview({
    params: { tenant_id: tenantA, review_id: reviewId },
    body: { note: 'changed my mind' },
  });
  assert.deepEqual([twice.status, problemCode(twice)], [409, 'review_closed']);
});

test("§9.5.5 a review of tenant B cannot be decided through tenant A's path", async () => {
  const reviewOfB = await reviewOf(tenantB);
  const res = await analyst.mssp.approveReview({
    params: { tenant_id: tenantA, review_id: reviewOfB },
    body: { note: 'cross' },
  });
  assert.deepEqual([res.status, problemCode(res)], [404, 'review_not_found']);
  const still = await db.pools.mssp.query('SELECT decision FROM pending_reviews WHERE id = $1', [
    reviewOfB,
  ]);
  assert.deepEqual(still.rows, [{ decision: null }]);
});

test('§5.2 with an impersonation token for A, decisions carry acting_as; B is out of reach', async () => {
  const asA = await impersonating(api, analyst, tenantA, 'queue duty');
  const reviewId = await reviewOf(tenantA);
  const res = await asA.mssp.rejectReview({
    params: { tenant_id: tenantA, review_id: reviewId },
    body: { note: 'false positive' },
  });
  assert.equal(res.status, 200);
  const audit = await db.app.withTenant(tenantA, (tx) =>
    tx.query(
      `SELECT acting_as FROM audit_log WHERE action = 'investigation.reject' AND resource_id = $1`,
      [reviewId],
    ),
  );
  assert.deepEqual(audit.rows, [{ acting_as: tenantA }]);
  const b = await asA.mssp.tenantReviews({ params: { tenant_id: tenantB } });
  assert.deepEqual([b.status, problemCode(b)], [403, 'outside_impersonated_tenant']);
});

test('§4 bad decision input is refused and writes nothing', async () => {
  const reviewId = await reviewOf(tenantA);
  const bad = [
    await analyst.mssp.approveReview({
      params: { tenant_id: tenantA, review_id: reviewId },
      body: { note: '' },
    }),
    await analyst.mssp.approveReview({
      params: { tenant_id: tenantA, review_id: reviewId },
      body: { note: 'x', decision: 'rejected' } as never,
    }),
    await analyst.mssp.approveReview({
      params: { tenant_id: tenantA, review_id: 'nope' },
      body: { note: 'x' },
    }),
  ];
  for (const res of bad)
    assert.deepEqual([res.status, problemCode(res)], [400, 'validation_failed']);
  const still = await db.pools.mssp.query('SELECT decision FROM pending_reviews WHERE id = $1', [
    reviewId,
  ]);
  assert.deepEqual(still.rows, [{ decision: null }]);
});
