import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import {
  createLlmService,
  type LlmService,
  promptHashOf,
} from '../../src/domains/llm/llm-service.ts';
import type { CompletionAsk } from '../../src/domains/llm/llm-types.ts';
import { checkPolicy } from '../../src/domains/pipeline/redaction.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { type LlmStandIn, startLlmStandIn } from '../support/llm-stand-in.ts';

// Spec §5.7.7 (the LLM cache is keyed on (tenant_id, prompt_hash)) and §9.5.5 (LLM cache
// isolation), through the real service, the real OpenAI-compatible client and a local server
// speaking the chat-completions protocol.

let db: TestDatabase;
let llm: LlmStandIn;
let service: LlmService;
let tenantA: string;
let tenantB: string;

const ASK: CompletionAsk = {
  purpose: 'triage',
  system: 'You triage security alerts. Answer in JSON.',
  user: 'Alert 5712: sshd brute force from 203.0.113.7 against host web-01',
  json: { name: 'triage', schema: { type: 'object', required: ['verdict'] } },
  maxTokens: 300,
};

before(async () => {
  db = await createTestDatabase();
  llm = await startLlmStandIn();
  tenantA = await createTenant(db.pools.app, 'cache-a');
  tenantB = await createTenant(db.pools.app, 'cache-b');
  service = createLlmService({
    db: db.app,
    defaults: { provider: 'openai', baseUrl: llm.openaiBaseUrl, model: 'install-model' },
    fetch: (url, init) => fetch(url, init),
    now: () => new Date(),
    checkPolicy,
  });
});
after(async () => {
  await llm.close();
  await db.drop();
});
beforeEach(() => {
  llm.requests.length = 0;
});

async function usageOf(tenantId: string) {
  const { rows } = await db.app.withTenant(tenantId, (tx) =>
    tx.query<{ calls: string; cache_hits: string; cache_misses: string }>(
      'SELECT calls, cache_hits, cache_misses FROM llm_usage',
    ),
  );
  return rows.map((r) => ({
    calls: Number(r.calls),
    cache_hits: Number(r.cache_hits),
    cache_misses: Number(r.cache_misses),
  }));
}

test('§9.5.5 LLM cache isolation: identical prompts miss for B after A, hit on A repeat', async () => {
  const first = await service.complete(tenantA, ASK);
  assert.equal(first.kind, 'answer');
  assert.equal(first.kind === 'answer' && first.cached, false);
  assert.equal(llm.requests.length, 1, 'A first: a miss calls the model');

  const ofB = await service.complete(tenantB, ASK);
  assert.equal(ofB.kind === 'answer' && ofB.cached, false);
  assert.equal(llm.requests.length, 2, "B's identical prompt is a miss: A's answer is not B's");

  const repeat = await service.complete(tenantA, ASK);
  assert.equal(repeat.kind === 'answer' && repeat.cached, true);
  assert.equal(llm.requests.length, 2, "A's repeat is a hit: no provider request");
  if (first.kind === 'answer' && repeat.kind === 'answer') {
    assert.equal(repeat.text, first.text);
    assert.deepEqual(repeat.usage, first.usage);
    assert.equal(repeat.costUsd, 0);
  }

  assert.deepEqual(await usageOf(tenantA), [{ calls: 1, cache_hits: 1, cache_misses: 1 }]);
  assert.deepEqual(await usageOf(tenantB), [{ calls: 1, cache_hits: 0, cache_misses: 1 }]);
  const hits = await db.pools.mssp.query<{ tenant_id: string; hits: string }>(
    'SELECT tenant_id, hits FROM llm_cache WHERE tenant_id = ANY($1) ORDER BY hits DESC',
    [[tenantA, tenantB]],
  );
  assert.deepEqual(
    hits.rows.map((r) => [r.tenant_id, Number(r.hits)]),
    [
      [tenantA, 1],
      [tenantB, 0],
    ],
  );
});

test('§9.5.5 raw SQL as svc_app with tenant A set sees only A cache rows and cannot write B', async () => {
  const client = await db.pools.app.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT set_config('app.current_tenant_id', $1, true)`, [tenantA]);
    const seen = await client.query<{ tenant_id: string }>('SELECT tenant_id FROM llm_cache');
    assert.ok(seen.rows.length >= 1, "A's own rows are visible");
    assert.deepEqual(new Set(seen.rows.map((r) => r.tenant_id)), new Set([tenantA]));
    const ofB = await client.query('SELECT 1 FROM llm_cache WHERE tenant_id = $1', [tenantB]);
    assert.equal(ofB.rowCount, 0);
    const poisoned = await client.query(
      `UPDATE llm_cache SET hits = hits + 100 WHERE tenant_id = $1`,
      [tenantB],
    );
    assert.equal(poisoned.rowCount, 0, "A's context cannot touch B's cache");
    await assert.rejects(
      client.query(
        `INSERT INTO llm_cache (tenant_id, prompt_hash, provider, model, response, input_tokens, output_tokens)
         VALUES ($1, repeat('a', 64), 'openai', 'm', 'planted', 1, 1)`,
        [tenantB],
      ),
      /row-level security/,
    );
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
  const none = await db.pools.app.query('SELECT 1 FROM llm_cache');
  assert.equal(none.rowCount, 0, 'no tenant context: zero rows');
});

test('§5.7.7 the prompt hash covers provider, base URL, model, prompts and schema, nothing else', () => {
  const settings = { provider: 'openai', baseUrl: 'https://llm.example.test/v1', model: 'm1' };
  const hash = promptHashOf(settings, ASK);
  const { json: _, ...withoutSchema } = ASK;
  assert.match(hash, /^[0-9a-f]{64}$/);
  const variants = [
    promptHashOf({ ...settings, provider: 'vllm' }, ASK),
    promptHashOf({ ...settings, baseUrl: 'https://other.example.test/v1' }, ASK),
    promptHashOf({ ...settings, model: 'm2' }, ASK),
    promptHashOf(settings, { ...ASK, system: `${ASK.system} ` }),
    promptHashOf(settings, { ...ASK, user: `${ASK.user}.` }),
    promptHashOf(settings, withoutSchema),
  ];
  assert.equal(new Set([hash, ...variants]).size, variants.length + 1);
  // The step's name and the answer's length limit do not change which answer is right.
  assert.equal(promptHashOf(settings, { ...ASK, purpose: 'enrich', maxTokens: 50 }), hash);
  // Key order inside the schema is not part of the request's meaning.
  const reordered = { name: 'triage', schema: { required: ['verdict'], type: 'object' } };
  assert.equal(promptHashOf(settings, { ...ASK, json: reordered }), hash);
});

test('§5.7.7 the prompt hash covers the output schema: another schema is a miss', async () => {
  const other = { ...ASK, json: { name: 'triage', schema: { type: 'object' } } };
  const outcome = await service.complete(tenantA, other);
  assert.equal(outcome.kind === 'answer' && outcome.cached, false);
  assert.equal(llm.requests.length, 1);
  const again = await service.complete(tenantA, other);
  assert.equal(again.kind === 'answer' && again.cached, true);
  assert.equal(llm.requests.length, 1);
});

test("issue 13: the tenant's stored llm settings win over the install defaults", async () => {
  const tenant = await createTenant(db.pools.app, 'cache-own-model');
  await db.app.withTenant(tenant, (tx) =>
    tx.query(
      `INSERT INTO tenant_lifecycle_events (tenant_id, kind, config_revision, details, actor)
       VALUES ($1, 'config_revision', 1, $2, 'system:test')`,
      [
        tenant,
        {
          config: {
            llm: {
              provider: 'vllm',
              base_url: llm.openaiBaseUrl,
              model: 'tenant-model',
              has_api_key: false,
            },
          },
        },
      ],
    ),
  );
  const outcome = await service.complete(tenant, ASK);
  assert.equal(outcome.kind === 'answer' && outcome.cached, false);
  assert.equal(llm.requests[0]?.body.model, 'tenant-model');
  assert.equal(llm.requests[0]?.headers.authorization, undefined, 'no key configured, none sent');
  const cached = await db.app.withTenant(tenant, (tx) =>
    tx.query<{ provider: string; model: string }>('SELECT provider, model FROM llm_cache'),
  );
  assert.deepEqual(cached.rows, [{ provider: 'vllm', model: 'tenant-model' }]);
});
