import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { SvcClient } from '../../contracts/index.ts';
import { problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';

/**
 * docs/investigations.md "Queues": the MSSP incident lists filter by assignee ("assigned to
 * me", "unassigned"), state, severity, tenant and age, and every list and queue pages with a
 * keyset cursor past any size (no cap at 500).
 */
let db: TestDatabase;
let api: TestApi;
let alpha: string;
let bravo: string;
let analyst: SvcClient;
let analystId: string;
let colleagueId: string;

const T0 = Date.parse('2026-06-01T00:00:00Z');
const STATUSES = ['open', 'triaging', 'awaiting_review', 'resolved', 'closed'] as const;
const SEVERITIES = ['info', 'low', 'medium', 'high', 'critical'] as const;
const N = 530;

async function userId(email: string): Promise<string> {
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    'SELECT id FROM users WHERE email = $1',
    [email],
  );
  assert.ok(rows[0]);
  return rows[0].id;
}

/**
 * N investigations: every 3rd assigned to the analyst, every 3rd to a colleague, the rest
 * unassigned; statuses and severities cycle; one opened per hour, a few sharing an instant.
 */
async function seed(tenantId: string): Promise<void> {
  await db.app.withTenant(tenantId, (tx) =>
    tx.query(
      `INSERT INTO investigations (tenant_id, title, status, severity, opened_at, assignee_id)
       SELECT $1, 'Incident ' || n, ($2::text[])[1 + n % 5], ($3::text[])[1 + (n / 5) % 5],
              $4::timestamptz + make_interval(hours => n - n % 7),
              CASE n % 3 WHEN 0 THEN $5::uuid WHEN 1 THEN $6::uuid END
         FROM generate_series(1, $7::int) AS n`,
      [tenantId, STATUSES, SEVERITIES, new Date(T0), analystId, colleagueId, N],
    ),
  );
}

type ListQuery = {
  status?: (typeof STATUSES)[number];
  severity?: (typeof SEVERITIES)[number];
  assignee?: 'me' | 'none';
  opened_after?: string;
  opened_before?: string;
};

async function tenantPages(tenantId: string, query: ListQuery, limit = 200): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 50; pages++) {
    const res = await analyst.mssp.tenantIncidents({
      params: { tenant_id: tenantId },
      query: { ...query, limit, ...(cursor ? { cursor } : {}) },
    });
    assert.equal(res.status, 200);
    if (res.status !== 200) break;
    assert.ok(res.body.items.length <= limit);
    ids.push(...res.body.items.map((i) => i.id));
    if (res.body.next_cursor === null) return ids;
    cursor = res.body.next_cursor;
  }
  assert.fail('the list never ended');
}

async function fleetPages(query: ListQuery & { tenant_id?: string }): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 50; pages++) {
    const res = await analyst.mssp.allIncidents({
      query: { ...query, limit: 200, ...(cursor ? { cursor } : {}) },
    });
    assert.equal(res.status, 200);
    if (res.status !== 200) break;
    ids.push(...res.body.items.map((i) => i.id));
    if (res.body.next_cursor === null) return ids;
    cursor = res.body.next_cursor;
  }
  assert.fail('the list never ended');
}

async function expected(where: string, values: unknown[]): Promise<string[]> {
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    `SELECT id FROM investigations WHERE ${where} ORDER BY opened_at DESC, id DESC`,
    values,
  );
  return rows.map((r) => r.id);
}

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  alpha = await createTenant(db.pools.app, 'alpha');
  bravo = await createTenant(db.pools.app, 'bravo');
  analyst = await signedInAs({ db, api }, 'analyst', { email: 'queue@mssp.test' });
  analystId = await userId('queue@mssp.test');
  await signedInAs({ db, api }, 'analyst', { email: 'other@mssp.test' });
  colleagueId = await userId('other@mssp.test');
  await seed(alpha);
  await seed(bravo);
});
after(async () => {
  await api.close();
  await db.drop();
});

test("§2.2 one tenant's incident list and the cross-tenant one page past 500, newest opened first, every row once", async () => {
  const ids = await tenantPages(alpha, {});
  assert.equal(ids.length, N);
  assert.deepEqual(ids, await expected('tenant_id = $1', [alpha]));
  const all = await fleetPages({});
  assert.equal(all.length, 2 * N);
  assert.deepEqual(all, await expected('TRUE', []));
});

test('§2.2 filters: assigned to me, unassigned, state, severity and age, on one tenant and across tenants', async () => {
  assert.deepEqual(
    await tenantPages(alpha, { assignee: 'me' }, 50),
    await expected('tenant_id = $1 AND assignee_id = $2', [alpha, analystId]),
  );
  assert.deepEqual(
    await tenantPages(alpha, { assignee: 'none' }, 50),
    await expected('tenant_id = $1 AND assignee_id IS NULL', [alpha]),
  );
  assert.deepEqual(
    await tenantPages(alpha, { status: 'closed', severity: 'high' }, 7),
    await expected(`tenant_id = $1 AND status = 'closed' AND severity = 'high'`, [alpha]),
  );
  const after = new Date(T0 + 100 * 3_600_000).toISOString();
  const before = new Date(T0 + 300 * 3_600_000).toISOString();
  const aged = await tenantPages(alpha, { opened_after: after, opened_before: before }, 40);
  assert.deepEqual(
    aged,
    await expected('tenant_id = $1 AND opened_at >= $2 AND opened_at < $3', [alpha, after, before]),
  );
  assert.ok(aged.length > 0 && aged.length < N);

  const mine = await fleetPages({ assignee: 'me' });
  assert.deepEqual(new Set(mine), new Set(await expected('assignee_id = $1', [analystId])));
  assert.ok(mine.length > 300, 'both tenants, past one page');
  assert.deepEqual(
    await fleetPages({ assignee: 'none', tenant_id: bravo, severity: 'low' }),
    await expected(`tenant_id = $1 AND assignee_id IS NULL AND severity = 'low'`, [bravo]),
  );
});

test('§4 bad list filters are 400 validation_failed', async () => {
  for (const query of [
    { assignee: 'someone' },
    { opened_after: 'yesterday' },
    { opened_before: '2026-02-30T00:00:00Z' },
    { status: 'done' },
  ]) {
    const res = await analyst.mssp.tenantIncidents({
      params: { tenant_id: alpha },
      query: query as never,
    });
    assert.deepEqual(
      [res.status, problemCode(res)],
      [400, 'validation_failed'],
      JSON.stringify(query),
    );
    const fleet = await analyst.mssp.allIncidents({ query: query as never });
    assert.deepEqual([fleet.status, problemCode(fleet)], [400, 'validation_failed']);
  }
});

test("§2.2 one tenant's review queue pages past 500, oldest first, and refuses another list's cursor", async () => {
  await db.app.withTenant(alpha, (tx) =>
    tx.query(
      `INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, rationale, risk,
         requested_by, requested_at)
       SELECT $1, (SELECT id FROM investigations WHERE tenant_id = $1 ORDER BY id LIMIT 1),
              'block_ip', 'bulk', 'low', 'worker:triage',
              $2::timestamptz + make_interval(secs => n - n % 3)
         FROM generate_series(1, 520) AS n`,
      [alpha, new Date(T0)],
    ),
  );
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 20; pages++) {
    const res = await analyst.mssp.tenantReviews({
      params: { tenant_id: alpha },
      query: { limit: 200, ...(cursor ? { cursor } : {}) },
    });
    assert.equal(res.status, 200);
    if (res.status !== 200) return;
    ids.push(...res.body.items.map((r) => r.id));
    if (res.body.next_cursor === null) break;
    cursor = res.body.next_cursor;
  }
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    `SELECT id FROM pending_reviews WHERE tenant_id = $1 AND decision IS NULL
      ORDER BY requested_at, id`,
    [alpha],
  );
  assert.equal(ids.length, 520);
  assert.deepEqual(
    ids,
    rows.map((r) => r.id),
  );
  const incidents = await analyst.mssp.tenantIncidents({
    params: { tenant_id: alpha },
    query: { limit: 1 },
  });
  assert.ok(incidents.status === 200 && incidents.body.next_cursor);
  const foreign = await analyst.mssp.tenantReviews({
    params: { tenant_id: alpha },
    query: { cursor: incidents.body.next_cursor },
  });
  assert.deepEqual([foreign.status, problemCode(foreign)], [400, 'invalid_cursor']);
});
