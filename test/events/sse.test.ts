import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { Credential } from '../../src/auth/credential.ts';
import { createCredentialWatch } from '../../src/domains/sessions/credential-watch.ts';
import { streamTenantEvents } from '../../src/http/event-stream.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { appendSeparately, startHub, type TestHub, waitFor } from './support.ts';

let db: TestDatabase;
let hub: TestHub;
let url: string;
let close: () => Promise<void>;

before(async () => {
  db = await createTestDatabase();
  hub = await startHub(db, { heartbeatMs: 50 });
  const { rows } = await db.pools.app.query<{ id: string }>(
    `INSERT INTO users (email, role) VALUES ('watcher@mssp.test', 'analyst') RETURNING id`,
  );
  const watcher: Credential = {
    kind: 'proxy',
    userId: rows[0]?.id ?? '',
    role: 'analyst',
    userTenant: null,
  };
  // How the routes mount it: authentication leaves the credential on the context, the route
  // decides the tenant, the helper streams it. `x-expires-in` stands in for a token's exp.
  const app = new Hono();
  const watch = createCredentialWatch({ db: hub.db, now: () => new Date() });
  app.get('/tenants/:tenant/events', (c) => {
    const expiresIn = c.req.header('x-expires-in');
    c.set(
      'credential',
      expiresIn
        ? { ...watcher, kind: 'token', expiresAt: new Date(Date.now() + Number(expiresIn)) }
        : watcher,
    );
    return streamTenantEvents(c, { events: hub.hub, watch }, c.req.param('tenant'));
  });
  const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = () => new Promise((resolve) => server.close(() => resolve()));
});
after(async () => {
  await hub.close();
  await close();
  await db.drop();
});

/** One parsed block of the stream: an event (id, event, data) or a comment. */
interface Block {
  comment?: string;
  id?: string;
  event?: string;
  data?: string;
}

function parseBlock(text: string): Block {
  const block: Block = {};
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === '') block.comment = value;
    else if (field === 'id' || field === 'event') block[field] = value;
    else if (field === 'data')
      block.data = block.data === undefined ? value : `${block.data}\n${value}`;
  }
  return block;
}

/** A real client on a real socket: fetch, read the body as it streams, split on blank lines. */
async function connect(tenantId: string, headers: Record<string, string> = {}) {
  const abort = new AbortController();
  const res = await fetch(`${url}/tenants/${tenantId}/events`, { headers, signal: abort.signal });
  const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  const pending: Block[] = [];
  async function block(): Promise<Block> {
    for (;;) {
      const next = pending.shift();
      if (next) return next;
      const end = buffered.indexOf('\n\n');
      if (end !== -1) {
        pending.push(parseBlock(buffered.slice(0, end)));
        buffered = buffered.slice(end + 2);
        continue;
      }
      const chunk = await reader?.read();
      if (!chunk || chunk.done) throw new Error('the stream ended');
      buffered += chunk.value;
    }
  }
  async function events(count: number): Promise<Block[]> {
    const found: Block[] = [];
    while (found.length < count) {
      const next = await block();
      if (next.comment === undefined) found.push(next);
    }
    return found;
  }
  return { res, block, events, close: () => abort.abort() };
}

test('§5.7.8 SSE: each tenant stream carries only its events, as id, event type and JSON data', async () => {
  const a = await createTenant(db.pools.app);
  const b = await createTenant(db.pools.app);
  const onA = await connect(a);
  const onB = await connect(b);
  assert.equal(onA.res.status, 200);
  assert.match(onA.res.headers.get('content-type') ?? '', /^text\/event-stream/);
  // Issue 10 item 8: one tenant's events; no cache may store them (not just revalidate).
  assert.equal(onA.res.headers.get('cache-control'), 'no-store');
  await waitFor('both streams subscribed', () => hub.hub.status().subscribers === 2);
  const [ofB] = await appendSeparately(db.app, b, 1, 'secret.created');
  const [ofA] = await appendSeparately(db.app, a, 1);
  assert.ok(ofA && ofB);
  const [fromB] = await onB.events(1);
  assert.equal(fromB?.id, ofB.id);
  const [fromA] = await onA.events(1);
  assert.equal(fromA?.id, ofA.id);
  assert.equal(fromA?.event, 'investigation.updated');
  assert.deepEqual(JSON.parse(fromA?.data ?? ''), {
    id: ofA.id,
    type: 'investigation.updated',
    stream_type: 'investigation',
    stream_id: ofA.streamId,
    stream_seq: 1,
    occurred_at: ofA.occurredAt.toISOString(),
    payload: { tenant: a, seq: 1 },
  });
  // B's event was read and delivered before A's; A's next event is its own sentinel.
  const [sentinel] = await appendSeparately(db.app, a, 1);
  const [next] = await onA.events(1);
  assert.equal(next?.id, sentinel?.id);
  onA.close();
  onB.close();
});

test('§5.7.8 SSE: an idle stream gets heartbeat comment lines', async () => {
  const a = await createTenant(db.pools.app);
  const stream = await connect(a);
  const first = await stream.block();
  const second = await stream.block();
  assert.deepEqual([first, second], [{ comment: 'heartbeat' }, { comment: 'heartbeat' }]);
  stream.close();
});

test('§5.7.8 SSE: Last-Event-ID resumes right after that event, then continues live', async () => {
  const a = await createTenant(db.pools.app);
  const history = await appendSeparately(db.app, a, 5);
  const stream = await connect(a, { 'Last-Event-ID': history[1]?.id ?? '' });
  const replayed = await stream.events(3);
  assert.deepEqual(
    replayed.map((e) => e.id),
    history.slice(2).map((e) => e.id),
  );
  const [live] = await appendSeparately(db.app, a, 1);
  const [next] = await stream.events(1);
  assert.equal(next?.id, live?.id);
  stream.close();
});

test('§5.7.8 SSE: a Last-Event-ID that is not a decimal event id is refused with 400 before subscribing', async () => {
  const a = await createTenant(db.pools.app);
  await waitFor('no subscribers left', () => hub.hub.status().subscribers === 0);
  for (const bad of ['abc', '-1', '1e3', '12abc', '99999999999999999999']) {
    const res = await fetch(`${url}/tenants/${a}/events`, { headers: { 'Last-Event-ID': bad } });
    assert.equal(res.status, 400, bad);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    const body = (await res.json()) as { code: string };
    assert.equal(body.code, 'invalid_last_event_id');
  }
  assert.equal(hub.hub.status().subscribers, 0);
});

test('§5.7.8 SSE: a client that disconnects is unsubscribed', async () => {
  const a = await createTenant(db.pools.app);
  await waitFor('no subscribers left', () => hub.hub.status().subscribers === 0);
  const stream = await connect(a);
  await waitFor('the subscription', () => hub.hub.status().subscribers === 1);
  stream.close();
  await waitFor('the subscription to end', () => hub.hub.status().subscribers === 0);
  assert.equal(hub.hub.status().tenants, 0);
});

test('issue 10.3 SSE: a stream ends at its credential deadline with a last `expired` event', async (t) => {
  const a = await createTenant(db.pools.app);
  await waitFor('no subscribers left', () => hub.hub.status().subscribers === 0);
  const stream = await connect(a, { 'x-expires-in': '400' });
  t.after(stream.close);
  // Fails rather than hangs if the stream never ends.
  const bound = setTimeout(stream.close, 10_000);
  t.after(() => clearTimeout(bound));
  await waitFor('the subscription', () => hub.hub.status().subscribers === 1);
  const blocks: Block[] = [];
  for (;;) {
    const next = await stream.block();
    blocks.push(next);
    if (next.comment === undefined) break;
  }
  assert.deepEqual(blocks.at(-1), { event: 'expired', data: '{"reason":"token_expired"}' });
  await assert.rejects(stream.block(), /the stream ended/);
  await waitFor('the subscription to end', () => hub.hub.status().subscribers === 0);
});
