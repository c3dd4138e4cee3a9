import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import type { TriagePolicy } from '../../contracts/triage-policy.ts';
import { createLlmService, type LlmServiceDeps } from '../../src/domains/llm/llm-service.ts';
import type { CompletionAsk } from '../../src/domains/llm/llm-types.ts';
import { checkPolicy } from '../../src/domains/pipeline/redaction.ts';
import { LlmError } from '../../src/integrations/llm/index.ts';
import { testClock } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { type LlmStandIn, startLlmStandIn } from '../support/llm-stand-in.ts';

// Issue 13 "Budgets and cost": tokens and cost per tenant per day recorded; at the budget, no
// further LLM calls for that tenant that day (no silent overspend); the API key read from the
// tenant's Secret with a short TTL, never in the database.

const KEY = 'sk-budget-4e1f0a9c7d2b';

let db: TestDatabase;
let llm: LlmStandIn;
let admin: string;

before(async () => {
  db = await createTestDatabase();
  llm = await startLlmStandIn();
  admin = await db.app.withoutTenant(async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO users (email, role) VALUES ('budget-admin@mssp.test', 'mssp_admin') RETURNING id`,
    );
    return rows[0]?.id ?? '';
  });
});
after(async () => {
  await llm.close();
  await db.drop();
});
beforeEach(() => {
  llm.requests.length = 0;
});

function service(overrides: Partial<LlmServiceDeps> = {}) {
  return createLlmService({
    db: db.app,
    defaults: { provider: 'openai', baseUrl: llm.openaiBaseUrl, model: 'budget-model' },
    fetch: (url, init) => fetch(url, init),
    now: () => new Date(),
    checkPolicy,
    ...overrides,
  });
}

let asked = 0;
/** A distinct prompt each time, so no answer comes from the cache unless a test repeats one. */
function ask(maxTokens = 300): CompletionAsk {
  asked += 1;
  return {
    purpose: 'triage',
    system: 'You triage security alerts.',
    user: `Alert ${asked}: failed logins on host db-0${asked % 10}`,
    maxTokens,
  };
}

async function withBudget(
  tenantId: string,
  daily_budget: NonNullable<TriagePolicy['daily_budget']>,
) {
  await service().putPolicy(tenantId, { daily_budget }, { userId: admin, actingAs: null });
}

interface Usage {
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  reserved_tokens: number;
  calls: number;
  cache_hits: number;
  cache_misses: number;
  refused_over_budget: number;
}

async function today(tenantId: string): Promise<Usage> {
  const { rows } = await db.app.withTenant(tenantId, (tx) =>
    tx.query<Usage>(
      `SELECT input_tokens::float8 AS input_tokens, output_tokens::float8 AS output_tokens,
              cost_usd::float8 AS cost_usd, reserved_tokens::float8 AS reserved_tokens,
              calls::float8 AS calls, cache_hits::float8 AS cache_hits,
              cache_misses::float8 AS cache_misses,
              refused_over_budget::float8 AS refused_over_budget
         FROM llm_usage WHERE day = (now() AT TIME ZONE 'UTC')::date`,
    ),
  );
  const row = rows[0];
  assert.ok(row, 'a usage row for today');
  return row;
}

test('issue 13 budget reached: over_budget, no provider request made, refusal counted', async () => {
  const tenant = await createTenant(db.pools.app);
  const svc = service();
  const first = ask();
  assert.equal((await svc.complete(tenant, first)).kind, 'answer');
  const spent = await today(tenant);
  assert.equal(spent.calls, 1);
  assert.equal(spent.reserved_tokens, 0, 'the reservation was settled');
  const used = spent.input_tokens + spent.output_tokens;
  assert.ok(used > 0);
  // Room for what was spent and less than one more reservation of 300 + the prompt.
  await withBudget(tenant, { tokens: used + 300 });
  llm.requests.length = 0;

  const refused = await svc.complete(tenant, ask());
  assert.deepEqual(refused, {
    kind: 'over_budget',
    used: { tokens: used, cost_usd: 0, reserved_tokens: 0 },
    limit: { tokens: used + 300, cost_usd: null },
  });
  assert.equal(llm.requests.length, 0, 'no request left svc');
  const after = await today(tenant);
  assert.equal(after.refused_over_budget, 1);
  assert.equal(after.calls, 1);

  // A cached answer costs nothing, so it is still given.
  const repeat = await svc.complete(tenant, first);
  assert.equal(repeat.kind === 'answer' && repeat.cached, true);
  assert.equal(llm.requests.length, 0);

  // A smaller ask that fits is still admitted: the budget is tokens, not a switch.
  assert.equal((await svc.complete(tenant, { ...ask(10), user: 'x' })).kind, 'answer');
});

test('issue 13 cost budget: priced calls add up, and once the cost limit is reached calls stop', async () => {
  const tenant = await createTenant(db.pools.app);
  const svc = service({
    prices: { 'budget-model': { input_per_mtok: 1_000_000, output_per_mtok: 2_000_000 } },
  });
  const answer = await svc.complete(tenant, ask());
  assert.equal(answer.kind, 'answer');
  if (answer.kind !== 'answer') return;
  const expected = answer.usage.inputTokens + 2 * answer.usage.outputTokens;
  assert.equal(answer.costUsd, expected);
  assert.equal((await today(tenant)).cost_usd, expected);

  await withBudget(tenant, { cost_usd: expected });
  llm.requests.length = 0;
  const refused = await svc.complete(tenant, ask());
  assert.equal(refused.kind, 'over_budget');
  assert.equal(llm.requests.length, 0);

  // A model without a price costs 0 (docs/llm.md).
  const unpriced = await service().complete(await createTenant(db.pools.app), ask());
  assert.equal(unpriced.kind === 'answer' && unpriced.costUsd, 0);
});

test('issue 13 parallel completes never exceed the token budget: reservations hold it', async () => {
  const tenant = await createTenant(db.pools.app);
  const slow = await startLlmStandIn({ latencyMs: 300 });
  try {
    const svc = service({
      defaults: { provider: 'openai', baseUrl: slow.openaiBaseUrl, model: 'budget-model' },
    });
    const asks = Array.from({ length: 20 }, () => ask(200));
    // Each call reserves 200 + its prompt estimate (under 30): five fit, a sixth does not.
    const budget = 5 * 230;
    await withBudget(tenant, { tokens: budget });
    const outcomes = await Promise.all(asks.map((a) => svc.complete(tenant, a)));
    const answered = outcomes.filter((o) => o.kind === 'answer');
    const refused = outcomes.filter((o) => o.kind === 'over_budget');
    assert.equal(answered.length + refused.length, 20);
    assert.ok(refused.length > 0, 'the budget refused some');
    assert.equal(slow.requests.length, answered.length, 'only admitted calls reached the model');
    assert.ok(
      slow.stats().peakInFlight <= 5,
      `at most five reservations fit at once, saw ${slow.stats().peakInFlight} in flight`,
    );
    const usage = await today(tenant);
    assert.equal(usage.reserved_tokens, 0);
    assert.ok(usage.input_tokens + usage.output_tokens <= budget);
    assert.equal(usage.calls, answered.length);
    assert.equal(usage.refused_over_budget, refused.length);
  } finally {
    await slow.close();
  }
});

test('issue 13 a provider failure releases the reservation and is not counted as a call', async () => {
  const tenant = await createTenant(db.pools.app);
  const svc = service();
  // Exactly one reservation fits: a reservation left behind would refuse the next call.
  const failing = ask(300);
  const estimate = Math.ceil(
    (Buffer.byteLength(failing.system) + Buffer.byteLength(failing.user)) / 3,
  );
  await withBudget(tenant, { tokens: 300 + estimate + 5 });
  llm.fail([{ status: 400, message: 'model does not exist' }]);
  await assert.rejects(svc.complete(tenant, failing), (error: unknown) => {
    assert.ok(error instanceof LlmError);
    assert.equal(error.kind, 'client');
    return true;
  });
  const afterFailure = await today(tenant);
  assert.equal(afterFailure.reserved_tokens, 0);
  assert.equal(afterFailure.calls, 0);
  assert.equal(afterFailure.input_tokens + afterFailure.output_tokens, 0);
  assert.equal((await svc.complete(tenant, failing)).kind, 'answer');
});

test('issue 13 the API key is read from Secret tenant-<id>-llm once per TTL and never stored', async () => {
  const keyed = await startLlmStandIn({ apiKey: KEY });
  try {
    const tenant = await createTenant(db.pools.app);
    await db.app.withTenant(tenant, (tx) =>
      tx.query(
        `INSERT INTO tenant_lifecycle_events (tenant_id, kind, config_revision, details, actor)
         VALUES ($1, 'config_revision', 1, $2, 'system:test')`,
        [
          tenant,
          {
            config: {
              llm: {
                provider: 'openai',
                base_url: keyed.openaiBaseUrl,
                model: 'keyed-model',
                has_api_key: true,
              },
            },
          },
        ],
      ),
    );
    const reads: string[] = [];
    const secrets = {
      read: async (name: string) => {
        reads.push(name);
        return { api_key: KEY };
      },
    };
    const clock = testClock();
    const svc = service({ secrets, now: clock.now, keyTtlMs: 60_000 });
    for (let i = 0; i < 3; i++) assert.equal((await svc.complete(tenant, ask())).kind, 'answer');
    assert.deepEqual(reads, [`tenant-${tenant}-llm`], 'one read for three calls within the TTL');
    clock.advance(60_000);
    assert.equal((await svc.complete(tenant, ask())).kind, 'answer');
    assert.equal(reads.length, 2, 'read again once the TTL passed');
    assert.ok(keyed.requests.every((r) => r.headers.authorization === `Bearer ${KEY}`));

    const stored = await db.pools.mssp.query(
      `SELECT 1 FROM llm_cache c WHERE c.tenant_id = $1 AND row_to_json(c)::text LIKE $2
        UNION ALL SELECT 1 FROM tenant_lifecycle_events e
        WHERE e.tenant_id = $1 AND row_to_json(e)::text LIKE $2
        UNION ALL SELECT 1 FROM audit_log a WHERE row_to_json(a)::text LIKE $2`,
      [tenant, `%${KEY}%`],
    );
    assert.equal(stored.rowCount, 0, 'the key is in no row');

    // Without a Secret store (svc without a cluster) the call goes out without a key.
    keyed.requests.length = 0;
    await assert.rejects(service().complete(tenant, ask()), /401|API key/i);
    assert.equal(keyed.requests[0]?.headers.authorization, undefined);
  } finally {
    await keyed.close();
  }
});

test('issue 13 a tenant without a configured key never has its Secret read', async () => {
  const tenant = await createTenant(db.pools.app);
  const reads: string[] = [];
  const svc = service({
    secrets: {
      read: async (name: string) => {
        reads.push(name);
        return { api_key: KEY };
      },
    },
  });
  assert.equal((await svc.complete(tenant, ask())).kind, 'answer');
  assert.deepEqual(reads, []);
  assert.equal(llm.requests[0]?.headers.authorization, undefined);
});
