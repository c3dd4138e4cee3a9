import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { CREDENTIAL_RECHECK_MS } from '../../src/domains/sessions/credential-watch.ts';
import {
  SESSION_ABSOLUTE_MS,
  SESSION_IDLE_MS,
} from '../../src/domains/sessions/session-repository.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { appendNote, openStream, waitFor } from './support.ts';

/**
 * Issue 10 item 3: an open event stream must end within seconds of its credential ceasing to
 * be valid, and never outlive its expiry. Every stream here is opened through the real API
 * with a real credential; the credential is then revoked or let expire the way an attacker's
 * victim (or the attacker's own clock) would see it.
 */

const PASSWORD = 'correct horse battery';
const MINUTE = 60_000;
/** One re-check pass, plus room for a pass already under way and a slow machine. */
const BOUND_MS = 3 * CREDENTIAL_RECHECK_MS;

let db: TestDatabase;
let api: TestApi;
let tenant: string;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, {
    auth: { loginRateLimitPerEmail: 1000, loginRateLimitPerIp: 1000 },
  });
  tenant = await createTenant(db.pools.app);
  await seedUser(db, api.hasher, {
    email: 'admin@mssp.test',
    role: 'platform_admin',
    password: PASSWORD,
  });
});
/** Streams a test opened; a failing test must not leave one holding the server open. */
const opened = new Set<() => void>();
afterEach(() => {
  for (const close of opened) close();
  opened.clear();
});
after(async () => {
  await api.close();
  await db.drop();
});

let n = 0;
async function user(role: 'customer_viewer' | 'analyst') {
  n++;
  const email = `${role === 'analyst' ? 'analyst' : 'viewer'}-${n}@acme.test`;
  const id = await seedUser(db, api.hasher, {
    email,
    role,
    tenantId: role === 'customer_viewer' ? tenant : null,
    password: PASSWORD,
  });
  return { id, email };
}

async function signIn(email: string) {
  const browser = client(api);
  assert.equal((await browser.login(email, PASSWORD)).status, 200);
  return browser;
}

/** The platform admin, signed in afresh: tests move the clock past earlier sessions. */
async function adminCall(path: string): Promise<number> {
  return (await (await signIn('admin@mssp.test')).call('POST', path)).status;
}

const append = (note: string) => appendNote(db.app, tenant, note);

/** A stream of this API, closed after the test whatever happens. */
function open(path: string, headers: Record<string, string>) {
  return openStream(`${api.url}${path}`, headers, opened);
}

type Stream = Awaited<ReturnType<typeof open>>;

/** Waits until `count` streams are subscribed in the hub (beyond those already open). */
async function subscribed(count: number): Promise<void> {
  await waitFor(`${count} subscribers`, () => api.events.status().subscribers === count);
}

/** Proves the stream delivers before the credential goes: an event written now arrives. */
async function delivers(stream: Stream, note: string): Promise<void> {
  const event = await append(note);
  assert.equal((await stream.next(BOUND_MS))?.id, event.id, `${note} delivered`);
}

/**
 * The stream's last block says why it ends, within the bound, and then the stream is closed:
 * an event written afterwards reaches nobody.
 */
async function endsWith(stream: Stream, event: string, reason: string): Promise<void> {
  let block = await stream.next(BOUND_MS);
  // Events committed before the pass noticed may still arrive; they all carry ids.
  while (block?.id !== undefined) block = await stream.next(BOUND_MS);
  assert.deepEqual(block, { event, data: JSON.stringify({ reason }) });
  await append('after the end');
  assert.equal(await stream.next(BOUND_MS), undefined, 'the stream is closed');
}

test('issue 10.3 deactivating a customer ends their open streams, by session and by token', async () => {
  const viewer = await user('customer_viewer');
  const browser = await signIn(viewer.email);
  const bySession = await open('/api/tenant/events', { cookie: browser.cookie() ?? '' });
  const { token } = await api.tokens.mintTenantUser({ userId: viewer.id, tenantId: tenant });
  const byToken = await open('/api/tenant/events', { authorization: `Bearer ${token}` });
  await subscribed(2);
  await delivers(bySession, 'before');
  assert.ok(await byToken.next(BOUND_MS));

  assert.equal(await adminCall(`/api/mssp/tenants/${tenant}/users/${viewer.id}:deactivate`), 200);
  await endsWith(bySession, 'revoked', 'user_disabled');
  await endsWith(byToken, 'revoked', 'user_disabled');
  await subscribed(0);
});

test('issue 10.3 logout ends the stream of that session and no other', async () => {
  const viewer = await user('customer_viewer');
  const leaving = await signIn(viewer.email);
  const staying = await signIn(viewer.email);
  const ofLeaving = await open('/api/tenant/events', { cookie: leaving.cookie() ?? '' });
  const ofStaying = await open('/api/tenant/events', { cookie: staying.cookie() ?? '' });
  await subscribed(2);
  assert.equal((await leaving.call('POST', '/api/auth/logout')).status, 204);
  await endsWith(ofLeaving, 'revoked', 'session_revoked');
  // The same user's other session was not logged out: its stream carries on.
  const sentinel = await append('still here');
  for (;;) {
    const block = await ofStaying.next(BOUND_MS);
    assert.ok(block?.id, 'the other stream is still open');
    if (block.id === sentinel.id) break;
  }
  ofStaying.close();
  await subscribed(0);
});

test("issue 10.3 an admin password reset ends the target's open streams", async () => {
  const viewer = await user('customer_viewer');
  const browser = await signIn(viewer.email);
  const stream = await open('/api/tenant/events', { cookie: browser.cookie() ?? '' });
  await subscribed(1);
  await delivers(stream, 'before');
  assert.equal(await adminCall(`/api/mssp/users/${viewer.id}/password/reset`), 200);
  await endsWith(stream, 'revoked', 'session_revoked');
  await subscribed(0);
});

test('issue 10.3 idle expiry ends an open stream: an open stream is not activity', async () => {
  const viewer = await user('customer_viewer');
  const browser = await signIn(viewer.email);
  const stream = await open('/api/tenant/events', { cookie: browser.cookie() ?? '' });
  await subscribed(1);
  await delivers(stream, 'before');
  api.clock.advance(SESSION_IDLE_MS + 1000);
  await endsWith(stream, 'expired', 'session_expired');
  assert.equal((await browser.call('GET', '/api/auth/me')).status, 401);
  await subscribed(0);
});

test('issue 10.3 other requests of the session keep its stream open until the absolute expiry', async () => {
  const viewer = await user('customer_viewer');
  const browser = await signIn(viewer.email);
  const stream = await open('/api/tenant/events', { cookie: browser.cookie() ?? '' });
  await subscribed(1);
  const watch = api.watch;
  // Past the idle deadline the stream opened with, but the session was used meanwhile.
  for (let i = 0; i < 2; i++) {
    api.clock.advance(20 * MINUTE);
    assert.equal((await browser.call('GET', '/api/auth/me')).status, 200);
  }
  const passes = watch.status().passes;
  await waitFor('two re-check passes', () => watch.status().passes >= passes + 2, BOUND_MS);
  await delivers(stream, 'the slid idle expiry holds');
  for (let elapsed = 40 * MINUTE; elapsed < SESSION_ABSOLUTE_MS; elapsed += 20 * MINUTE) {
    assert.equal((await browser.call('GET', '/api/auth/me')).status, 200);
    api.clock.advance(20 * MINUTE);
  }
  assert.equal((await browser.call('GET', '/api/auth/me')).status, 401);
  await endsWith(stream, 'expired', 'session_expired');
  await subscribed(0);
});

test("issue 10.3 an impersonation token's MSSP stream ends at the token's exp (30-minute cap)", async () => {
  const analyst = await user('analyst');
  const staff = await signIn(analyst.email);
  const minted = await staff.call('POST', `/api/mssp/impersonate/${tenant}`, {
    reason: 'ticket 4711',
    ttl_seconds: 1800,
  });
  assert.equal(minted.status, 200);
  const stream = await open(`/api/mssp/tenants/${tenant}/events`, {
    authorization: `Bearer ${String(minted.body.token)}`,
  });
  // Issue 10 item 8: the MSSP stream is no more cacheable than the tenant one.
  assert.equal(stream.res.headers.get('cache-control'), 'no-store');
  await subscribed(1);
  await delivers(stream, 'before');
  api.clock.advance(30 * MINUTE);
  await endsWith(stream, 'expired', 'token_expired');
  await subscribed(0);
});

test('issue 10.3 the MSSP stream of a token ends when its user is disabled or must change password', async () => {
  const disabled = await user('analyst');
  const reset = await user('analyst');
  const streams = [];
  for (const { id } of [disabled, reset]) {
    const { token } = await api.tokens.mintMsspUser({ userId: id, role: 'analyst' });
    streams.push(
      await open(`/api/mssp/tenants/${tenant}/events`, { authorization: `Bearer ${token}` }),
    );
  }
  const [ofDisabled, ofReset] = streams as [Stream, Stream];
  await subscribed(2);
  await delivers(ofDisabled, 'before');
  assert.ok(await ofReset.next(BOUND_MS));
  // No API disables MSSP staff yet; an operator does it in the database.
  await db.pools.mssp.query('UPDATE users SET disabled_at = now() WHERE id = $1', [disabled.id]);
  assert.equal(await adminCall(`/api/mssp/users/${reset.id}/password/reset`), 200);
  await endsWith(ofDisabled, 'revoked', 'user_disabled');
  await endsWith(ofReset, 'revoked', 'password_change_required');
  await subscribed(0);
});
