import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { SvcClient } from '../../contracts/index.ts';
import { DEFAULT_TRIAGE_POLICY, type TriagePolicy } from '../../contracts/triage-policy.ts';
import { impersonating, problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';

// Issue 13: the triage policy an MSSP sets per tenant (GET/PUT
// /api/mssp/tenants/{tenant_id}/triage-policy) and the tenant's LLM usage per day
// (GET …/llm-usage); spec §5.8 for who may do what, §2.6 for the audit row.

let db: TestDatabase;
let api: TestApi;
let tenantA: string;
let tenantB: string;
let admin: SvcClient;
let analyst: SvcClient;
let customer: SvcClient;

const POLICY: TriagePolicy = {
  auto_close_below_level: 5,
  always_escalate_rule_groups: ['authentication_failures'],
  redaction: { ips: true, custom: [{ name: 'ticket', pattern: 'TCK-\\d{4,}' }] },
  daily_budget: { tokens: 200_000 },
};

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  tenantA = await createTenant(db.pools.app, 'policy-a');
  tenantB = await createTenant(db.pools.app, 'policy-b');
  admin = await signedInAs({ db, api }, 'mssp_admin');
  analyst = await signedInAs({ db, api }, 'analyst');
  customer = await signedInAs({ db, api }, 'customer_viewer', { tenantId: tenantA });
});
after(async () => {
  await api.close();
  await db.drop();
});

async function storedPolicies(tenantId: string) {
  const { rows } = await db.pools.mssp.query<{ policy: unknown }>(
    'SELECT policy FROM triage_policies WHERE tenant_id = $1',
    [tenantId],
  );
  return rows;
}

async function policyAudits(tenantId: string) {
  const { rows } = await db.pools.mssp.query<{
    actor_id: string;
    resource_id: string;
    before: unknown;
    after: unknown;
    acting_as: string | null;
  }>(
    `SELECT actor_id, resource_id, before, after, acting_as FROM audit_log
      WHERE tenant_id = $1 AND action = 'settings.update' AND resource_type = 'triage_policy'
      ORDER BY "timestamp", id`,
    [tenantId],
  );
  return rows;
}

test('issue 13 a tenant without a policy reads the defaults', async () => {
  const res = await analyst.mssp.getTriagePolicy({ params: { tenant_id: tenantB } });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.deepEqual(res.body, { policy: DEFAULT_TRIAGE_POLICY, stored: null, updated_at: null });
});

test('§2.6 PUT stores the policy, GET reads it back over the defaults, settings.update is audited', async () => {
  const me = await admin.auth.me();
  assert.equal(me.status, 200);
  const adminId = me.status === 200 ? me.body.identity.user_id : '';
  const put = await admin.mssp.putTriagePolicy({ params: { tenant_id: tenantA }, body: POLICY });
  assert.equal(put.status, 200);
  const expected = {
    ...DEFAULT_TRIAGE_POLICY,
    auto_close_below_level: 5,
    always_escalate_rule_groups: ['authentication_failures'],
    redaction: { ...DEFAULT_TRIAGE_POLICY.redaction, ips: true, custom: POLICY.redaction?.custom },
    daily_budget: { tokens: 200_000, cost_usd: null },
  };
  const got = await analyst.mssp.getTriagePolicy({ params: { tenant_id: tenantA } });
  assert.equal(got.status, 200);
  if (got.status !== 200 || put.status !== 200) return;
  assert.deepEqual(got.body.policy, expected);
  assert.deepEqual(got.body.stored, POLICY);
  assert.ok(got.body.updated_at);
  assert.deepEqual(put.body, got.body);
  assert.deepEqual(await policyAudits(tenantA), [
    { actor_id: adminId, resource_id: tenantA, before: null, after: POLICY, acting_as: null },
  ]);

  // A second PUT replaces the whole policy; its audit row shows what it replaced.
  const second = await admin.mssp.putTriagePolicy({
    params: { tenant_id: tenantA },
    body: { min_confidence: 0.9 },
  });
  assert.equal(second.status, 200);
  if (second.status === 200) {
    assert.deepEqual(second.body.policy, { ...DEFAULT_TRIAGE_POLICY, min_confidence: 0.9 });
  }
  const audits = await policyAudits(tenantA);
  assert.equal(audits.length, 2);
  assert.deepEqual([audits[1]?.before, audits[1]?.after], [POLICY, { min_confidence: 0.9 }]);
});

test('§5.8 an analyst may read but not change a policy; nothing is written', async () => {
  const res = await analyst.mssp.putTriagePolicy({ params: { tenant_id: tenantB }, body: POLICY });
  assert.deepEqual([res.status, problemCode(res)], [403, 'forbidden']);
  assert.deepEqual(await storedPolicies(tenantB), []);
  assert.deepEqual(await policyAudits(tenantB), []);
});

test('§4 a customer gets wrong_family on the MSSP policy and usage routes, even for its own tenant', async () => {
  const calls = [
    await customer.mssp.getTriagePolicy({ params: { tenant_id: tenantA } }),
    await customer.mssp.putTriagePolicy({ params: { tenant_id: tenantA }, body: {} }),
    await customer.mssp.llmUsage({ params: { tenant_id: tenantA }, query: {} }),
  ];
  for (const res of calls) assert.deepEqual([res.status, problemCode(res)], [403, 'wrong_family']);
});

test('issue 13 a custom pattern that does not compile or matches the empty string is 422 invalid_policy; nothing written', async () => {
  const res = await admin.mssp.putTriagePolicy({
    params: { tenant_id: tenantB },
    body: {
      redaction: {
        custom: [
          { name: 'ok', pattern: 'ACME-[0-9]+' },
          { name: 'broken', pattern: '(unclosed' },
          { name: 'empty', pattern: 'x*' },
        ],
      },
    },
  });
  assert.deepEqual([res.status, problemCode(res)], [422, 'invalid_policy']);
  const errors = (res.body as { errors?: Array<{ path: string }> }).errors ?? [];
  assert.deepEqual(
    errors.map((e) => e.path),
    ['/redaction/custom/1/pattern', '/redaction/custom/2/pattern'],
  );
  assert.deepEqual(await storedPolicies(tenantB), []);
  assert.deepEqual(await policyAudits(tenantB), []);
});

test('§4 a policy outside the schema is 400 validation_failed; nothing written', async () => {
  const bad = [
    { auto_close_below_level: 17 },
    { daily_budget: { tokens: -1 } },
    { unknown_rule: true },
    { redaction: { custom: [{ name: 'Bad Name', pattern: 'x' }] } },
  ];
  for (const body of bad) {
    const res = await admin.mssp.putTriagePolicy({
      params: { tenant_id: tenantB },
      body: body as TriagePolicy,
    });
    assert.deepEqual(
      [res.status, problemCode(res)],
      [400, 'validation_failed'],
      JSON.stringify(body),
    );
  }
  assert.deepEqual(await storedPolicies(tenantB), []);
});

test('issue 13 a tenant that does not exist is 404 tenant_not_found', async () => {
  const missing = '00000000-0000-4000-8000-000000000000';
  const calls = [
    await analyst.mssp.getTriagePolicy({ params: { tenant_id: missing } }),
    await admin.mssp.putTriagePolicy({ params: { tenant_id: missing }, body: {} }),
    await analyst.mssp.llmUsage({ params: { tenant_id: missing }, query: {} }),
  ];
  for (const res of calls)
    assert.deepEqual([res.status, problemCode(res)], [404, 'tenant_not_found']);
});

test("§5.2 an impersonation token for A changes A's policy with acting_as, and never B's", async () => {
  const asA = await impersonating(api, admin, tenantA, 'policy review');
  const own = await asA.mssp.putTriagePolicy({
    params: { tenant_id: tenantA },
    body: { analyzers: ['VirusTotal_GetReport_3_1'] },
  });
  assert.equal(own.status, 200);
  assert.equal((await policyAudits(tenantA)).at(-1)?.acting_as, tenantA);
  const other = await asA.mssp.putTriagePolicy({ params: { tenant_id: tenantB }, body: POLICY });
  assert.deepEqual([other.status, problemCode(other)], [403, 'outside_impersonated_tenant']);
  const read = await asA.mssp.getTriagePolicy({ params: { tenant_id: tenantB } });
  assert.deepEqual([read.status, problemCode(read)], [403, 'outside_impersonated_tenant']);
  const usage = await asA.mssp.llmUsage({ params: { tenant_id: tenantB }, query: {} });
  assert.deepEqual([usage.status, problemCode(usage)], [403, 'outside_impersonated_tenant']);
  assert.deepEqual(await storedPolicies(tenantB), []);
});

test("issue 13 llm-usage lists the tenant's days newest first, zeros for quiet days, with its budget", async () => {
  const today = api.clock.now().toISOString().slice(0, 10);
  await db.app.withTenant(tenantA, (tx) =>
    tx.query(
      `INSERT INTO llm_usage (tenant_id, day, input_tokens, output_tokens, cost_usd, calls,
                              cache_hits, cache_misses, refused_over_budget)
       VALUES ($1, $2::date, 1200, 300, 0.0125, 4, 2, 4, 1),
              ($1, $2::date - 2, 50, 10, 0, 1, 0, 1, 0),
              ($1, $2::date - 30, 9, 9, 0, 1, 0, 1, 0)`,
      [tenantA, today],
    ),
  );
  await db.app.withTenant(tenantB, (tx) =>
    tx.query(
      `INSERT INTO llm_usage (tenant_id, day, input_tokens, calls) VALUES ($1, $2::date, 777, 7)`,
      [tenantB, today],
    ),
  );
  const res = await analyst.mssp.llmUsage({ params: { tenant_id: tenantA }, query: { days: 3 } });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  const zero = {
    input_tokens: 0,
    output_tokens: 0,
    cost_usd: 0,
    reserved_tokens: 0,
    calls: 0,
    cache_hits: 0,
    cache_misses: 0,
    refused_over_budget: 0,
  };
  const day = (offset: number) =>
    new Date(Date.parse(`${today}T00:00:00Z`) - offset * 86_400_000).toISOString().slice(0, 10);
  assert.deepEqual(res.body.days, [
    {
      ...zero,
      day: today,
      input_tokens: 1200,
      output_tokens: 300,
      cost_usd: 0.0125,
      calls: 4,
      cache_hits: 2,
      cache_misses: 4,
      refused_over_budget: 1,
    },
    { ...zero, day: day(1) },
    { ...zero, day: day(2), input_tokens: 50, output_tokens: 10, calls: 1, cache_misses: 1 },
  ]);
  assert.deepEqual(res.body.daily_budget, { tokens: null, cost_usd: null });
  const week = await analyst.mssp.llmUsage({ params: { tenant_id: tenantA }, query: {} });
  assert.equal(week.status === 200 && week.body.days.length, 7);
  const tooMany = await analyst.mssp.llmUsage({
    params: { tenant_id: tenantA },
    query: { days: 91 },
  });
  assert.deepEqual([tooMany.status, problemCode(tooMany)], [400, 'validation_failed']);
});
