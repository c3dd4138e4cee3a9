import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { checkpoint, postAlerts, wazuhAlert, written } from './ingest-support.ts';
import { adapterToken, setState } from './support.ts';

// Issue 12 "Batches have a size limit and a clear 413/400 … a per-tenant token-bucket limit
// answers 429 with Retry-After": every refusal of POST /api/internal/adapter/alerts, each with
// its status, problem code, and nothing written. The bucket here is small (10 alerts/s, burst
// 500) and the API's clock only moves when a test moves it.

let db: TestDatabase;
let api: TestApi;
const MiB = 1024 * 1024;
const NOTHING = { events: 0, groups: 0, checkpoints: 0 };

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { env: { SVC_INGEST_RATE: '10', SVC_INGEST_BURST: '500' } });
});
after(async () => {
  await api.close();
  await db.drop();
});

async function tenantWithAdapter(): Promise<{ tenant: string; token: string }> {
  const tenant = await createTenant(db.pools.app);
  await setState(db, tenant, 'active');
  return { tenant, token: await adapterToken(api, tenant) };
}

/** `n` alerts of about `bytes` bytes each (the padding is in full_log). */
function alerts(n: number, bytes = 0): Record<string, unknown>[] {
  return Array.from({ length: n }, () => wazuhAlert({ full_log: 'x'.repeat(bytes) }));
}

test('issue 12 limits: more than 500 alerts is 413 batch_too_large; 500 are stored', async () => {
  const { tenant, token } = await tenantWithAdapter();
  const tooMany = await postAlerts(api, token, { alerts: alerts(501), checkpoint: checkpoint(1) });
  assert.deepEqual([tooMany.status, problemCode(tooMany)], [413, 'batch_too_large']);
  assert.deepEqual(await written(db, tenant), NOTHING);
  // The refused batch took no tokens: a full one (the whole burst) still passes.
  const full = await postAlerts(api, token, { alerts: alerts(500), checkpoint: checkpoint(2) });
  assert.deepEqual([full.status, full.body.accepted], [200, 500]);
});

test('issue 12 limits: the alerts route reads up to 4 MiB; beyond is 413 payload_too_large, declared or streamed', async () => {
  const { tenant, token } = await tenantWithAdapter();
  // About 2 MiB: past the global 1 MiB, within this route's 4 MiB.
  const big = { alerts: alerts(200, 10_000), checkpoint: checkpoint(1) };
  assert.ok(Buffer.byteLength(JSON.stringify(big)) > 1.5 * MiB);
  const ok = await postAlerts(api, token, big);
  assert.deepEqual([ok.status, ok.body.accepted], [200, 200]);

  const before = await written(db, tenant);
  const huge = { alerts: alerts(130, 33_000), checkpoint: checkpoint(2) };
  assert.ok(Buffer.byteLength(JSON.stringify(huge)) > 4 * MiB);
  const declared = await postAlerts(api, token, huge);
  assert.deepEqual([declared.status, problemCode(declared)], [413, 'payload_too_large']);

  const text = new TextEncoder().encode(JSON.stringify(huge));
  const streamed = await fetch(`${api.url}/api/internal/adapter/alerts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: new ReadableStream({
      start(controller) {
        for (let i = 0; i < text.length; i += 64 * 1024)
          controller.enqueue(text.slice(i, i + 64 * 1024));
        controller.close();
      },
    }),
    duplex: 'half',
  } as RequestInit);
  assert.equal(streamed.status, 413);
  assert.equal(((await streamed.json()) as { code: string }).code, 'payload_too_large');
  assert.deepEqual(await written(db, tenant), before);
});

test('issue 12 limits: every other route keeps the 1 MiB limit, and the larger one is read before authentication', async () => {
  const { token } = await tenantWithAdapter();
  const res = await fetch(`${api.url}/api/internal/adapter/health`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ version: '1.0.0', pad: 'x'.repeat(1.2 * MiB) }),
  });
  assert.equal(res.status, 413);
  assert.equal(((await res.json()) as { code: string }).code, 'payload_too_large');
  // 2 MiB without a token: read (within this route's limit), then refused as unauthenticated.
  const anonymous = await postAlerts(api, undefined, {
    alerts: alerts(200, 10_000),
    checkpoint: checkpoint(1),
  });
  assert.deepEqual([anonymous.status, problemCode(anonymous)], [401, 'unauthenticated']);
});

test('issue 12 limits: malformed batches are 400 validation_failed with the field, and write nothing', async () => {
  const { tenant, token } = await tenantWithAdapter();
  const { rule: _rule, ...noRule } = wazuhAlert();
  const cases: [string, unknown, string][] = [
    // A missing property is reported at the object that lacks it.
    ['missing rule', { alerts: [noRule], checkpoint: checkpoint(1) }, '/alerts/0'],
    [
      'timestamp not a timestamp',
      { alerts: [wazuhAlert({ timestamp: 'yesterday' })], checkpoint: checkpoint(1) },
      '/alerts/0/timestamp',
    ],
    [
      'a day the calendar does not have',
      {
        alerts: [wazuhAlert(), wazuhAlert({ timestamp: '2026-02-30T10:00:00.000+0000' })],
        checkpoint: checkpoint(1),
      },
      '/alerts/1/timestamp',
    ],
    [
      'past 9999 once in UTC',
      {
        alerts: [wazuhAlert({ timestamp: '9999-12-31T23:00:00-0200' })],
        checkpoint: checkpoint(1),
      },
      '/alerts/0/timestamp',
    ],
    [
      'level 17',
      { alerts: [wazuhAlert({ rule: { level: 17 } })], checkpoint: checkpoint(1) },
      '/alerts/0/rule/level',
    ],
    [
      'an alert that is not an object',
      { alerts: ['alert'], checkpoint: checkpoint(1) },
      '/alerts/0',
    ],
    [
      'an alert over 64 KiB',
      {
        alerts: [wazuhAlert(), wazuhAlert({ full_log: 'x'.repeat(64 * 1024) })],
        checkpoint: checkpoint(1),
      },
      '/alerts/1',
    ],
    ['no alerts', { alerts: [], checkpoint: checkpoint(1) }, '/alerts'],
    ['no checkpoint', { alerts: [wazuhAlert()] }, '/checkpoint'],
    [
      'a checkpoint of nine sort values',
      { alerts: [wazuhAlert()], checkpoint: { search_after: [1, 2, 3, 4, 5, 6, 7, 8, 9] } },
      '/checkpoint/search_after',
    ],
    [
      'an alert without its id',
      { alerts: [{ ...wazuhAlert(), id: undefined }], checkpoint: checkpoint(1) },
      '/alerts/0',
    ],
  ];
  for (const [label, body, path] of cases) {
    const res = await postAlerts(api, token, body);
    assert.deepEqual([res.status, problemCode(res)], [400, 'validation_failed'], label);
    const paths = (res.body.errors as { path: string }[]).map((e) => e.path);
    assert.ok(paths.includes(path), `${label}: ${JSON.stringify(res.body.errors)}`);
  }
  const nul = await postAlerts(api, token, {
    alerts: [wazuhAlert({ full_log: 'a\u0000b' })],
    checkpoint: checkpoint(1),
  });
  assert.deepEqual([nul.status, problemCode(nul)], [400, 'invalid_characters']);
  const notJson = await postAlerts(api, token, '{"alerts": [');
  assert.deepEqual([notJson.status, problemCode(notJson)], [400, 'malformed_json']);
  assert.deepEqual(await written(db, tenant), NOTHING);
});

test('issue 12 limits: past the tenant token bucket is 429 ingest_rate_limited with Retry-After; nothing written; later it passes', async () => {
  const { tenant, token } = await tenantWithAdapter();
  const first = await postAlerts(api, token, { alerts: alerts(300), checkpoint: checkpoint(1) });
  assert.equal(first.status, 200);
  const stored = await written(db, tenant);

  // 200 tokens left, 300 wanted, 10 per second: 10 seconds.
  const second = { alerts: alerts(300), checkpoint: checkpoint(2) };
  const limited = await postAlerts(api, token, second);
  assert.deepEqual([limited.status, problemCode(limited)], [429, 'ingest_rate_limited']);
  assert.equal(limited.headers.get('retry-after'), '10');
  assert.equal(limited.body.retry_after, 10);
  assert.deepEqual(await written(db, tenant), stored);

  // Another tenant has a bucket of its own.
  const other = await tenantWithAdapter();
  const theirs = await postAlerts(api, other.token, {
    alerts: alerts(300),
    checkpoint: checkpoint(1),
  });
  assert.equal(theirs.status, 200);

  api.clock.advance(9_000);
  assert.equal((await postAlerts(api, token, second)).status, 429);
  api.clock.advance(1_000);
  const later = await postAlerts(api, token, second);
  assert.deepEqual([later.status, later.body.accepted], [200, 300]);
});
