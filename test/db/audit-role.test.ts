import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { bootstrapDatabase } from '../../src/db/bootstrap.ts';
import { loadOrCreateCredentials } from '../../src/db/credentials.ts';
import { migrate } from '../../src/db/migrate.ts';
import { clientConfig } from '../../src/db/target.ts';
import { insertAuditGrant } from '../../src/domains/audit/audit-grant-repository.ts';
import {
  createEmptyDatabase,
  createTestDatabase,
  type TestDatabase,
  testServer,
} from '../support/database.ts';
import { createTenant, TENANT_ROW_FIXTURES } from '../support/fixtures.ts';

// Issue 27 item 1: `svc psql` runs as svc_audit. These probes take the auditor's side: a psql
// session as that role, with a tenant context set the way `svc psql --tenant` sets it.

let db: TestDatabase;
let tenantA: string;
let tenantB: string;
const pools: pg.Pool[] = [];

/** Mints an audit grant for a tenant the way `svc psql --tenant` does; returns its secret. */
async function mintGrant(tenantId: string, ttlSeconds = 600): Promise<string> {
  const secret = randomBytes(32).toString('base64url');
  const secretHash = createHash('sha256').update(secret).digest('hex');
  await db.app.withoutTenant((tx) => insertAuditGrant(tx, { secretHash, tenantId, ttlSeconds }));
  return secret;
}

/**
 * A connection as svc_audit with the tenant context (and, unless told otherwise, a grant for
 * that tenant) in its startup options, like `svc psql --tenant` puts them in PGOPTIONS.
 */
async function auditPool(tenantId?: string, grant?: string | null): Promise<pg.Pool> {
  const secret = grant === undefined && tenantId ? await mintGrant(tenantId) : grant;
  const options = [
    ...(tenantId ? [`-c app.current_tenant_id=${tenantId}`] : []),
    ...(secret ? [`-c app.audit_grant=${secret}`] : []),
  ].join(' ');
  const pool = new pg.Pool({
    ...clientConfig(db.target, 'audit'),
    max: 1,
    ...(options ? { options } : {}),
  });
  pool.on('error', () => undefined);
  pools.push(pool);
  return pool;
}

/** The SQLSTATE a statement fails with, or 'ok'. */
async function outcome(client: pg.Pool | pg.PoolClient, sql: string): Promise<string> {
  try {
    await client.query(sql);
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

const PERMISSION_DENIED = '42501';

before(async () => {
  db = await createTestDatabase();
  tenantA = await createTenant(db.pools.app);
  tenantB = await createTenant(db.pools.app);
  for (const insert of Object.values(TENANT_ROW_FIXTURES)) {
    await db.app.withTenant(tenantA, (tx) => insert(tx, tenantA));
    await db.app.withTenant(tenantB, (tx) => insert(tx, tenantB));
  }
  // Secrets of every kind the audit role must not reach: an MSSP user's and a customer's
  // password hash, their sessions' secret hashes.
  const admin = await db.pools.mssp.query<{ id: string }>(
    `INSERT INTO users (email, role) VALUES ('root@mssp.test', 'platform_admin') RETURNING id`,
  );
  const customer = await db.pools.mssp.query<{ id: string }>(
    `INSERT INTO users (tenant_id, email, role) VALUES ($1, 'viewer@a.test', 'customer_viewer')
     RETURNING id`,
    [tenantA],
  );
  for (const [user, tenant] of [
    [admin.rows[0]?.id, null],
    [customer.rows[0]?.id, tenantA],
  ]) {
    await db.pools.mssp.query(
      `INSERT INTO password_credentials (user_id, password_hash) VALUES ($1, '$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA')`,
      [user],
    );
    await db.pools.mssp.query(
      `INSERT INTO sessions (id, user_id, tenant_context, absolute_expiry, idle_expiry, secret_hash)
       VALUES ($1, $2, $3, now() + interval '1 hour', now() + interval '1 hour', $4)`,
      [randomUUID(), user, tenant, randomUUID().replaceAll('-', '').repeat(2)],
    );
  }
});
after(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await db.drop();
});

interface ReadableColumn {
  relation: string;
  kind: string;
  column: string;
}

/**
 * Every column svc_audit can SELECT in every relation outside PostgreSQL's own catalogs
 * (pg_catalog and information_schema are guarded by PostgreSQL itself: pg_authid, the one
 * holding password hashes, is superuser-only, checked below). has_column_privilege counts
 * table-level and column-level grants, grants to PUBLIC and grants through memberships.
 */
async function readableColumns(
  client: pg.Pool | pg.PoolClient = db.pools.admin,
): Promise<ReadableColumn[]> {
  const { rows } = await client.query<ReadableColumn>(`
    SELECT format('%I.%I', n.nspname, c.relname) AS relation, c.relkind::text AS kind,
           a.attname AS column
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
     WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%'
       AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
       AND has_schema_privilege('svc_audit', n.oid, 'USAGE')
       AND has_column_privilege('svc_audit', c.oid, a.attnum, 'SELECT')
     ORDER BY 1, a.attnum`);
  return rows;
}

/** Readable columns whose names smell of a credential and are not excused. */
function suspicious(columns: readonly ReadableColumn[]): string[] {
  return columns
    .map((c) => `${c.relation}.${c.column}`)
    .filter((name) => SECRET_NAME.test(name.split('.').at(-1) ?? '') && !HARMLESS.has(name));
}

/** Names that smell of a credential. */
const SECRET_NAME = /hash|secret|passw|token|key|salt|jwt|credential|cookie|nonce|private/i;
/** Readable columns whose names match, each with why it is harmless. */
const HARMLESS = new Map([
  ['public.integration_configs.secret_id', 'the id of a tenant_secrets row, a reference'],
  ['public.llm_usage.input_tokens', 'a count of LLM tokens'],
  ['public.llm_usage.output_tokens', 'a count of LLM tokens'],
  ['public.llm_usage.reserved_tokens', 'a count of LLM tokens'],
  ['public.llm_cache.input_tokens', 'a count of LLM tokens'],
  ['public.llm_cache.output_tokens', 'a count of LLM tokens'],
]);

test('issue 27.1 svc_audit: LOGIN, NOBYPASSRLS, no superuser or role-making, read-only by default, member of nothing, owner of nothing', async () => {
  const { rows } = await db.pools.admin.query(
    `SELECT r.rolcanlogin, r.rolsuper, r.rolbypassrls, r.rolcreaterole, r.rolcreatedb,
            r.rolreplication, r.rolconfig,
            (SELECT count(*)::int FROM pg_auth_members m WHERE m.member = r.oid) AS memberships,
            (SELECT count(*)::int FROM pg_class c WHERE c.relowner = r.oid) AS owned
       FROM pg_roles r WHERE r.rolname = 'svc_audit'`,
  );
  assert.deepEqual(rows, [
    {
      rolcanlogin: true,
      rolsuper: false,
      rolbypassrls: false,
      rolcreaterole: false,
      rolcreatedb: false,
      rolreplication: false,
      rolconfig: ['default_transaction_read_only=on'],
      memberships: 0,
      owned: 0,
    },
  ]);
  const session = await auditPool(tenantA);
  const { rows: who } = await session.query(
    `SELECT current_user AS role, current_setting('transaction_read_only') AS read_only`,
  );
  assert.deepEqual(who, [{ role: 'svc_audit', read_only: 'on' }]);
});

test('issue 27.1 every column svc_audit can read is free of secrets (name check plus allow-list)', async () => {
  const columns = await readableColumns();
  assert.ok(
    columns.length > 50,
    `expected the tenant tables to be readable, got ${columns.length}`,
  );
  assert.deepEqual(suspicious(columns), [], 'svc_audit can read columns that look secret');
  // The allow-list must not outlive the columns it excuses.
  const readable = new Set(columns.map((c) => `${c.relation}.${c.column}`));
  assert.deepEqual(
    [...HARMLESS.keys()].filter((name) => !readable.has(name)),
    [],
    'stale allow-list entries',
  );
  // And by table, not only by name: nothing at all of the credential tables.
  const relations = new Set(columns.map((c) => c.relation));
  for (const table of [
    'public.password_credentials',
    'public.sessions',
    'public.tenants',
    'public.organization',
    'public.install_settings',
    'public.schema_migrations',
  ]) {
    assert.ok(!relations.has(table), `svc_audit can read ${table}`);
  }
  assert.ok(![...relations].some((r) => r.startsWith('graphile_worker.')), 'job queue readable');
  const { rows } = await db.pools.admin.query(
    `SELECT has_column_privilege('svc_audit', 'pg_authid', 'rolpassword', 'SELECT') AS authid`,
  );
  assert.deepEqual(rows, [{ authid: false }]);
});

test('issue 27.1 the name check bites: a secret column granted to svc_audit fails it', async () => {
  // What a careless future migration would do; rolled back, so the database is unchanged.
  const client = await db.pools.admin.connect();
  try {
    await client.query('BEGIN');
    await client.query('GRANT SELECT (credential_hash) ON adapter_credentials TO svc_audit');
    await client.query('GRANT SELECT ON sessions TO svc_audit');
    assert.deepEqual(suspicious(await readableColumns(client)), [
      'public.adapter_credentials.credential_hash',
      'public.sessions.secret_hash',
    ]);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
});

test('issue 27.1 svc_audit reading a credential column: permission denied', async () => {
  const session = await auditPool(tenantA);
  for (const sql of [
    'SELECT password_hash FROM password_credentials',
    'SELECT user_id FROM password_credentials',
    'SELECT secret_hash FROM sessions',
    'SELECT id FROM sessions',
    'SELECT credential_hash FROM adapter_credentials',
    'SELECT prompt_hash FROM llm_cache',
    'SELECT license_jwt FROM organization',
    'SELECT * FROM tenants',
    'SELECT * FROM install_settings',
    'SELECT * FROM graphile_worker.jobs',
  ]) {
    assert.equal(await outcome(session, sql), PERMISSION_DENIED, sql);
  }
});

test('issue 27.1 svc_audit cannot call the session functions, the purge or any SECURITY DEFINER function', async () => {
  const { rows } = await db.pools.admin.query<{ fn: string }>(
    `SELECT p.oid::regprocedure::text AS fn FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND p.prosecdef
        AND has_schema_privilege('svc_audit', n.oid, 'USAGE')
        AND has_function_privilege('svc_audit', p.oid, 'EXECUTE')`,
  );
  // The one it may call names the tenant of its own grant (sql/0028) and reads nothing else.
  assert.deepEqual(
    rows.map((r) => r.fn),
    ['audit_granted_tenant()'],
    'SECURITY DEFINER functions svc_audit may call',
  );
  const session = await auditPool(tenantA);
  for (const sql of [
    `SELECT * FROM svc_session_check(repeat('0', 64), now(), 60000, 1000)`,
    `SELECT svc_session_assert(repeat('0', 64), now(), 60000, 1000, gen_random_uuid(), 'analyst', NULL, false)`,
    `SELECT audit_purge_batch(now(), 10)`,
    `SELECT can_upgrade('1.0.0', '1.0.0')`,
  ]) {
    assert.equal(await outcome(session, sql), PERMISSION_DENIED, sql);
  }
});

test('issue 27.1 svc_audit with tenant A set sees A rows only; with B, B only; with no context, none', async () => {
  const relations = [...new Set((await readableColumns()).map((c) => c.relation))];
  const columnsOf = async (relation: string) =>
    (await readableColumns()).filter((c) => c.relation === relation).map((c) => c.column);
  for (const [context, expected] of [
    [tenantA, [tenantA]],
    [tenantB, [tenantB]],
    [undefined, []],
  ] as const) {
    const session = await auditPool(context);
    for (const relation of relations) {
      const columns = await columnsOf(relation);
      // The one relation keyed by the tenant's own id; every other must carry tenant_id, or it
      // is install-wide data a tenant's auditor has no business reading.
      const key = relation === 'public.audit_current_tenant' ? 'id' : 'tenant_id';
      assert.ok(columns.includes(key), `${relation} is readable but has no ${key}`);
      const { rows } = await session.query<{ t: string }>(
        `SELECT DISTINCT ${key}::text AS t FROM ${relation}`,
      );
      assert.deepEqual(
        rows.map((r) => r.t),
        expected,
        `${relation} with context ${context ?? 'none'}`,
      );
    }
  }
  // Every tenant table has a fixture row, so "A only" above was measured on real rows.
  const session = await auditPool(tenantA);
  const { rows } = await session.query<{ n: number }>('SELECT count(*)::int AS n FROM events');
  assert.ok((rows[0]?.n ?? 0) > 0);
});

test('issue 27.1 an auditor of tenant A who switches the tenant context to B reads nothing of B', async () => {
  const relations = [...new Set((await readableColumns()).map((c) => c.relation))];
  const keyOf = (relation: string) =>
    relation === 'public.audit_current_tenant' ? 'id' : 'tenant_id';
  const tenantsSeen = async (session: pg.Pool | pg.PoolClient) => {
    const seen = new Set<string>();
    for (const relation of relations) {
      const { rows } = await session.query<{ t: string }>(
        `SELECT DISTINCT ${keyOf(relation)}::text AS t FROM ${relation}`,
      );
      for (const row of rows) seen.add(row.t);
    }
    return [...seen];
  };
  // Inside `svc psql --tenant A`: the context is a plain setting the session may change.
  const session = await auditPool(tenantA);
  const client = await session.connect();
  try {
    assert.deepEqual(await tenantsSeen(client), [tenantA]);
    await client.query(`SELECT set_config('app.current_tenant_id', $1, false)`, [tenantB]);
    assert.deepEqual(await tenantsSeen(client), [], 'A grant, B context');
    // Guessing at the grant: a made-up secret, or an empty one.
    await client.query(`SET app.audit_grant = 'forged'`);
    assert.deepEqual(await tenantsSeen(client), []);
    await client.query(`SET app.audit_grant = ''`);
    assert.deepEqual(await tenantsSeen(client), []);
  } finally {
    client.release();
  }
  // The context alone, with no grant (e.g. `svc db url --role audit` plus a tenant id).
  assert.deepEqual(await tenantsSeen(await auditPool(tenantA, null)), []);
  // A's grant presented with B's context from the start.
  const secretA = await mintGrant(tenantA);
  assert.deepEqual(await tenantsSeen(await auditPool(tenantB, secretA)), []);
  // An expired grant: created already past its end by moving the clock back, so nothing waits.
  const expired = await mintGrant(tenantA);
  await db.pools.admin.query(
    `UPDATE audit_grants SET created_at = now() - interval '2 days', expires_at = now() - interval '1 day'
      WHERE secret_hash = $1`,
    [createHash('sha256').update(expired).digest('hex')],
  );
  assert.deepEqual(await tenantsSeen(await auditPool(tenantA, expired)), []);
  // And the grant table itself is out of reach.
  assert.equal(
    await outcome(await auditPool(tenantA), 'SELECT secret_hash FROM audit_grants'),
    PERMISSION_DENIED,
  );
});

test('issue 27.1 svc_audit sees no MSSP staff, not even through the login lookup', async () => {
  const session = await auditPool(tenantA);
  const client = await session.connect();
  try {
    await client.query(`SET app.login_email = 'root@mssp.test'`);
    const { rows } = await client.query<{ email: string }>('SELECT email FROM users ORDER BY 1');
    assert.ok(rows.length >= 2, 'the tenant has its fixture user and viewer@a.test');
    assert.ok(!rows.some((r) => r.email === 'root@mssp.test'), 'an MSSP user is visible');
  } finally {
    client.release();
  }
  // svc_app, for contrast, does see MSSP staff (that is the policy working for the app).
  const app = await db.app.withTenant(tenantA, (tx) =>
    tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM users WHERE tenant_id IS NULL`),
  );
  assert.ok((app.rows[0]?.n ?? 0) > 0);
});

test('issue 27.1 svc_audit writes nothing anywhere, by grant: even after switching read-only off', async () => {
  const { rows: tables } = await db.pools.admin.query<{
    relation: string;
    kind: string;
    col: string;
  }>(
    `SELECT format('%I.%I', n.nspname, c.relname) AS relation, c.relkind::text AS kind,
            (SELECT quote_ident(attname) FROM pg_attribute
              WHERE attrelid = c.oid AND attnum > 0 AND NOT attisdropped ORDER BY attnum LIMIT 1) AS col
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname IN ('public', 'graphile_worker') AND c.relkind IN ('r', 'p', 'v')
      ORDER BY 1`,
  );
  assert.ok(tables.length > 30);
  const { rows: granted } = await db.pools.admin.query<{ relation: string }>(
    `SELECT format('%I.%I', n.nspname, c.relname) AS relation FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
        AND (has_table_privilege('svc_audit', c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
          OR has_any_column_privilege('svc_audit', c.oid, 'INSERT, UPDATE, REFERENCES')
          OR (c.relkind = 'S' AND has_sequence_privilege('svc_audit', c.oid, 'USAGE, UPDATE')))`,
  );
  assert.deepEqual(granted, [], 'write privileges held by svc_audit');

  const session = await auditPool(tenantA);
  const client = await session.connect();
  try {
    await client.query('SET default_transaction_read_only = off');
    for (const { relation, kind, col } of tables) {
      for (const sql of [
        `INSERT INTO ${relation} DEFAULT VALUES`,
        `UPDATE ${relation} SET ${col} = ${col}`,
        `DELETE FROM ${relation}`,
        // A view cannot be truncated by anyone; the grants check above covers it.
        ...(kind === 'v' ? [] : [`TRUNCATE ${relation}`]),
      ]) {
        await client.query('BEGIN TRANSACTION READ WRITE');
        // 42501 from the grants, not 25006 (read-only transaction) from the setting.
        assert.equal(await outcome(client, sql), PERMISSION_DENIED, sql);
        await client.query('ROLLBACK');
      }
    }
    for (const sql of [
      `SELECT nextval('events_id_seq')`,
      'CREATE TABLE public.planted (x int)',
      'CREATE TEMP TABLE planted (x int)',
      'CREATE FUNCTION pg_temp.planted() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$',
      'SET ROLE svc_app',
      'SET ROLE svc_mssp',
      // Large objects are a write no table grant covers; advisory locks are svc's own
      // (migration, job liveness, per-tenant work), which an audit session must not hold.
      'SELECT lo_create(0)',
      `SELECT lo_from_bytea(0, '\\x00')`,
      'SELECT pg_advisory_lock(1)',
      'SELECT pg_try_advisory_xact_lock(727021, 1)',
      'SET row_security = off',
    ]) {
      await client.query('BEGIN TRANSACTION READ WRITE');
      const code = await outcome(client, sql);
      await client.query('ROLLBACK');
      if (sql === 'SET row_security = off') {
        // Allowed to say, but then any query RLS would filter errors instead (42501).
        await client.query('SET row_security = off');
        assert.equal(await outcome(client, 'SELECT count(*) FROM events'), PERMISSION_DENIED);
        await client.query('RESET row_security');
      } else {
        assert.equal(code, PERMISSION_DENIED, sql);
      }
    }
  } finally {
    client.release();
  }
  // The service roles keep the locks they work with.
  const locked = await db.pools.app.query<{ ok: boolean }>(
    'SELECT pg_try_advisory_xact_lock(727021, 1) AS ok',
  );
  assert.deepEqual(locked.rows, [{ ok: true }]);
  // Nothing changed: svc_app still sees both tenants' fixture rows.
  const counts = await db.app.withTenant(tenantA, (tx) =>
    tx.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log'),
  );
  assert.ok((counts.rows[0]?.n ?? 0) > 0);
});

test('issue 27.1 the bootstrap step strips a membership someone gave svc_audit and keeps it read-only by default', async () => {
  const server = testServer();
  const superuser = { ...server.superuser, database: 'postgres' };
  const su = new pg.Client(superuser);
  await su.connect();
  try {
    await su.query('GRANT svc_app TO svc_audit');
    await su.query('ALTER ROLE svc_audit RESET default_transaction_read_only');
    await bootstrapDatabase(superuser, db.name, server.target.credentials);
    const { rows } = await su.query(
      `SELECT (SELECT count(*)::int FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member
                WHERE r.rolname = 'svc_audit') AS memberships,
              (SELECT rolconfig FROM pg_roles WHERE rolname = 'svc_audit') AS config`,
    );
    assert.deepEqual(rows, [{ memberships: 0, config: ['default_transaction_read_only=on'] }]);
  } finally {
    await su.query('REVOKE svc_app FROM svc_audit').catch(() => undefined);
    await su.end();
  }
});

test('issue 27.1 a credentials file from before svc_audit gains its credential and keeps the others', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-credentials-'));
  try {
    const old = {
      admin: { user: 'svc_admin', password: 'a' },
      app: { user: 'svc_app', password: 'b' },
      mssp: { user: 'svc_mssp', password: 'c' },
    };
    await writeFile(path.join(dir, 'credentials.json'), JSON.stringify(old));
    const loaded = await loadOrCreateCredentials(dir);
    assert.deepEqual({ ...loaded, audit: undefined }, { ...old, audit: undefined });
    assert.equal(loaded.audit.user, 'svc_audit');
    assert.match(loaded.audit.password, /^[\w-]{32}$/);
    assert.deepEqual(
      JSON.parse(await readFile(path.join(dir, 'credentials.json'), 'utf8')),
      loaded,
    );
    assert.deepEqual(await loadOrCreateCredentials(dir), loaded, 'stable on the next start');
  } finally {
    await rm(dir, { recursive: true });
  }
});

test('issue 27.1 migration 0026 refuses an svc_audit that holds another role', async () => {
  const server = testServer();
  const su = new pg.Client({ ...server.superuser, database: 'postgres' });
  await su.connect();
  const empty = await createEmptyDatabase();
  try {
    await su.query('GRANT svc_app TO svc_audit');
    await assert.rejects(
      migrate(clientConfig(empty.target, 'admin')),
      /0026_audit_role\.sql[\s\S]*svc_audit must not be a member of any role/,
    );
  } finally {
    await su.query('REVOKE svc_app FROM svc_audit');
    await su.end();
    await empty.drop();
  }
});

test('issue 27.1 without an audit credential (external database) svc psql stops and names the settings', () => {
  const { audit: _none, ...three } = db.target.credentials;
  assert.throws(
    () => clientConfig({ ...db.target, credentials: three }, 'audit'),
    /no credentials for svc_audit: set SVC_DATABASE_AUDIT_USER and SVC_DATABASE_AUDIT_PASSWORD/,
  );
});
