import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

/**
 * The designated system modules (spec §5.7 item 6). Adding a file here is a reviewed,
 * deliberate widening of who may bypass RLS.
 */
const DESIGNATED_SYSTEM_MODULES: readonly string[] = [
  'app/compose.ts', // the composition root: builds the gate, hands it to the services below
  'domains/users/user-service.ts', // admin password reset finds a user of any tenant, typed
  'domains/tenants/tenant-service.ts', // fleet.summary: takes the gate, typed
  'domains/provisioning/provisioning-service.ts', // tenant.purge: takes the gate, typed
  'domains/audit/audit-service.ts', // mssp.audit: takes the gate, typed
  'domains/audit/audit-retention.ts', // audit.purge: takes the gate, typed
  'domains/projections/projection-service.ts', // projector.discover: takes the gate, typed
  'domains/triage/cross-tenant-service.ts', // mssp.incidents, mssp.reviews: takes the gate, typed
  'domains/reports/report-service.ts', // mssp.reports: takes the gate, typed
];

/** Modules that enter the gate (call withSystem), each for a reason it names. */
const SYSTEM_GATE_CALLERS: readonly string[] = [
  'db/system-gate.ts', // its own definition
  'domains/users/user-service.ts', // user.password_reset: the target may be in any tenant
  'domains/tenants/tenant-service.ts', // fleet.summary: a cross-tenant rollup
  'domains/audit/audit-service.ts', // mssp.audit: the cross-tenant audit view
  'domains/audit/audit-retention.ts', // audit.purge: old rows of every tenant and the install
  'domains/provisioning/provisioning-service.ts', // tenant.purge: a tenant's rows leave every table at once
  'domains/projections/projection-service.ts', // projector.discover: tenants with unfolded events
  'domains/triage/cross-tenant-service.ts', // mssp.incidents, mssp.reviews: the analyst's work across tenants
  'domains/reports/report-service.ts', // mssp.reports: figures per tenant and period
];

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

let db: TestDatabase;
let gate: SystemGate;
before(async () => {
  db = await createTestDatabase();
  gate = createSystemGate(db.target);
});
after(async () => {
  await gate.close();
  await db.drop();
});

test('§5.7.6 withSystem writes its System audit row with the reason, then bypasses RLS', async () => {
  const a = await createTenant(db.pools.app);
  const b = await createTenant(db.pools.app);
  for (const t of [a, b]) {
    await db.app.withTenant(t, (tx) =>
      tx.query(`INSERT INTO investigations (tenant_id, title, severity) VALUES ($1, 'x', 'low')`, [
        t,
      ]),
    );
  }
  const seen = await gate.withSystem('fleet.summary', async (tx) => {
    const { rows } = await tx.query<{ tenant_id: string }>(
      'SELECT DISTINCT tenant_id FROM investigations',
    );
    return rows.map((r) => r.tenant_id).sort();
  });
  assert.deepEqual(seen, [a, b].sort());
  const { rows } = await db.pools.mssp.query(
    `SELECT tenant_id, actor_principal, actor_id, action, resource_type, resource_id
       FROM audit_log WHERE actor_id = 'system:fleet.summary'`,
  );
  assert.deepEqual(rows, [
    {
      tenant_id: null,
      actor_principal: 'System',
      actor_id: 'system:fleet.summary',
      action: 'system.enter',
      resource_type: 'system_context',
      resource_id: 'fleet.summary',
    },
  ]);
});

test('§5.7.6 the entry row survives when the work inside the gate fails', async () => {
  await assert.rejects(
    gate.withSystem('retention.purge', async (tx) => {
      await tx.query('SELECT 1/0');
    }),
    /division by zero/,
  );
  const { rowCount } = await db.pools.mssp.query(
    `SELECT 1 FROM audit_log WHERE actor_id = 'system:retention.purge'`,
  );
  assert.equal(rowCount, 1);
});

test('§5.7.6 a reason is required and well-formed, nothing is written otherwise', async () => {
  const before = await db.pools.mssp.query('SELECT count(*)::int AS n FROM audit_log');
  for (const reason of ['', 'Has Spaces', "x'; DROP TABLE audit_log; --", 'a'.repeat(80)]) {
    await assert.rejects(
      gate.withSystem(reason, async () => 1),
      /system reason must match/,
    );
  }
  const afterCount = await db.pools.mssp.query('SELECT count(*)::int AS n FROM audit_log');
  assert.deepEqual(afterCount.rows, before.rows);
});

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.join(e.parentPath, e.name));
}

test('§5.7.6 only designated system modules import the system gate', async () => {
  const importers: string[] = [];
  for (const file of await sourceFiles(SRC)) {
    const text = await readFile(file, 'utf8');
    if (/from\s+['"][^'"]*system-gate(\.ts)?['"]|import\(\s*['"][^'"]*system-gate/.test(text)) {
      importers.push(path.relative(SRC, file));
    }
  }
  assert.deepEqual(importers.sort(), [...DESIGNATED_SYSTEM_MODULES].sort());
});

test('§5.7.6 only designated system modules enter the gate', async () => {
  const callers: string[] = [];
  for (const file of await sourceFiles(SRC)) {
    if (/\bwithSystem\b/.test(await readFile(file, 'utf8'))) callers.push(path.relative(SRC, file));
  }
  assert.deepEqual(callers.sort(), [...SYSTEM_GATE_CALLERS].sort());
});

test('§5.7.6 svc_mssp credentials are used only by the system gate', async () => {
  const users: string[] = [];
  for (const file of await sourceFiles(SRC)) {
    const text = await readFile(file, 'utf8');
    if (/(clientConfig|pooledConfig)\([^)]*'mssp'\)|credentials\.mssp\b/.test(text))
      users.push(path.relative(SRC, file));
  }
  assert.deepEqual(users, ['db/system-gate.ts']);
});
