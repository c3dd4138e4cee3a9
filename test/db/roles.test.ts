import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant, TENANT_ROW_FIXTURES } from '../support/fixtures.ts';

let db: TestDatabase;
let tenantA: string;
let tenantB: string;

before(async () => {
  db = await createTestDatabase();
  tenantA = await createTenant(db.pools.app);
  tenantB = await createTenant(db.pools.app);
  for (const insert of Object.values(TENANT_ROW_FIXTURES)) {
    await db.app.withTenant(tenantA, (tx) => insert(tx, tenantA));
    await db.app.withTenant(tenantB, (tx) => insert(tx, tenantB));
  }
});
after(() => db.drop());

const tables = Object.keys(TENANT_ROW_FIXTURES);

test('§5.7 roles have exactly the attributes of the spec', async () => {
  const { rows } = await db.pools.admin.query<{
    rolname: string;
    rolsuper: boolean;
    rolbypassrls: boolean;
    rolcanlogin: boolean;
    rolcreaterole: boolean;
  }>(
    // svc_backup exists once anything took a backup on this server (`svc db backup` creates it,
    // NOLOGIN; test/db/backup.test.ts checks its shape): the server is shared by every file.
    `SELECT rolname, rolsuper, rolbypassrls, rolcanlogin, rolcreaterole FROM pg_roles
       WHERE rolname LIKE 'svc\\_%' AND rolname <> 'svc_backup' ORDER BY rolname`,
  );
  assert.deepEqual(rows, [
    {
      rolname: 'svc_admin',
      rolsuper: false,
      rolbypassrls: false,
      rolcanlogin: true,
      rolcreaterole: false,
    },
    {
      rolname: 'svc_app',
      rolsuper: false,
      rolbypassrls: false,
      rolcanlogin: true,
      rolcreaterole: false,
    },
    // Not in §5.7: the read-only role of `svc psql` (issue 27, docs/auditing.md).
    {
      rolname: 'svc_audit',
      rolsuper: false,
      rolbypassrls: false,
      rolcanlogin: true,
      rolcreaterole: false,
    },
    {
      rolname: 'svc_mssp',
      rolsuper: false,
      rolbypassrls: true,
      rolcanlogin: true,
      rolcreaterole: false,
    },
  ]);
});

test('§5.7 svc_admin owns the tables and FORCE RLS binds it: zero rows without context', async () => {
  for (const table of tables) {
    const owner = await db.pools.admin.query<{ owner: string }>(
      `SELECT tableowner AS owner FROM pg_tables WHERE schemaname = 'public' AND tablename = $1`,
      [table],
    );
    assert.equal(owner.rows[0]?.owner, 'svc_admin', `${table} owner`);
    const { rowCount } = await db.pools.admin.query(
      `SELECT 1 FROM ${table} WHERE tenant_id IS NOT NULL`,
    );
    assert.equal(rowCount, 0, `svc_admin read ${table} rows without a tenant context`);
  }
});

test('§5.7 svc_mssp (BYPASSRLS) sees every tenant', async () => {
  for (const table of tables) {
    const { rows } = await db.pools.mssp.query<{ tenant_id: string }>(
      `SELECT DISTINCT tenant_id FROM ${table} WHERE tenant_id IS NOT NULL`,
    );
    const seen = rows.map((r) => r.tenant_id);
    assert.ok(seen.includes(tenantA) && seen.includes(tenantB), `${table}: ${seen}`);
  }
});

test('§2.6 svc_app cannot UPDATE or DELETE audit_log rows, even its own tenant', async () => {
  for (const sql of [
    `UPDATE audit_log SET action = 'tenant.suspend'`,
    'DELETE FROM audit_log',
    'TRUNCATE audit_log',
  ]) {
    await assert.rejects(
      db.app.withTenant(tenantA, (tx) => tx.query(sql)),
      /permission denied/,
      sql,
    );
  }
  const { rows } = await db.pools.mssp.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM audit_log',
  );
  assert.equal(rows[0]?.n, 2);
});

test('§5.7 svc_app cannot SET ROLE to svc_mssp or svc_admin', async () => {
  for (const role of ['svc_mssp', 'svc_admin', 'postgres']) {
    await assert.rejects(db.pools.app.query(`SET ROLE ${role}`), /permission denied/, role);
    await assert.rejects(
      db.pools.app.query(`SET SESSION AUTHORIZATION ${role}`),
      /permission denied/,
      role,
    );
  }
});

test('§5.7 svc_app cannot switch RLS off, create objects, or read migration history', async () => {
  await assert.rejects(
    db.pools.app.query('ALTER TABLE events DISABLE ROW LEVEL SECURITY'),
    /must be owner/,
  );
  await assert.rejects(
    db.pools.app.query('ALTER TABLE events NO FORCE ROW LEVEL SECURITY'),
    /must be owner/,
  );
  await assert.rejects(
    db.pools.app.query('DROP POLICY tenant_isolation ON events'),
    /must be owner/,
  );
  await assert.rejects(db.pools.app.query('CREATE TABLE sneaky (id int)'), /permission denied/);
  await assert.rejects(db.pools.app.query('SELECT * FROM schema_migrations'), /permission denied/);
});

test('§2.3 append-only tables: svc_app cannot UPDATE or DELETE events or lifecycle events', async () => {
  for (const table of ['events', 'tenant_lifecycle_events']) {
    await assert.rejects(
      db.app.withTenant(tenantA, (tx) => tx.query(`DELETE FROM ${table}`)),
      /permission denied/,
    );
    await assert.rejects(
      db.app.withTenant(tenantA, (tx) => tx.query(`UPDATE ${table} SET details = '{}'`)),
      /permission denied|column "details"/,
    );
  }
});

test('§2.3 a composite foreign key cannot point a tenant A row at a tenant B row', async () => {
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    'SELECT id FROM investigations WHERE tenant_id = $1 LIMIT 1',
    [tenantB],
  );
  const investigationOfB = rows[0]?.id;
  assert.ok(investigationOfB);
  // Even the BYPASSRLS role cannot: the key itself carries the tenant.
  for (const pool of [db.pools.mssp]) {
    await assert.rejects(
      pool.query(
        `INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, rationale, risk, requested_by)
         VALUES ($1, $2, 'isolate_host', 'x', 'low', 'worker:t')`,
        [tenantA, investigationOfB],
      ),
      /violates foreign key constraint/,
    );
  }
  await assert.rejects(
    db.app.withTenant(tenantA, (tx) =>
      tx.query(
        `INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, rationale, risk, requested_by)
         VALUES ($1, $2, 'isolate_host', 'x', 'low', 'worker:t')`,
        [tenantA, investigationOfB],
      ),
    ),
    /violates foreign key constraint/,
  );
});

test('§2.2 tenant_id is NULL exactly for the three MSSP roles', async () => {
  await db.pools.mssp.query(
    `INSERT INTO users (email, role) VALUES ('pa@mssp.test', 'platform_admin')`,
  );
  await assert.rejects(
    db.pools.mssp.query(
      `INSERT INTO users (email, role) VALUES ('cv@customer.test', 'customer_viewer')`,
    ),
    /users_scope_matches_role/,
  );
  await assert.rejects(
    db.pools.mssp.query(
      `INSERT INTO users (tenant_id, email, role) VALUES ($1, 'an@mssp.test', 'analyst')`,
      [tenantA],
    ),
    /users_scope_matches_role/,
  );
  await assert.rejects(
    db.pools.mssp.query(`INSERT INTO users (email, role) VALUES ('x@mssp.test', 'root')`),
    /users_role_check/,
  );
});

test('§2.4 tenant slugs are DNS-safe and unique', async () => {
  for (const slug of ['Upper', '-lead', 'trail-', 'under_score', 'a'.repeat(57), '']) {
    await assert.rejects(
      db.pools.app.query(`INSERT INTO tenants (slug, display_name) VALUES ($1, 'x')`, [slug]),
      /tenants_slug_check/,
      slug,
    );
  }
  await createTenant(db.pools.app, 'dup');
  await assert.rejects(createTenant(db.pools.app, 'dup'), /tenants_slug_key/);
});
