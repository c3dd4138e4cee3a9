import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { ConfigError } from '../../src/config/index.ts';
import { freePort } from '../../src/db/embedded.ts';
import { clientConfig, type DatabaseTarget } from '../../src/db/target.ts';
import { ensureInstall } from '../../src/orchestrator/install.ts';
import { client, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import {
  createTestDatabase,
  externalDatabaseEnv,
  type TestDatabase,
  testServer,
} from '../support/database.ts';
import { createTenant, TENANT_ROW_FIXTURES } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS, TEST_PASSWORD } from '../support/sign-in.ts';

/**
 * `svc db backup` / `svc db restore` as real processes (docs/operations.md "Backup and restore"):
 * a populated install is backed up, restored into a fresh database on the same server, and
 * compared table by table, policy by policy and grant by grant; then svc serves from the copy.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
const INSTALL_ID = randomUUID();
const OTHER_INSTALL_ID = randomUUID();
const MSSP_ID = randomUUID();

let db: TestDatabase;
let api: TestApi;
let work: string;
let pgClientBin: string;
let tenantA: string;
let tenantB: string;
/** Cookies of sessions opened before the backup. */
const cookies: Record<string, string> = {};
let archive: string;
let restoredName: string;
let restored: DatabaseTarget;

/** The superuser URL of the test server, for one database (the bootstrap step's login). */
function bootstrapUrl(database: string): string {
  const { superuser } = testServer();
  const url = new URL('postgresql://placeholder');
  url.hostname = superuser.host;
  url.port = String(superuser.port);
  url.username = encodeURIComponent(superuser.user);
  url.password = encodeURIComponent(superuser.password);
  url.pathname = `/${database}`;
  return url.toString();
}

/** svc's environment for one database of the test server, with PostgreSQL 18's client first. */
function svcEnv(database: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...externalDatabaseEnv({ ...db.target, database }),
    SVC_DATABASE_BOOTSTRAP_URL: bootstrapUrl('postgres'),
    SVC_DATA_DIR: path.join(work, 'data'),
    SVC_LOG_LEVEL: 'warn',
    PATH: `${pgClientBin}:${process.env.PATH ?? ''}`,
    ...extra,
  };
  delete env.KUBECONFIG;
  delete env.SVC_INSTALL_ID;
  return { ...env, ...extra };
}

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

async function svc(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', ...args],
      { cwd: ROOT, env, timeout: 120_000 },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof e.code === 'number' ? e.code : 1,
      stdout: e.stdout ?? '',
      stderr: e.stderr ?? '',
    };
  }
}

async function superuserQuery<R extends object>(
  database: string,
  sql: string,
  values: unknown[] = [],
): Promise<R[]> {
  const c = new pg.Client({ ...testServer().superuser, database });
  await c.connect();
  try {
    return (await c.query<R>(sql, values)).rows;
  } finally {
    await c.end();
  }
}

async function dropDatabase(name: string): Promise<void> {
  await superuserQuery('postgres', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

async function relationCount(database: string): Promise<number> {
  const rows = await superuserQuery<{ n: number }>(
    database,
    `SELECT count(*)::int AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname IN ('public', 'graphile_worker')`,
  );
  return rows[0]?.n ?? -1;
}

/** Rows per table, every svc table in both schemas, read as superuser (RLS does not apply). */
async function rowCounts(database: string): Promise<Record<string, number>> {
  const tables = await superuserQuery<{ name: string }>(
    database,
    `SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables
      WHERE schemaname IN ('public', 'graphile_worker') ORDER BY 1`,
  );
  const out: Record<string, number> = {};
  for (const { name } of tables) {
    const rows = await superuserQuery<{ n: number }>(
      database,
      `SELECT count(*)::int AS n FROM ${name}`,
    );
    out[name] = rows[0]?.n ?? -1;
  }
  return out;
}

/** Everything the isolation model rests on, in a form two databases can be compared by. */
async function securityShape(database: string): Promise<Record<string, unknown>> {
  const q = (sql: string) => superuserQuery(database, sql);
  return {
    auditChecksum: await q(
      `SELECT count(*)::int AS n, md5(coalesce(string_agg(a::text, '|' ORDER BY a.id), '')) AS sum FROM audit_log a`,
    ),
    sessionsChecksum: await q(
      `SELECT md5(coalesce(string_agg(s::text, '|' ORDER BY s::text), '')) AS sum FROM sessions s`,
    ),
    policies: await q(
      `SELECT schemaname, tablename, policyname, permissive, roles::text, cmd, qual, with_check
         FROM pg_policies ORDER BY 1, 2, 3`,
    ),
    rowSecurity: await q(
      `SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, pg_get_userbyid(c.relowner) AS owner
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname IN ('public', 'graphile_worker') AND c.relkind IN ('r', 'p', 'v', 'S')
        ORDER BY n.nspname, c.relname`,
    ),
    tableGrants: await q(
      `SELECT grantee, table_schema, table_name, privilege_type FROM information_schema.role_table_grants
        WHERE grantee LIKE 'svc\\_%' ORDER BY 1, 2, 3, 4`,
    ),
    columnGrants: await q(
      `SELECT grantee, table_name, column_name, privilege_type FROM information_schema.column_privileges
        WHERE grantee LIKE 'svc\\_%' ORDER BY 1, 2, 3, 4`,
    ),
    routineGrants: await q(
      `SELECT grantee, routine_schema, routine_name, privilege_type FROM information_schema.role_routine_grants
        WHERE grantee LIKE 'svc\\_%' ORDER BY 1, 2, 3, 4`,
    ),
    schemaAcls: await q(
      `SELECT nspname, pg_get_userbyid(nspowner) AS owner, nspacl::text FROM pg_namespace
        WHERE nspname IN ('public', 'graphile_worker') ORDER BY 1`,
    ),
    functions: await q(
      `SELECT p.oid::regprocedure::text AS f, p.prosecdef, pg_get_userbyid(p.proowner) AS owner, p.proacl::text
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname IN ('public', 'graphile_worker') ORDER BY 1`,
    ),
    triggers: await q(
      `SELECT tgrelid::regclass::text AS t, tgname, tgenabled FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2`,
    ),
  };
}

let before_: { counts: Record<string, number>; shape: Record<string, unknown> };

before(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'svc-backup-'));
  // PostgreSQL 18's pg_dump/pg_restore, built into a cache once per machine (.ci/install-pg-client).
  const installed = await run('bash', [path.join(ROOT, '.ci/install-pg-client')], { cwd: ROOT });
  pgClientBin = /PG_CLIENT_BIN=(.*)/.exec(installed.stdout)?.[1] ?? '';
  assert.ok(pgClientBin, `install-pg-client printed no PG_CLIENT_BIN: ${installed.stdout}`);

  db = await createTestDatabase();
  await ensureInstall(db.target, {
    msspId: MSSP_ID,
    msspName: 'Backup MSSP',
    installId: INSTALL_ID,
    installLabel: 'backup-test',
  });
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  tenantA = await createTenant(db.pools.app, `alpha-${randomBytes(3).toString('hex')}`);
  tenantB = await createTenant(db.pools.app, `bravo-${randomBytes(3).toString('hex')}`);
  for (const insert of Object.values(TENANT_ROW_FIXTURES)) {
    await db.app.withTenant(tenantA, (tx) => insert(tx, tenantA));
    await db.app.withTenant(tenantB, (tx) => insert(tx, tenantB));
  }
  // Users and sessions through the real sign-in (which also writes the audit trail).
  const users = [
    { key: 'admin', role: 'platform_admin' as const, tenantId: null },
    { key: 'viewerA', role: 'customer_viewer' as const, tenantId: tenantA },
    { key: 'viewerB', role: 'customer_viewer' as const, tenantId: tenantB },
  ];
  for (const u of users) {
    const email = `${u.key.toLowerCase()}-${randomBytes(3).toString('hex')}@example.test`;
    await seedUser(db, api.hasher, {
      email,
      role: u.role,
      tenantId: u.tenantId,
      password: TEST_PASSWORD,
    });
    const browser = client(api);
    const res = await browser.login(email, TEST_PASSWORD);
    assert.equal(res.status, 200, `sign-in as ${email}`);
    cookies[u.key] = browser.cookie() ?? '';
    assert.match(cookies[u.key] ?? '', /^svc_session=/);
  }
  await api.close();
  before_ = { counts: await rowCounts(db.name), shape: await securityShape(db.name) };
  assert.ok((before_.counts['public.audit_log'] ?? 0) > 2, 'the audit trail has entries');
  assert.ok((before_.counts['public.sessions'] ?? 0) >= 3, 'three sessions');

  archive = path.join(work, 'svc.dump');
  const backup = await svc(['db', 'backup', '--out', archive], svcEnv(db.name));
  assert.equal(backup.code, 0, backup.stderr);
  assert.match(backup.stdout, /backup written: /);

  restoredName = `r_${randomBytes(6).toString('hex')}`;
  restored = { ...db.target, database: restoredName };
});

after(async () => {
  await db?.drop();
  if (restoredName) await dropDatabase(restoredName);
  if (work) await rm(work, { recursive: true, force: true });
});

describe('svc db backup', () => {
  test('writes the archive owner-only and a manifest naming the install, the schema and the checksum', async () => {
    const manifest = JSON.parse(await readFile(`${archive}.manifest.json`, 'utf8'));
    const migrations = (await readdir(path.join(ROOT, 'sql'))).filter((f) =>
      /^\d{4}_.*\.sql$/.test(f),
    );
    assert.equal(manifest.format, 'svc-backup/1');
    assert.equal(manifest.installId, INSTALL_ID);
    assert.equal(manifest.schemaVersion, migrations.length);
    const bytes = await readFile(archive);
    const { createHash } = await import('node:crypto');
    assert.equal(manifest.archive.sha256, createHash('sha256').update(bytes).digest('hex'));
    assert.equal(manifest.archive.bytes, bytes.length);
    assert.equal(bytes.subarray(0, 5).toString(), 'PGDMP', 'a pg_dump custom-format archive');
    assert.equal((await stat(archive)).mode & 0o777, 0o600);
    assert.equal((await stat(`${archive}.manifest.json`)).mode & 0o777, 0o600);
  });

  test('refuses an existing file and an unwritable place, and leaves nothing behind', async () => {
    const existing = await svc(['db', 'backup', '--out', archive], svcEnv(db.name));
    assert.notEqual(existing.code, 0);
    assert.match(existing.stderr, /already exists; backups never overwrite a file/);
    const nowhere = path.join(work, 'no-such-dir', 'x.dump');
    const missing = await svc(['db', 'backup', '--out', nowhere], svcEnv(db.name));
    assert.notEqual(missing.code, 0);
    assert.match(
      missing.stderr,
      /cannot write into .*no-such-dir: it must be an existing, writable directory/,
    );
    const underFile = path.join(archive, 'x.dump');
    const notDir = await svc(['db', 'backup', '--out', underFile], svcEnv(db.name));
    assert.notEqual(notDir.code, 0);
    assert.match(notDir.stderr, /cannot write into/);
    const files = (await readdir(work, { withFileTypes: true })).filter((e) => e.isFile());
    assert.deepEqual(files.map((e) => e.name).sort(), ['svc.dump', 'svc.dump.manifest.json']);
  });
});

describe('svc db backup --dir --keep (the CronJob of the system chart)', () => {
  test('names the archive by time, keeps the n newest complete backups and touches nothing else', async () => {
    const dir = path.join(work, 'rotation');
    await mkdir(dir);
    const old = ['svc-20200101T000000Z.dump', 'svc-20200102T000000Z.dump'];
    for (const name of old) {
      await writeFile(path.join(dir, name), 'old');
      await writeFile(path.join(dir, `${name}.manifest.json`), '{}');
    }
    // No manifest: an unfinished archive is not a backup, and not svc's to count or delete.
    await writeFile(path.join(dir, 'svc-20190101T000000Z.dump'), 'partial');
    await writeFile(path.join(dir, 'notes.txt'), 'mine');
    const stale = path.join(dir, '.svc-20200103T000000Z.dump.tmp-0123456789ab');
    await writeFile(stale, 'crashed run');
    const longAgo = new Date(Date.now() - 3 * 24 * 3600 * 1000);
    await utimes(stale, longAgo, longAgo);

    const res = await svc(['db', 'backup', '--dir', dir, '--keep', '2'], svcEnv(db.name));
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /pruned .*svc-20200101T000000Z\.dump \(keeping the 2 newest\)/);
    const names = (await readdir(dir)).sort();
    const fresh = names.find(
      (n) => /^svc-\d{8}T\d{6}Z\.dump$/.test(n) && !old.includes(n) && !n.startsWith('svc-2019'),
    );
    assert.ok(fresh, `a new archive in ${names.join(', ')}`);
    assert.deepEqual(
      names,
      [
        'notes.txt',
        'svc-20190101T000000Z.dump',
        'svc-20200102T000000Z.dump',
        'svc-20200102T000000Z.dump.manifest.json',
        fresh,
        `${fresh}.manifest.json`,
      ].sort(),
    );
  });

  test('usage errors: --keep below 1, --keep without --dir, both or neither of --out and --dir', async () => {
    const dir = path.join(work, 'rotation');
    const before = (await readdir(dir)).sort();
    const zero = await svc(['db', 'backup', '--dir', dir, '--keep', '0'], svcEnv(db.name));
    assert.equal(zero.code, 2);
    assert.match(zero.stderr, /--keep <n>.*expected a whole number of at least 1/);
    const outKeep = await svc(
      ['db', 'backup', '--out', path.join(dir, 'x.dump'), '--keep', '2'],
      svcEnv(db.name),
    );
    assert.notEqual(outKeep.code, 0);
    assert.match(outKeep.stderr, /--keep prunes a directory of backups: use it with --dir/);
    const both = await svc(
      ['db', 'backup', '--out', path.join(dir, 'x.dump'), '--dir', dir],
      svcEnv(db.name),
    );
    assert.notEqual(both.code, 0);
    assert.match(both.stderr, /exactly one of --out <file> and --dir <directory>/);
    const neither = await svc(['db', 'backup'], svcEnv(db.name));
    assert.notEqual(neither.code, 0);
    assert.match(neither.stderr, /exactly one of --out <file> and --dir <directory>/);
    assert.deepEqual((await readdir(dir)).sort(), before);
  });
});

describe('svc db restore', () => {
  test('refuses an archive of another install, before touching any database', async () => {
    const res = await svc(
      ['db', 'restore', '--from', archive, '--install-id', OTHER_INSTALL_ID],
      svcEnv(restoredName),
    );
    assert.notEqual(res.code, 0);
    assert.match(
      res.stderr,
      new RegExp(`belongs to install ${INSTALL_ID}, not ${OTHER_INSTALL_ID}`),
    );
    const noId = await svc(['db', 'restore', '--from', archive], svcEnv(restoredName));
    assert.notEqual(noId.code, 0);
    assert.match(noId.stderr, /confirm it with --install-id or SVC_INSTALL_ID/);
    const badId = await svc(
      ['db', 'restore', '--from', archive, '--install-id', 'nope'],
      svcEnv(restoredName),
    );
    assert.notEqual(badId.code, 0);
    assert.match(badId.stderr, /--install-id: expected a uuid/);
    const exists = await superuserQuery(
      'postgres',
      'SELECT 1 FROM pg_database WHERE datname = $1',
      [restoredName],
    );
    assert.equal(exists.length, 0, 'no database was created');
  });

  test('refuses a damaged archive (checksum), a missing manifest and a newer schema', async () => {
    const damaged = path.join(work, 'damaged.dump');
    const bytes = await readFile(archive);
    const middle = Math.floor(bytes.length / 2);
    bytes[middle] = (bytes[middle] ?? 0) ^ 0xff;
    await writeFile(damaged, bytes);
    await copyFile(`${archive}.manifest.json`, `${damaged}.manifest.json`);
    const res = await svc(
      ['db', 'restore', '--from', damaged, '--install-id', INSTALL_ID],
      svcEnv(restoredName),
    );
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /checksum mismatch/);

    const bare = path.join(work, 'bare.dump');
    await copyFile(archive, bare);
    const noManifest = await svc(
      ['db', 'restore', '--from', bare, '--install-id', INSTALL_ID],
      svcEnv(restoredName),
    );
    assert.notEqual(noManifest.code, 0);
    assert.match(noManifest.stderr, /no manifest .*bare\.dump\.manifest\.json/);

    const newer = path.join(work, 'newer.dump');
    await copyFile(archive, newer);
    const manifest = JSON.parse(await readFile(`${archive}.manifest.json`, 'utf8'));
    await writeFile(
      `${newer}.manifest.json`,
      JSON.stringify({
        ...manifest,
        schemaVersion: manifest.schemaVersion + 1,
        svcVersion: '99.0.0',
      }),
    );
    const downgrade = await svc(
      ['db', 'restore', '--from', newer, '--install-id', INSTALL_ID],
      svcEnv(restoredName),
    );
    assert.notEqual(downgrade.code, 0);
    assert.match(
      downgrade.stderr,
      /schema version \d+ \(svc 99\.0\.0\); this svc knows versions up to \d+/,
    );
    for (const f of [damaged, bare, newer]) {
      await rm(f, { force: true });
      await rm(`${f}.manifest.json`, { force: true });
    }
    const exists = await superuserQuery(
      'postgres',
      'SELECT 1 FROM pg_database WHERE datname = $1',
      [restoredName],
    );
    assert.equal(exists.length, 0, 'no database was created');
  });

  test('restores into a fresh database: rows, audit trail, sessions, policies, FORCE flags and grants equal', async () => {
    const res = await svc(
      ['db', 'restore', '--from', archive, '--install-id', INSTALL_ID],
      svcEnv(restoredName),
    );
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, new RegExp(`restored .* into database ${restoredName}`));
    assert.deepEqual(await rowCounts(restoredName), before_.counts);
    assert.deepEqual(await securityShape(restoredName), before_.shape);
    // The backup role is NOLOGIN and may read but not write.
    const role = await superuserQuery<{ rolcanlogin: boolean; rolbypassrls: boolean }>(
      'postgres',
      `SELECT rolcanlogin, rolbypassrls FROM pg_roles WHERE rolname = 'svc_backup'`,
    );
    assert.deepEqual(role, [{ rolcanlogin: false, rolbypassrls: true }]);
  });

  test('refuses a database that is not empty, and changes nothing in it', async () => {
    const counts = await rowCounts(restoredName);
    const res = await svc(
      ['db', 'restore', '--from', archive, '--install-id', INSTALL_ID],
      svcEnv(restoredName),
    );
    assert.notEqual(res.code, 0);
    assert.match(
      res.stderr,
      new RegExp(`database ${restoredName} is not empty .*restore only into an empty database`),
    );
    assert.deepEqual(await rowCounts(restoredName), counts);
    const relations = await relationCount(restoredName);
    assert.ok(relations > 40);
  });

  test('§5.7 tenant A still cannot read tenant B rows as svc_app in the restored database', async () => {
    const pool = new pg.Pool({ ...clientConfig(restored, 'app'), max: 1 });
    try {
      const c = await pool.connect();
      try {
        await c.query('BEGIN');
        await c.query(`SELECT set_config('app.current_tenant_id', $1, true)`, [tenantA]);
        for (const table of Object.keys(TENANT_ROW_FIXTURES)) {
          const { rows } = await c.query<{ tenant_id: string | null }>(
            `SELECT tenant_id FROM ${table}`,
          );
          assert.ok(
            rows.some((r) => r.tenant_id === tenantA),
            `${table}: A sees its own rows`,
          );
          assert.ok(!rows.some((r) => r.tenant_id === tenantB), `${table}: A sees none of B's`);
        }
        await c.query('ROLLBACK');
        const { rows } = await c.query<{ n: number }>('SELECT count(*)::int AS n FROM events');
        assert.equal(rows[0]?.n, 0, 'no tenant context: no tenant rows');
      } finally {
        c.release();
      }
    } finally {
      await pool.end();
    }
  });

  test('the restored database keeps its install id: another SVC_INSTALL_ID is refused', async () => {
    await assert.rejects(
      ensureInstall(restored, {
        msspId: undefined,
        msspName: 'Backup MSSP',
        installId: OTHER_INSTALL_ID,
        installLabel: 'backup-test',
      }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message.includes(`this database belongs to ${INSTALL_ID}`),
    );
  });

  test('svc serve starts on the restored database and a session from before the backup still authenticates', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    let stderr = '';
    const child: ChildProcess = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'serve'],
      {
        cwd: ROOT,
        env: svcEnv(restoredName, {
          SVC_PORT: String(port),
          SVC_INSTALL_ID: INSTALL_ID,
          SVC_DATA_DIR: path.join(work, 'serve'),
        }),
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    child.stderr?.on('data', (d) => {
      stderr += d;
    });
    try {
      const deadline = Date.now() + 90_000;
      let healthy = false;
      while (!healthy && Date.now() < deadline) {
        assert.equal(child.exitCode, null, `svc serve exited: ${stderr}`);
        healthy = await fetch(`${url}/healthz`).then(
          (r) => r.status === 200,
          () => false,
        );
        if (!healthy) await sleep(250);
      }
      assert.ok(healthy, `svc serve did not become healthy: ${stderr}`);
      for (const [key, cookie] of Object.entries(cookies)) {
        const me = await fetch(`${url}/api/auth/me`, { headers: { cookie } });
        assert.equal(me.status, 200, `${key}'s session`);
        const { identity } = (await me.json()) as {
          identity: { role: string; tenant_id: string | null };
        };
        if (key === 'admin') assert.equal(identity.role, 'platform_admin');
        if (key === 'viewerA') assert.equal(identity.tenant_id, tenantA);
        if (key === 'viewerB') assert.equal(identity.tenant_id, tenantB);
      }
      const stranger = await fetch(`${url}/api/auth/me`, {
        headers: { cookie: `svc_session=${randomBytes(32).toString('base64url')}` },
      });
      assert.equal(stranger.status, 401);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    }
  });
});
