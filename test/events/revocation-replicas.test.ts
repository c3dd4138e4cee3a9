import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { loadChartCatalog } from '../../src/orchestrator/catalog.ts';
import { DEFAULT_EDGE_PORT_BASE, DEFAULT_TIMING } from '../../src/orchestrator/context.ts';
import { SYSTEM_VERSION } from '../../src/orchestrator/runtime.ts';
import { setState } from '../internal/support.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';
import { appendNote, type Block, openStream, waitFor } from './support.ts';

/**
 * Issue 27 item 3: no tenant data flows to a revoked credential once the revoking call has
 * returned, on any replica. Two API processes share one database, as two replicas behind a
 * load balancer: the victim's stream is open on B, the revocation goes through A, and an event
 * is committed the moment A answers. Before the fix the stream learnt of the revocation only
 * at its next re-check (CREDENTIAL_RECHECK_MS, 5 s) and delivered that event first.
 *
 * Nothing here waits on elapsed time: each stream is read until it ends, and the bound on a
 * read only turns a hang into a failure.
 */

const PASSWORD = 'correct horse battery';
/** A hang, not a pace: every read below normally returns within milliseconds. */
const HANG_MS = 20_000;

let db: TestDatabase;
let a: TestApi;
let b: TestApi;

before(async () => {
  db = await createTestDatabase();
  const options = {
    hash: { params: TEST_HASH_PARAMS },
    auth: { loginRateLimitPerEmail: 1000, loginRateLimitPerIp: 1000 },
  };
  // A serves the revoking calls, suspension included (it needs the tenancy half).
  a = await startTestApi(db, {
    ...options,
    tenancy: {
      kick: () => undefined,
      systemVersion: SYSTEM_VERSION,
      edgePortBase: DEFAULT_EDGE_PORT_BASE,
      decommissionGraceMs: DEFAULT_TIMING.decommissionGraceMs,
      catalog: await loadChartCatalog(),
    },
  });
  b = await startTestApi(db, options);
  await seedUser(db, a.hasher, {
    email: 'admin@mssp.test',
    role: 'platform_admin',
    password: PASSWORD,
  });
});
const opened = new Set<() => void>();
afterEach(() => {
  for (const close of opened) close();
  opened.clear();
});
after(async () => {
  await a.close();
  await b.close();
  await db.drop();
});

let n = 0;
/** A customer of a fresh active tenant, signed in (the session row serves either replica). */
async function victim() {
  n++;
  const tenant = await createTenant(db.pools.app, `rev-${n}`);
  await setState(db, tenant, 'active');
  const email = `viewer-${n}@rev.test`;
  const id = await seedUser(db, a.hasher, {
    email,
    role: 'customer_viewer',
    tenantId: tenant,
    password: PASSWORD,
  });
  const browser = client(a);
  assert.equal((await browser.login(email, PASSWORD)).status, 200);
  return { tenant, id, email, browser };
}

async function admin() {
  const browser = client(a);
  assert.equal((await browser.login('admin@mssp.test', PASSWORD)).status, 200);
  return browser;
}

/** The victim's stream on `replica`, proven live: an event committed now arrives. */
async function liveStream(replica: TestApi, tenant: string, cookie: string) {
  const subscribers = replica.events.status().subscribers;
  const stream = await openStream(`${replica.url}/api/tenant/events`, { cookie }, opened);
  await waitFor('the subscription', () => replica.events.status().subscribers > subscribers);
  const before = await appendNote(db.app, tenant, 'before');
  assert.equal((await stream.next(HANG_MS))?.id, before.id, 'the stream delivers before');
  return stream;
}

/**
 * The attacker's view after the revoking call returned and an event was committed at once:
 * every block the stream still sends, up to its end. The event must not be among them.
 */
async function rest(stream: Awaited<ReturnType<typeof openStream>>): Promise<Block[]> {
  const blocks: Block[] = [];
  for (;;) {
    const block = await stream.next(HANG_MS);
    if (block === undefined) return blocks;
    blocks.push(block);
  }
}

type Victim = Awaited<ReturnType<typeof victim>>;

async function revokedOnB(
  revoke: (target: Victim) => Promise<number>,
  expected: { status: number; reason: string },
): Promise<void> {
  const target = await victim();
  const stream = await liveStream(b, target.tenant, target.browser.cookie() ?? '');
  assert.equal(await revoke(target), expected.status);
  const leaked = await appendNote(db.app, target.tenant, 'after the revocation');
  assert.deepEqual(await rest(stream), [
    { event: 'revoked', data: JSON.stringify({ reason: expected.reason }) },
  ]);
  assert.ok(leaked.id, 'the event was committed');
  await waitFor('no subscriber left on B', () => b.events.status().subscribers === 0);
}

test('issue 27.3 deactivation through replica A: the stream on B ends before any later event', async () => {
  const staff = await admin();
  await revokedOnB(
    async ({ tenant, id }) =>
      (await staff.call('POST', `/api/mssp/tenants/${tenant}/users/${id}:deactivate`)).status,
    { status: 200, reason: 'user_disabled' },
  );
});

test('issue 27.3 logout through replica A: the stream on B ends before any later event', async () => {
  await revokedOnB(async ({ browser }) => (await browser.call('POST', '/api/auth/logout')).status, {
    status: 204,
    reason: 'session_revoked',
  });
});

test('issue 27.3 an admin password reset through replica A: the stream on B ends before any later event', async () => {
  const staff = await admin();
  await revokedOnB(
    async ({ id }) => (await staff.call('POST', `/api/mssp/users/${id}/password/reset`)).status,
    { status: 200, reason: 'session_revoked' },
  );
});

test("issue 27.3 a password change in another session through replica A: the old session's stream on B ends", async () => {
  await revokedOnB(
    async ({ email }) => {
      const other = client(a);
      assert.equal((await other.login(email, PASSWORD)).status, 200);
      return (
        await other.call('POST', '/api/auth/password/change', {
          current_password: PASSWORD,
          new_password: 'a different horse battery',
        })
      ).status;
    },
    { status: 200, reason: 'session_revoked' },
  );
});

test('issue 27.3 suspension through replica A: the customer stream on B ends before any later event', async () => {
  const staff = await admin();
  await revokedOnB(
    async ({ tenant }) =>
      (await staff.call('POST', `/api/mssp/tenants/${tenant}:suspend`, { reason: 'unpaid' }))
        .status,
    { status: 200, reason: 'tenant_suspended' },
  );
});

test('issue 27.3 on the revoking replica the stream has ended when the call answers', async () => {
  const target = await victim();
  const stream = await liveStream(a, target.tenant, target.browser.cookie() ?? '');
  const watched = a.watch.status().watched;
  assert.equal((await target.browser.call('POST', '/api/auth/logout')).status, 204);
  // Judged at the moment of the answer, before anything else can run.
  assert.equal(a.watch.status().watched, watched - 1, 'the lease ended before the answer');
  await appendNote(db.app, target.tenant, 'after the logout');
  assert.deepEqual(await rest(stream), [
    { event: 'revoked', data: JSON.stringify({ reason: 'session_revoked' }) },
  ]);
});

test('issue 27.3 a revocation notice of someone else pauses nothing for long: the stream carries on', async () => {
  const target = await victim();
  const bystander = await victim();
  const stream = await liveStream(b, target.tenant, target.browser.cookie() ?? '');
  assert.equal((await bystander.browser.call('POST', '/api/auth/logout')).status, 204);
  // A forged notice naming the victim itself: any connected role may NOTIFY.
  await db.pools.app.query(`SELECT pg_notify('svc_revocation', $1)`, [
    JSON.stringify({ user: target.id }),
  ]);
  const after = await appendNote(db.app, target.tenant, 'still delivered');
  assert.equal((await stream.next(HANG_MS))?.id, after.id);
  stream.close();
});
