import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { IntegrationError } from '../../src/integrations/integration-error.ts';
import {
  type CaseInput,
  createTheHiveClient,
  type TheHiveClient,
} from '../../src/integrations/thehive/thehive-client.ts';
import { startTheHiveStandIn, type TheHiveStandIn } from '../support/thehive-stand-in.ts';

// Issue 13: escalation opens a case in the tenant's case component (TheHive 5 v1 API) and
// attaches the investigation's indicators; a retried job must not open a second case or attach
// an indicator twice. The stand-in speaks TheHive's paths, shapes and error bodies.

const hives: TheHiveStandIn[] = [];
after(() => Promise.all(hives.map((h) => h.close())));

async function hive(): Promise<TheHiveStandIn> {
  const h = await startTheHiveStandIn();
  hives.push(h);
  return h;
}

function client(
  h: TheHiveStandIn,
  overrides: Partial<Parameters<typeof createTheHiveClient>[0]> = {},
) {
  return createTheHiveClient({
    baseUrl: h.url,
    auth: { kind: 'bearer', apiKey: h.apiKey },
    fetch: (url, init) => fetch(url, init),
    ...overrides,
  });
}

const input = (externalRef: string): CaseInput => ({
  title: 'Brute force against vpn-01',
  description: 'Escalated by svc triage: 212 failed logins from 203.0.113.7',
  severity: 3,
  tags: ['svc', 'brute-force'],
  tlp: 2,
  pap: 1,
  externalRef,
});

async function rejection(promise: Promise<unknown>): Promise<IntegrationError> {
  const error = await promise.then(
    () => assert.fail('expected an IntegrationError'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof IntegrationError, String(error));
  return error;
}

test('issue 13 createCase opens a TheHive case with the input, the reference tag and status New', async () => {
  const h = await hive();
  const ref = await client(h).createCase(input('inv-0001'));
  const [stored, ...others] = h.cases();
  assert.equal(others.length, 0);
  assert.ok(stored);
  assert.deepEqual(ref, { id: stored._id, number: stored.number, created: true });
  assert.match(stored._id, /^~\d+$/);
  assert.equal(stored._type, 'Case');
  assert.equal(stored.status, 'New');
  assert.equal(stored.title, 'Brute force against vpn-01');
  assert.equal(stored.severity, 3);
  assert.equal(stored.tlp, 2);
  assert.equal(stored.pap, 1);
  assert.deepEqual(stored.tags, ['svc', 'brute-force', 'svc-ref:inv-0001']);
  // The bearer key, the v1 query first (nothing found), then the create.
  assert.deepEqual(
    h.requests.map((r) => [r.method, r.path.split('?')[0], r.authorization]),
    [
      ['POST', '/api/v1/query', `Bearer ${h.apiKey}`],
      ['POST', '/api/v1/case', `Bearer ${h.apiKey}`],
    ],
  );
  const sent = h.requests[0]?.body as { query: unknown[] } | undefined;
  assert.deepEqual(sent?.query.slice(0, 2), [
    { _name: 'listCase' },
    { _name: 'filter', _eq: { _field: 'tags', _value: 'svc-ref:inv-0001' } },
  ]);
});

test('issue 13 a second createCase with the same externalRef returns the first case; the stand-in holds one', async () => {
  const h = await hive();
  const thehive = client(h);
  const first = await thehive.createCase(input('inv-0002'));
  const again = await thehive.createCase({ ...input('inv-0002'), title: 'retried' });
  assert.deepEqual(again, { ...first, created: false });
  assert.equal(h.cases().length, 1);
  // Another investigation gets its own case.
  const other = await thehive.createCase(input('inv-0003'));
  assert.notEqual(other.id, first.id);
  assert.equal(other.number, first.number + 1);
  assert.deepEqual(await thehive.findCase('inv-0003'), { id: other.id, number: other.number });
  assert.equal(await thehive.findCase('inv-none'), undefined);
});

test('issue 13 addObservables attaches each indicator once, also when the call is repeated', async () => {
  const h = await hive();
  const thehive = client(h);
  const { id } = await thehive.createCase(input('inv-0004'));
  const indicators = [
    { dataType: 'ip' as const, data: '203.0.113.7', message: 'source of the failed logins' },
    { dataType: 'domain' as const, data: 'bad.example' },
  ];
  assert.deepEqual(await thehive.addObservables(id, indicators), { added: 2, present: 0 });
  const more = [
    ...indicators,
    { dataType: 'hash' as const, data: 'd41d8cd98f00b204e9800998ecf8427e' },
  ];
  assert.deepEqual(await thehive.addObservables(id, more), { added: 1, present: 2 });
  const stored = h.observables(id);
  assert.deepEqual(
    stored.map((o) => [o._type, o.dataType, o.data, o.message]),
    [
      ['Observable', 'ip', '203.0.113.7', 'source of the failed logins'],
      ['Observable', 'domain', 'bad.example', undefined],
      ['Observable', 'hash', 'd41d8cd98f00b204e9800998ecf8427e', undefined],
    ],
  );
  const posted = h.requests.filter(
    (r) => r.path === `/api/v1/case/${encodeURIComponent(id)}/observable`,
  );
  assert.equal(posted.length, 3);
});

test('issue 13 basic auth with the login works; a wrong key is kind auth (401) and creates nothing', async () => {
  const h = await hive();
  await client(h, {
    auth: { kind: 'basic', user: h.login.user, password: h.login.password },
  }).createCase(input('inv-0005'));
  const error = await rejection(
    client(h, { auth: { kind: 'bearer', apiKey: 'wrong' } }).createCase(input('inv-0006')),
  );
  assert.equal(error.kind, 'auth');
  assert.equal(error.status, 401);
  assert.match(error.message, /AuthenticationError/);
  assert.equal(error.retryable, false);
  assert.equal(h.cases().length, 1);
});

test('issue 13 TheHive answering 500 is kind server, retryable; a later attempt succeeds once', async () => {
  const h = await hive();
  const thehive = client(h);
  h.failNext(1, { status: 500 });
  const error = await rejection(thehive.createCase(input('inv-0007')));
  assert.equal(error.kind, 'server');
  assert.equal(error.status, 500);
  assert.equal(error.retryable, true);
  assert.equal(h.cases().length, 0);
  await thehive.createCase(input('inv-0007'));
  assert.equal(h.cases().length, 1);
});

test('issue 13 a TheHive that never answers is kind timeout after timeoutMs', async () => {
  const h = await hive();
  h.failNext(1, 'hang');
  const started = performance.now();
  const error = await rejection(client(h, { timeoutMs: 300 }).createCase(input('inv-0008')));
  const elapsed = performance.now() - started;
  assert.equal(error.kind, 'timeout');
  assert.ok(elapsed >= 290 && elapsed < 3000, `gave up after ${elapsed} ms`);
});

test('issue 13 a refused connection is kind unreachable; a 400 is kind rejected', async () => {
  const h = await hive();
  const url = h.url;
  const unreachable = await rejection(
    createTheHiveClient({
      baseUrl: `${url.replace(/:\d+$/, ':1')}`,
      auth: { kind: 'bearer', apiKey: 'k' },
      fetch: (u, init) => fetch(u, init),
    }).createCase(input('inv-0009')),
  );
  assert.equal(unreachable.kind, 'unreachable');
  const thehive: TheHiveClient = client(h);
  const { id } = await thehive.createCase(input('inv-0010'));
  const rejected = await rejection(thehive.addObservables(id, [{ dataType: 'ip', data: '' }]));
  assert.equal(rejected.kind, 'rejected');
  assert.equal(rejected.status, 400);
  const missing = await rejection(
    thehive.addObservables('~999999', [{ dataType: 'ip', data: '192.0.2.1' }]),
  );
  assert.equal(missing.kind, 'rejected');
  assert.equal(missing.status, 404);
});
