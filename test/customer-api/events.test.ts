import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { appendNote, waitFor } from '../events/support.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';
import { PASSWORD, type SeededTenant, seedTenant } from './support.ts';

let db: TestDatabase;
let api: TestApi;
let a: SeededTenant;
let b: SeededTenant;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  const staffId = await seedUser(db, api.hasher, {
    email: 'an@mssp.test',
    role: 'analyst',
    password: PASSWORD,
  });
  a = await seedTenant(db, api, 'alpha', { staffId });
  b = await seedTenant(db, api, 'bravo', { staffId });
});
after(async () => {
  await api.close();
  await db.drop();
});

/** Appends one event to a new stream of `tenantId`, inside that tenant's context. */
const append = (tenantId: string, note: string) => appendNote(db.app, tenantId, note);

async function sessionCookie(email: string): Promise<string> {
  const browser = client(api);
  assert.equal((await browser.login(email, PASSWORD)).status, 200);
  return browser.cookie() ?? '';
}

/** An EventSource-like reader on a real socket: yields event blocks, skips comment lines. */
async function subscribe(headers: Record<string, string>, path = '/api/tenant/events') {
  const abort = new AbortController();
  const res = await fetch(`${api.url}${path}`, { headers, signal: abort.signal });
  const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  async function next(): Promise<{ id: string; data: { id: string; payload: unknown } }> {
    for (;;) {
      const end = buffered.indexOf('\n\n');
      if (end !== -1) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const data = /^data: (.*)$/m.exec(block)?.[1];
        const id = /^id: (.*)$/m.exec(block)?.[1];
        if (data !== undefined && id !== undefined) return { id, data: JSON.parse(data) };
        continue;
      }
      const chunk = await reader?.read();
      if (!chunk || chunk.done) throw new Error('the stream ended');
      buffered += chunk.value;
    }
  }
  return { res, next, close: () => abort.abort() };
}

test("§6.2 SSE: A's subscriber receives A's appended events and nothing from B's appends", async () => {
  const viaSession = await subscribe({ cookie: await sessionCookie(a.viewer.email) });
  const { token } = await api.tokens.mintTenantUser({ userId: a.viewer.id, tenantId: a.id });
  const viaToken = await subscribe({ authorization: `Bearer ${token}` });
  const onB = await subscribe({ cookie: await sessionCookie(b.viewer.email) });
  for (const s of [viaSession, viaToken, onB]) {
    assert.equal(s.res.status, 200);
    assert.match(s.res.headers.get('content-type') ?? '', /^text\/event-stream/);
    // Issue 10 item 8: docs/api-tenant.md promises no-store on every answer, the stream included.
    assert.equal(s.res.headers.get('cache-control'), 'no-store');
  }
  await waitFor('three subscribers', () => api.events.status().subscribers === 3);

  const ofB = await append(b.id, 'BRAVO-SECRET');
  const ofA = await append(a.id, 'for alpha');
  for (const stream of [viaSession, viaToken]) {
    // B's event was committed first; the first thing A sees must still be A's own.
    const first = await stream.next();
    assert.deepEqual([first.id, first.data.payload], [ofA.id, { note: 'for alpha' }]);
  }
  assert.equal((await onB.next()).id, ofB.id);

  // Another round in the other order: A's streams still carry only A's events.
  await append(b.id, 'BRAVO-SECRET');
  const sentinel = await append(a.id, 'sentinel');
  for (const stream of [viaSession, viaToken]) assert.equal((await stream.next()).id, sentinel.id);
  for (const s of [viaSession, viaToken, onB]) s.close();
  await waitFor('streams closed', () => api.events.status().subscribers === 0);
});

test('§6.2 SSE is refused before subscribing: anonymous 401, MSSP 403, ?tenant_id=B 400', async () => {
  const analyst = await sessionCookie('an@mssp.test');
  const viewer = await sessionCookie(a.viewer.email);
  const cases: [string, Record<string, string>, string, number, string][] = [
    ['anonymous', {}, '/api/tenant/events', 401, 'unauthenticated'],
    ['analyst', { cookie: analyst }, '/api/tenant/events', 403, 'wrong_family'],
    [
      'tenant_id',
      { cookie: viewer },
      `/api/tenant/events?tenant_id=${b.id}`,
      400,
      'validation_failed',
    ],
    [
      'last event id',
      { cookie: viewer, 'last-event-id': 'abc' },
      '/api/tenant/events',
      400,
      'invalid_last_event_id',
    ],
  ];
  for (const [why, headers, path, status, code] of cases) {
    const res = await fetch(`${api.url}${path}`, {
      headers,
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json()) as { code: string };
    assert.deepEqual([res.status, body.code], [status, code], why);
  }
  assert.equal(api.events.status().subscribers, 0);
});
