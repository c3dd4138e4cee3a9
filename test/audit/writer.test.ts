import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { writeAudit } from '../../src/domains/audit/audit-repository.ts';
import { withRequestId } from '../../src/log/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

let db: TestDatabase;
let tenantA: string;
let tenantB: string;
before(async () => {
  db = await createTestDatabase();
  tenantA = await createTenant(db.pools.app);
  tenantB = await createTenant(db.pools.app);
});
after(() => db.drop());

test('§2.6 the audit writer records every field, with the request id from the request context', async () => {
  const userId = randomUUID();
  const record = await withRequestId('req-123', () =>
    db.app.withTenant(tenantA, (tx) =>
      writeAudit(tx, {
        tenantId: tenantA,
        actorPrincipal: 'User',
        actorId: userId,
        action: 'investigation.approve',
        resourceType: 'pending_review',
        resourceId: 'r-1',
        before: { decision: null },
        after: { decision: 'approved' },
        actingAs: tenantA,
        details: { note: 'looks right' },
      }),
    ),
  );
  const { rows } = await db.pools.mssp.query('SELECT * FROM audit_log WHERE id = $1', [record.id]);
  assert.ok(rows[0]?.timestamp instanceof Date);
  assert.deepEqual(rows[0], {
    id: record.id,
    timestamp: rows[0]?.timestamp,
    tenant_id: tenantA,
    actor_principal: 'User',
    actor_id: userId,
    action: 'investigation.approve',
    resource_type: 'pending_review',
    resource_id: 'r-1',
    before: { decision: null },
    after: { decision: 'approved' },
    acting_as: tenantA,
    request_id: 'req-123',
    details: { note: 'looks right' },
  });
});

test('§5.7.3 svc_app can write install-scoped rows but cannot read them back', async () => {
  const record = await db.app.withoutTenant((tx) =>
    writeAudit(tx, {
      tenantId: null,
      actorPrincipal: 'User',
      actorId: randomUUID(),
      action: 'settings.update',
      resourceType: 'install_settings',
    }),
  );
  const { rowCount } = await db.pools.app.query('SELECT 1 FROM audit_log WHERE id = $1', [
    record.id,
  ]);
  assert.equal(rowCount, 0);
});

test('§5.7.3 an audit row cannot be written into another tenant, nor without context into a tenant', async () => {
  const entry = {
    tenantId: tenantB,
    actorPrincipal: 'User' as const,
    actorId: randomUUID(),
    action: 'tenant.suspend',
    resourceType: 'tenant',
  };
  await assert.rejects(
    db.app.withTenant(tenantA, (tx) => writeAudit(tx, entry)),
    /row-level security/,
  );
  await assert.rejects(
    db.app.withoutTenant((tx) => writeAudit(tx, entry)),
    /row-level security/,
  );
  const { rowCount } = await db.pools.mssp.query('SELECT 1 FROM audit_log WHERE tenant_id = $1', [
    tenantB,
  ]);
  assert.equal(rowCount, 0);
});

test('§2.6 malformed audit rows are refused by the schema', async () => {
  const base = {
    tenantId: tenantA,
    actorPrincipal: 'User' as const,
    actorId: 'u',
    action: 'tenant.create',
    resourceType: 'tenant',
  };
  const bad = [
    { ...base, actorPrincipal: 'Root' as never },
    { ...base, actorPrincipal: 'Worker' as const, actorId: 'not-a-worker-id' },
    { ...base, actorPrincipal: 'System' as const, actorId: 'root' },
    { ...base, action: 'Tenant Create' },
    { ...base, actingAs: tenantB },
  ];
  for (const entry of bad) {
    await assert.rejects(
      db.app.withTenant(tenantA, (tx) => writeAudit(tx, entry)),
      /violates check constraint|foreign key/,
    );
  }
});
