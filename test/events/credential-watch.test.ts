import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Credential } from '../../src/auth/credential.ts';
import type { Role } from '../../src/auth/identity.ts';
import { createAppDatabase } from '../../src/db/pools.ts';
import {
  type CredentialLease,
  type CredentialWatch,
  createCredentialWatch,
} from '../../src/domains/sessions/credential-watch.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

/**
 * Issue 33: the credential watch's pass reads every tenant's customers in one transaction (a
 * set_config per tenant inside it, all in one round trip: src/db/tenant-batch.ts) instead of a
 * transaction per tenant, and finds the leases a
 * revocation names through an index instead of scanning them all. Real users in real tenants,
 * read back through svc_app under RLS.
 */

const TENANTS = 30;
const YEAR = 365 * 24 * 3600_000;

let db: TestDatabase;
/** A pool of the watch's own, so every checkout on it is the watch's. */
let watchDb: ReturnType<typeof createAppDatabase>;
const tenants: { id: string; users: string[] }[] = [];
let staff: string;
const watches: CredentialWatch[] = [];

async function insertUser(tenantId: string | null, role: Role): Promise<string> {
  return db.app.withScope(tenantId, async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      'INSERT INTO users (tenant_id, email, role) VALUES ($1, $2, $3) RETURNING id',
      [tenantId, `${randomUUID()}@watch.test`, role],
    );
    const id = rows[0]?.id;
    assert.ok(id);
    return id;
  });
}

before(async () => {
  db = await createTestDatabase();
  watchDb = createAppDatabase(db.target, 2);
  for (let i = 0; i < TENANTS; i++) {
    const id = await createTenant(db.pools.app);
    tenants.push({
      id,
      users: [await insertUser(id, 'customer_viewer'), await insertUser(id, 'customer_viewer')],
    });
  }
  staff = await insertUser(null, 'analyst');
});
after(async () => {
  await watchDb.close();
  await db.drop();
});

function token(userId: string, userTenant: string | null, role: Role): Credential {
  return { kind: 'token', userId, userTenant, role, expiresAt: new Date(Date.now() + YEAR) };
}

function newWatch(): CredentialWatch {
  // No periodic pass during a test: each one is started by the test itself.
  const watch = createCredentialWatch({
    db: watchDb,
    now: () => new Date(),
    recheckMs: YEAR / 1000,
  });
  watches.push(watch);
  return watch;
}

/** Every customer of every tenant and one staff member, watched, after their first check. */
async function watchAll(watch: CredentialWatch) {
  const leases = new Map<string, CredentialLease>();
  for (const tenant of tenants)
    for (const user of tenant.users)
      leases.set(user, watch.watch(token(user, tenant.id, 'customer_viewer')));
  leases.set(staff, watch.watch(token(staff, null, 'analyst')));
  await watch.settled();
  for (const [user, lease] of leases) assert.equal(lease.check(), undefined, `user ${user}`);
  return leases;
}

function release(leases: Map<string, CredentialLease>) {
  for (const lease of leases.values()) lease.release();
}

test('issue 33 a full re-check over many tenants takes two connections once (sessions and staff; every tenant in one batch) and ends only the disabled user', async () => {
  const watch = newWatch();
  const leases = await watchAll(watch);
  const target = tenants[17];
  const disabled = target?.users[1];
  assert.ok(target && disabled);
  await db.app.withTenant(target.id, (tx) =>
    tx.query('UPDATE users SET disabled_at = now() WHERE id = $1', [disabled]),
  );
  let checkouts = 0;
  const count = () => {
    checkouts++;
  };
  watchDb.pool.on('acquire', count);
  try {
    watch.recheckAll();
    assert.equal(watch.status().doubted, leases.size, 'every lease is held back at once');
    await watch.settled();
  } finally {
    watchDb.pool.off('acquire', count);
  }
  assert.equal(
    checkouts,
    2,
    `${TENANTS} tenants read in one transaction beside the install-wide one`,
  );
  assert.equal(watch.status().doubted, 0);
  for (const [user, lease] of leases)
    assert.deepEqual(
      lease.check(),
      user === disabled ? { event: 'revoked', reason: 'user_disabled' } : undefined,
      `user ${user}`,
    );
  assert.equal(watch.status().watched, leases.size - 1);
  release(leases);
  assert.equal(watch.status().watched, 0);
  // The later tests watch every user again.
  await db.app.withTenant(target.id, (tx) =>
    tx.query('UPDATE users SET disabled_at = NULL WHERE id = $1', [disabled]),
  );
});

test('issue 33 each tenant scope of the batched pass sees only its own tenant: a credential naming another tenant finds no user', async () => {
  const watch = newWatch();
  const [b, a] = [tenants[3], tenants[4]];
  assert.ok(a && b);
  const [genuine, stranger] = b.users;
  assert.ok(genuine && stranger);
  // B's scope runs first and A's right after it in the same transaction: had A's read kept B's
  // context, it would see B's user, and the lease would end as role_changed instead.
  const ofB = watch.watch(token(genuine, b.id, 'customer_viewer'));
  const forged = watch.watch(token(stranger, a.id, 'customer_viewer'));
  await watch.settled();
  assert.equal(ofB.check(), undefined);
  assert.deepEqual(forged.check(), { event: 'revoked', reason: 'user_disabled' });
  ofB.release();
});

test('issue 33 a revocation notice puts in doubt only the leases it names; settled() waits for those alone', async () => {
  const watch = newWatch();
  const leases = await watchAll(watch);
  const tenant = tenants[9];
  const [first, second] = tenant?.users ?? [];
  assert.ok(tenant && first && second);
  watch.revoked({ kind: 'user', id: first });
  assert.equal(watch.status().doubted, 1);
  await watch.settled();
  watch.revoked({ kind: 'tenant', id: tenant.id });
  assert.equal(watch.status().doubted, 2);
  await watch.settled();
  watch.revoked({ kind: 'session', id: randomUUID() });
  watch.revoked({ kind: 'user', id: randomUUID() });
  assert.equal(watch.status().doubted, 0, 'a notice naming nobody watched costs nothing');
  await watch.settled();
  for (const lease of leases.values()) assert.equal(lease.check(), undefined);
  release(leases);
});
