import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { type AppDatabase, createAppDatabase } from '../../src/db/pools.ts';
import { createSystemGate } from '../../src/db/system-gate.ts';
import { clientConfig, pooledConfig } from '../../src/db/target.ts';
import { readEventsAfter } from '../../src/domains/events/event-repository.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { type Pgbouncer, startPgbouncer } from '../support/pgbouncer.ts';
import { hammer, type Seeded, seedEvents } from '../support/tenant-hammer.ts';

/**
 * svc's transactional pools behind a real PgBouncer 1.18 in transaction-pooling mode
 * (docs/operations.md "Connection pooling"). The attacker is every other unit sharing the
 * pooler's few server connections: a tenant context, a row or a named statement left on a
 * server by one unit must never reach the next, whatever that unit did (committed, rolled
 * back, failed mid-transaction, vanished with its transaction open).
 */
const SERVERS = 2;
let db: TestDatabase;
let bouncer: Pgbouncer;
let pooled: AppDatabase;
let tenants: string[];
let seeded: Seeded;

before(async () => {
  db = await createTestDatabase();
  bouncer = await startPgbouncer(db.target, { poolSize: SERVERS });
  pooled = createAppDatabase(bouncer.target, 16);
  tenants = [];
  for (let i = 0; i < 3; i++) tenants.push(await createTenant(db.pools.app));
  seeded = await seedEvents(db.app, tenants, 4);
});
after(async () => {
  await pooled?.close();
  await bouncer?.stop();
  await db?.drop();
});

/** svc_app backends on the test database, by where they come from (pgbouncer or svc itself). */
async function appBackends(): Promise<number> {
  const { rows } = await db.pools.admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND usename = $2`,
    [db.name, db.target.credentials.app.user],
  );
  return rows[0]?.n ?? 0;
}

test('§5.7 through PgBouncer no unit of work sees another tenant’s context or rows (hammer, rollbacks, errors mid-unit)', async () => {
  const direct = await appBackends();
  const result = await hammer(pooled, seeded, { units: 1500, concurrency: 16, seed: 33 });
  assert.deepEqual(result.violations, []);
  assert.deepEqual(result.unexpected, []);
  assert.equal(result.units, 1500);
  assert.ok(result.statements > 4000, `only ${result.statements} statements`);
  // Shared for real: 16 client connections took turns on the pooler's two server connections.
  assert.equal(pooled.pool.totalCount, 16);
  assert.ok(result.backends.size <= SERVERS, `backends ${[...result.backends].join(',')}`);
  assert.ok((await appBackends()) - direct <= SERVERS);
  // What the rolled-back and failed units wrote is gone: each tenant still has its seeded rows.
  for (const tenant of tenants) {
    const rows = await db.app.withTenant(tenant, (tx) => readEventsAfter(tx, 0n, 1000));
    assert.equal(rows.length, seeded.get(tenant));
  }
});

test('pooled pools send no named statement and no pipeline; the direct pool keeps both', async () => {
  assert.equal(pooled.pool.options.pipeline, false);
  assert.equal(db.app.pool.options.pipeline, true);
  const [a, b] = tenants as [string, string];
  for (const tenant of [a, b, a, b, a, b]) {
    const { events, prepared } = await pooled.withTenant(tenant, async (tx) => ({
      events: await readEventsAfter(tx, 0n, 1000),
      prepared: (
        await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements')
      ).rows[0]?.n,
    }));
    assert.deepEqual(new Set(events.map((e) => e.tenantId)), new Set([tenant]));
    assert.equal(events.length, seeded.get(tenant));
    assert.equal(prepared, 0, 'a named statement reached a server behind the pooler');
  }
  const direct = await db.app.withTenant(a, async (tx) => {
    await readEventsAfter(tx, 0n, 1000);
    return (await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements'))
      .rows[0]?.n;
  });
  assert.ok((direct ?? 0) > 0, 'the direct pool prepares its named statements');
});

test('§5.7 a client that vanishes mid-transaction with tenant A set leaves nothing for the next client on its server', async () => {
  const single = await startPgbouncer(db.target, { poolSize: 1 });
  const config = pooledConfig(single.target, 'app');
  const [a] = tenants as [string];
  try {
    const attacker = new pg.Client(config);
    attacker.on('error', () => undefined);
    await attacker.connect();
    await attacker.query(`BEGIN; SELECT set_config('app.current_tenant_id', '${a}', true)`);
    // Fails mid-transaction: the server sits in an aborted transaction holding A's context.
    await assert.rejects(attacker.query('SELECT 1/0'), { code: '22012' });
    const next = new pg.Client(config);
    await next.connect();
    try {
      // Queued behind the attacker for the pooler's one server.
      const waiting = next.query<{ ctx: string | null; rows: number }>(
        `SELECT current_setting('app.current_tenant_id', true) AS ctx,
                (SELECT count(*)::int FROM events) AS rows`,
      );
      // Gone without ROLLBACK: its socket closes under it.
      (
        attacker as unknown as { connection: { stream: { destroy(): void } } }
      ).connection.stream.destroy();
      const { rows } = await waiting;
      assert.equal(rows[0]?.ctx || null, null);
      assert.equal(rows[0]?.rows, 0);
    } finally {
      await next.end();
    }
  } finally {
    await single.stop();
  }
});

test('§5.7 the system gate works through the pooler and writes its audit row', async () => {
  const gate = createSystemGate(bouncer.target);
  try {
    const seen = await gate.withSystem('pooled-test', async (tx) => {
      const events = await tx.query<{ tenant_id: string }>(
        'SELECT DISTINCT tenant_id FROM events ORDER BY 1',
      );
      return events.rows.map((r) => r.tenant_id);
    });
    assert.deepEqual(seen, [...tenants].sort());
    const superuser = new pg.Client(db.superuser);
    await superuser.connect();
    try {
      const { rows } = await superuser.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM audit_log WHERE actor_id = 'system:pooled-test'`,
      );
      assert.equal(rows[0]?.n, 1);
    } finally {
      await superuser.end();
    }
  } finally {
    await gate.close();
  }
});

test('without a pooler, pooledConfig is clientConfig', () => {
  assert.deepEqual(pooledConfig(db.target, 'app'), clientConfig(db.target, 'app'));
  assert.deepEqual(
    { ...pooledConfig(bouncer.target, 'mssp'), host: '', port: 0 },
    { ...clientConfig(bouncer.target, 'mssp'), host: '', port: 0 },
  );
  assert.equal(pooledConfig(bouncer.target, 'app').port, bouncer.port);
  assert.equal(clientConfig(bouncer.target, 'app').port, db.target.port);
});

/**
 * What breaks on a transaction-pooled connection (LISTEN, session advisory locks, session
 * settings, temp tables, held cursors, SQL-level PREPARE, SET ROLE) stays in the files that
 * hold direct connections; only the transactional pools take pooledConfig.
 */
const SESSION_LEVEL =
  /[`'";]\s*SET\s+(SESSION\s+)?(ROLE|[a-z_]+\.[a-z_]+|search_path|[a-z_]+\s*(=|TO))|set_config\([^)]*,\s*false\s*\)|CREATE\s+TEMP(ORARY)?\s+TABLE|pg_(try_)?advisory_lock(_shared)?\(|DECLARE\s+\w+\s+(\w+\s+)*CURSOR|WITH\s+HOLD|[`'";]\s*LISTEN\s+(\$\{|"?\w+"?\s*[`'";])|[`'";]\s*PREPARE\s+\w+\s*(\(|AS\s)/;
const DIRECT_SESSION_FILES = [
  'src/db/backup/backup.ts',
  'src/db/bootstrap.ts',
  'src/db/job-queue-liveness.ts',
  'src/db/migrate.ts',
  'src/domains/events/event-repository.ts',
  'src/domains/provisioning/provisioning-repository.ts',
];

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.relative(process.cwd(), path.join(e.parentPath, e.name)))
    .sort();
}

test('session-level SQL lives only where connections are direct; pooledConfig only in the transactional pools', async () => {
  const sessionLevel: string[] = [];
  const pooledUsers: string[] = [];
  for (const file of await sourceFiles('src')) {
    const text = await readFile(file, 'utf8');
    if (SESSION_LEVEL.test(text)) sessionLevel.push(file);
    if (/pooledConfig\(/.test(text) && file !== 'src/db/target.ts') pooledUsers.push(file);
  }
  assert.deepEqual(sessionLevel, DIRECT_SESSION_FILES);
  assert.deepEqual(pooledUsers, ['src/db/pools.ts', 'src/db/system-gate.ts']);
});
