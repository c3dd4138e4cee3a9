import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TENANT_ROW_FIXTURES } from '../support/fixtures.ts';

let db: TestDatabase;
before(async () => {
  db = await createTestDatabase();
});
after(() => db.drop());

interface TableRow {
  table: string;
  rls: boolean;
  forced: boolean;
  tenant_not_null: boolean;
}

async function tenantTables(): Promise<TableRow[]> {
  const { rows } = await db.pools.admin.query<TableRow>(`
    SELECT c.relname AS table, c.relrowsecurity AS rls, c.relforcerowsecurity AS forced,
           a.attnotnull AS tenant_not_null
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
     WHERE c.relkind IN ('r', 'p')
     ORDER BY 1`);
  return rows;
}

test('§5.7.1 every table with a tenant_id column has RLS enabled and forced', async () => {
  const tables = await tenantTables();
  assert.ok(tables.length >= 13, `expected the §2.3 tables, found ${tables.map((t) => t.table)}`);
  const unprotected = tables.filter((t) => !t.rls || !t.forced).map((t) => t.table);
  assert.deepEqual(unprotected, []);
});

test('§5.7.1 every tenant table has policy tenant_isolation (audit_log: audit_read) on the NULLIF setting', async () => {
  const { rows } = await db.pools.admin.query<{
    table: string;
    policyname: string;
    cmd: string;
    qual: string | null;
    with_check: string | null;
  }>(`SELECT tablename AS table, policyname, cmd, qual, with_check FROM pg_policies
       WHERE schemaname = 'public'`);
  for (const { table } of await tenantTables()) {
    const policies = rows.filter((p) => p.table === table);
    const expected = table === 'audit_log' ? 'audit_read' : 'tenant_isolation';
    const policy = policies.find((p) => p.policyname === expected);
    assert.ok(policy, `${table} has no policy ${expected}`);
    assert.match(
      policy.qual ?? '',
      /NULLIF\(current_setting\('app\.current_tenant_id'::text, true\), ''::text\)/,
    );
    if (expected === 'tenant_isolation') {
      assert.equal(policy.cmd, 'ALL', `${table}.tenant_isolation must cover every command`);
      assert.equal(policy.with_check, policy.qual, `${table}: WITH CHECK must equal USING`);
    }
    // A permissive policy added later would widen access (policies OR together), so each
    // extra one is listed here with its reason: audit_write (INSERT only, §5.7.3) and
    // login_lookup (SELECT of the one user named by app.login_email, for sign-in), and the
    // retention purge's two (issue 15, sql/0024): TO svc_admin only and only while the session
    // user is svc_mssp, which happens only inside a SECURITY DEFINER function owned by
    // svc_admin — audit_purge_batch alone (the next test keeps it alone). users.audit_tenant_only
    // is RESTRICTIVE (it narrows svc_audit to the tenant's users, sql/0026; checked in
    // test/db/audit-role.test.ts), so it cannot widen anything; so is audit_granted_tenant,
    // which narrows svc_audit on every table it reads to the tenant of its grant (sql/0028).
    if (policies.some((p) => p.policyname === 'audit_granted_tenant'))
      assert.equal(
        (
          await db.pools.admin.query<{ permissive: string }>(
            `SELECT permissive FROM pg_policies WHERE tablename = $1 AND policyname = 'audit_granted_tenant'`,
            [table],
          )
        ).rows[0]?.permissive,
        'RESTRICTIVE',
      );
    const allowed = new Set([
      `${table}.audit_granted_tenant`,
      'audit_log.audit_write',
      'users.login_lookup',
      'users.audit_tenant_only',
      'audit_log.audit_purge_read',
      'audit_log.audit_purge',
    ]);
    const others = policies.filter((p) => p !== policy && !allowed.has(`${table}.${p.policyname}`));
    assert.deepEqual(
      others.map((p) => p.policyname),
      [],
      `${table} has extra policies`,
    );
  }
});

test('issue 15: audit_purge_batch is the only SECURITY DEFINER function that reads audit_log, so the purge policies open it to nothing else', async () => {
  const { rows } = await db.pools.admin.query<{
    name: string;
    owner: string;
    source: string;
    mssp: boolean;
  }>(
    `SELECT p.proname AS name, r.rolname AS owner, p.prosrc AS source,
            has_function_privilege('svc_mssp', p.oid, 'EXECUTE') AS mssp
       FROM pg_proc p
       JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_roles r ON r.oid = p.proowner
      WHERE n.nspname = 'public' AND p.prosecdef ORDER BY 1`,
  );
  assert.deepEqual(
    rows.map(({ name, owner }) => ({ name, owner })),
    [
      { name: 'audit_granted_tenant', owner: 'svc_admin' },
      { name: 'audit_purge_batch', owner: 'svc_admin' },
    ],
  );
  // The other one (sql/0028) reads audit_grants only, and svc_mssp cannot call it.
  const granted = rows.find((r) => r.name === 'audit_granted_tenant');
  assert.doesNotMatch(granted?.source ?? '', /audit_log/);
  assert.match(granted?.source ?? '', /public\.audit_grants/);
  assert.equal(granted?.mssp, false);
  const purge = (
    await db.pools.admin.query<{ policyname: string; roles: string[]; qual: string }>(
      `SELECT policyname, roles::text[] AS roles, qual FROM pg_policies
      WHERE tablename = 'audit_log' AND policyname LIKE 'audit_purge%' ORDER BY 1`,
    )
  ).rows;
  assert.equal(purge.length, 2);
  for (const policy of purge) {
    assert.deepEqual(policy.roles, ['svc_admin'], policy.policyname);
    assert.match(policy.qual, /session_user = 'svc_mssp'::name/i, policy.policyname);
  }
});

test('§2.3 every tenant table has isolation fixtures, so the cross-tenant probes cover it', async () => {
  const tables = (await tenantTables()).map((t) => t.table);
  assert.deepEqual(tables, Object.keys(TENANT_ROW_FIXTURES).sort());
});

test('§2.3 indexes on tenant-scoped tables lead with tenant_id', async () => {
  const { rows } = await db.pools.admin.query<{ index: string; first: string }>(`
    SELECT i.indexrelid::regclass::text AS index, a.attname AS first
      FROM pg_index i
      JOIN pg_class c ON c.oid = i.indrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
      JOIN pg_attribute t ON t.attrelid = c.oid AND t.attname = 'tenant_id' AND t.attnotnull
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]`);
  const offenders = rows.filter((r) => r.first !== 'tenant_id').map((r) => r.index);
  assert.deepEqual(offenders, []);
});

test('§2.3 foreign keys between tenant tables are composite with tenant_id', async () => {
  const { rows } = await db.pools.admin.query<{ name: string; has_tenant: boolean }>(`
    SELECT con.conname AS name,
           EXISTS (SELECT 1 FROM unnest(con.conkey) k
                     JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k
                    WHERE a.attname = 'tenant_id') AS has_tenant
      FROM pg_constraint con
     WHERE con.contype = 'f'
       AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = con.conrelid AND a.attname = 'tenant_id' AND a.attnotnull)
       AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = con.confrelid AND a.attname = 'tenant_id' AND a.attnotnull)`);
  assert.ok(rows.length >= 2, 'expected composite foreign keys between tenant tables');
  assert.deepEqual(
    rows.filter((r) => !r.has_tenant).map((r) => r.name),
    [],
  );
});
