import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { composeAuditRetention, composeCore, composeWorkers } from '../../src/app/compose.ts';
import { loadConfig } from '../../src/config/index.ts';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import type { SystemTx } from '../../src/db/tenant-context.ts';
import { writeAudit } from '../../src/domains/audit/audit-repository.ts';
import {
  type AuditRetentionDeps,
  createAuditRetention,
} from '../../src/domains/audit/audit-retention.ts';
import { purgeAuditBatch } from '../../src/domains/audit/audit-retention-repository.ts';
import { purgeEndedSessions } from '../../src/domains/sessions/session-repository.ts';
import { readAuditRetentionDays } from '../../src/domains/settings/settings-repository.ts';
import { createLogger } from '../../src/log/index.ts';
import { AUDIT_PURGE_CRON } from '../../src/workers/jobs/audit-purge.ts';
import { createTestDatabase, externalDatabaseEnv, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DAY = 86_400_000;

let db: TestDatabase;
let gate: SystemGate;
let tenantA: string;
let tenantB: string;
let dataDir: string;

before(async () => {
  db = await createTestDatabase();
  gate = createSystemGate(db.target);
  tenantA = await createTenant(db.pools.app);
  tenantB = await createTenant(db.pools.app);
  dataDir = await mkdtemp(path.join(tmpdir(), 'svc-retention-'));
});
after(async () => {
  await gate.close();
  await db.drop();
  await rm(dataDir, { recursive: true, force: true });
});

// Every purge deletes all rows older than its cutoff, whoever wrote them: each test starts
// without the probe rows earlier tests left behind (test scaffolding, hence the superuser).
afterEach(async () => {
  const client = new pg.Client(db.superuser);
  await client.connect();
  try {
    await client.query(`DELETE FROM audit_log WHERE action = 'test.probe'`);
  } finally {
    await client.end();
  }
});

function retention(now: Date, extra: Partial<AuditRetentionDeps> = {}) {
  return createAuditRetention({
    system: gate,
    now: () => now,
    retentionDays: readAuditRetentionDays,
    purgeSessions: purgeEndedSessions,
    ...extra,
  });
}

/** An audit row at a given time, tagged (resource_id) so each test finds only its own rows. */
async function row(tag: string, at: Date, tenant: string | null): Promise<void> {
  await db.pools.mssp.query(
    `INSERT INTO audit_log ("timestamp", tenant_id, actor_principal, actor_id, action,
       resource_type, resource_id)
     VALUES ($1, $2, 'System', 'system:test', 'test.probe', 'probe', $3)`,
    [at, tenant, tag],
  );
}

async function surviving(tag: string): Promise<{ at: string; tenant: string | null }[]> {
  const { rows } = await db.pools.mssp.query<{ at: Date; tenant: string | null }>(
    `SELECT "timestamp" AS at, tenant_id AS tenant FROM audit_log WHERE resource_id = $1
      ORDER BY "timestamp", tenant_id NULLS FIRST`,
    [tag],
  );
  return rows.map((r) => ({ at: r.at.toISOString(), tenant: r.tenant }));
}

async function auditCount(): Promise<number> {
  const { rows } = await db.pools.mssp.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM audit_log',
  );
  return rows[0]?.n ?? 0;
}

async function purgeRows(trigger: string) {
  const { rows } = await db.pools.mssp.query<{
    tenant_id: string | null;
    actor_principal: string;
    actor_id: string;
    resource_type: string;
    resource_id: string | null;
    details: Record<string, unknown>;
  }>(
    `SELECT tenant_id, actor_principal, actor_id, resource_type, resource_id, details
       FROM audit_log WHERE action = 'audit.purge' AND details->>'trigger' = $1
      ORDER BY "timestamp"`,
    [trigger],
  );
  return rows;
}

async function setRetention(value: unknown): Promise<void> {
  await db.pools.mssp.query(
    `INSERT INTO install_settings (key, value, updated_by) VALUES ('audit.retention_days', $1, 'test')
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
    [JSON.stringify(value)],
  );
}

async function clearRetention(): Promise<void> {
  await db.pools.mssp.query(`DELETE FROM install_settings WHERE key = 'audit.retention_days'`);
}

test('§8 rows older than 90 days are purged in every scope; the cutoff and newer are never touched', async () => {
  const now = new Date();
  const cutoff = new Date(now.getTime() - 90 * DAY);
  const tag = randomUUID();
  // A tenant hard-purged by decommission leaves its rows with a dangling tenant_id (no FK).
  const gone = randomUUID();
  const scopes = [tenantA, tenantB, null, gone];
  const offsets = [-1000, -1, 0, 1000];
  for (const tenant of scopes) {
    for (const ms of offsets) await row(tag, new Date(cutoff.getTime() + ms), tenant);
  }
  const run = await retention(now).purge('operator');
  assert.equal(run.deleted, 8);
  assert.equal(run.before.toISOString(), cutoff.toISOString());
  assert.equal(run.retentionDays, 90);
  const expected = [0, 1000].flatMap((ms) =>
    [null, ...[tenantA, tenantB, gone].sort()].map((tenant) => ({
      at: new Date(cutoff.getTime() + ms).toISOString(),
      tenant,
    })),
  );
  assert.deepEqual(await surviving(tag), expected);
});

test('§8 each run writes one audit.purge row of its own (System actor, count, window), also when it deletes nothing', async () => {
  const now = new Date();
  const tag = randomUUID();
  for (let i = 0; i < 4; i++) await row(tag, new Date(now.getTime() - 100 * DAY - i), tenantA);
  const enteredBefore = await entries();
  const first = await retention(now).purge('operator');
  const second = await retention(now).purge('operator');
  assert.deepEqual([first.deleted, second.deleted], [4, 0]);
  const before = new Date(now.getTime() - 90 * DAY).toISOString();
  const rows = (await purgeRows('operator')).slice(-2);
  assert.deepEqual(
    rows,
    [4, 0].map((deleted) => ({
      tenant_id: null,
      actor_principal: 'System',
      actor_id: 'system:audit.purge',
      resource_type: 'audit_log',
      resource_id: null,
      details: {
        deleted,
        sessions_deleted: 0,
        before,
        retention_days: 90,
        batches: 1,
        trigger: 'operator',
      },
    })),
  );
  // The gate records its entry once per batch transaction, and nothing else enters.
  assert.equal((await entries()) - enteredBefore, 2);
  assert.deepEqual(await surviving(tag), []);
});

async function entries(): Promise<number> {
  const { rows } = await db.pools.mssp.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM audit_log
      WHERE action = 'system.enter' AND actor_id = 'system:audit.purge'`,
  );
  return rows[0]?.n ?? 0;
}

test('§8 the purge deletes in batches, oldest first, each batch its own transaction', async () => {
  const now = new Date();
  const tag = randomUUID();
  const times = Array.from(
    { length: 10 },
    (_, i) => new Date(now.getTime() - 200 * DAY + i * 1000),
  );
  for (const [i, at] of times.entries()) await row(tag, at, i % 2 ? tenantA : null);
  const batches: { txid: string; oldest: string | null; left: number }[] = [];
  // The real gate, watched: each withSystem is one transaction; after each batch the test
  // reads that transaction's id and, from outside it, what is left once it committed.
  const watched: AuditRetentionDeps['system'] = {
    withSystem: <T>(reason: string, fn: (tx: SystemTx) => Promise<T>) =>
      gate
        .withSystem(reason, async (tx) => {
          const { rows } = await tx.query<{ txid: string }>('SELECT txid_current()::text AS txid');
          return { result: await fn(tx), txid: rows[0]?.txid ?? '' };
        })
        .then(async ({ result, txid }) => {
          const left = await surviving(tag);
          batches.push({ txid, oldest: left[0]?.at ?? null, left: left.length });
          return result;
        }),
  };
  const run = await retention(now, { system: watched, batchSize: 3 }).purge('operator');
  assert.equal(run.deleted, 10);
  assert.equal(run.batches, 4);
  assert.deepEqual(
    batches.map((b) => [b.left, b.oldest]),
    [
      [7, times[3]?.toISOString()],
      [4, times[6]?.toISOString()],
      [1, times[9]?.toISOString()],
      [0, null],
    ],
  );
  assert.equal(new Set(batches.map((b) => b.txid)).size, 4);
  assert.equal((await purgeRows('operator')).at(-1)?.details.batches, 4);
});

test('§8 the retention comes from install setting audit.retention_days: a change moves the cutoff', async () => {
  const now = new Date();
  const tag = randomUUID();
  const at = (days: number) => new Date(now.getTime() - days * DAY);
  for (const days of [29, 31, 89]) await row(tag, at(days), tenantB);
  await setRetention(30);
  try {
    const run = await retention(now).purge('operator');
    assert.equal(run.retentionDays, 30);
    assert.equal(run.before.toISOString(), at(30).toISOString());
    assert.deepEqual(await surviving(tag), [{ at: at(29).toISOString(), tenant: tenantB }]);
    assert.equal((await purgeRows('operator')).at(-1)?.details.retention_days, 30);
    // The shortest retention the setting allows still runs, with a clock a minute ahead.
    await setRetention(1);
    const hour = 3_600_000;
    for (const hours of [23, 25]) await row(tag, new Date(now.getTime() - hours * hour), tenantB);
    const short = await retention(new Date(Date.now() + 60_000)).purge('operator');
    assert.equal(short.deleted, 2);
    assert.deepEqual(await surviving(tag), [
      { at: new Date(now.getTime() - 23 * hour).toISOString(), tenant: tenantB },
    ]);
  } finally {
    await clearRetention();
  }
});

test('§8 a retention setting outside 1..3650 days fails the run and deletes nothing', async () => {
  const now = new Date();
  const tag = randomUUID();
  await row(tag, new Date(now.getTime() - 400 * DAY), tenantA);
  const summaries = (await purgeRows('operator')).length;
  try {
    for (const bad of [0, -5, 2.5, '90', 3651, null]) {
      await setRetention(bad);
      await assert.rejects(
        retention(now).purge('operator'),
        /audit\.retention_days/,
        JSON.stringify(bad),
      );
    }
  } finally {
    await clearRetention();
  }
  assert.equal((await surviving(tag)).length, 1);
  assert.equal((await purgeRows('operator')).length, summaries);
});

test('§2.6 only the purge deletes: svc_app, svc_mssp and svc_admin cannot DELETE audit rows directly', async () => {
  const tag = randomUUID();
  const old = new Date(Date.now() - 365 * DAY);
  await row(tag, old, tenantA);
  await row(tag, old, null);
  const count = await auditCount();
  await assert.rejects(
    db.app.withTenant(tenantA, (tx) => tx.query('DELETE FROM audit_log')),
    /permission denied for table audit_log/,
  );
  await assert.rejects(
    db.app.withTenant(tenantA, (tx) =>
      tx.query(`SELECT audit_purge_batch(now() - interval '100 days', 10)`),
    ),
    /permission denied for function audit_purge_batch/,
  );
  await assert.rejects(
    db.pools.mssp.query('DELETE FROM audit_log WHERE resource_id = $1', [tag]),
    /permission denied for table audit_log/,
  );
  // The owner is bound by FORCE RLS: with no tenant context and outside the purge it sees,
  // and so deletes, nothing — not even through the function it owns.
  const owner = await db.pools.admin.query('DELETE FROM audit_log');
  assert.equal(owner.rowCount, 0);
  const viaOwner = await db.pools.admin.query<{ n: number }>(
    `SELECT audit_purge_batch(now() - interval '100 days', 10) AS n`,
  );
  assert.equal(viaOwner.rows[0]?.n, 0);
  assert.equal(await auditCount(), count);
  assert.equal((await surviving(tag)).length, 2);
});

test('§8 the purge function refuses a cutoff within the last 23 hours and a batch outside 1..50000', async () => {
  const tag = randomUUID();
  await row(tag, new Date(Date.now() - 23 * 3_600_000), tenantA);
  await row(tag, new Date(Date.now() - 400 * DAY), tenantA);
  const count = await auditCount();
  const cases: [Date, number][] = [
    [new Date(Date.now() - 23 * 3_600_000 + 1000), 10],
    [new Date(Date.now() + DAY), 10],
    [new Date(Date.now() - 100 * DAY), 0],
    [new Date(Date.now() - 100 * DAY), 50_001],
  ];
  for (const [before, limit] of cases) {
    await assert.rejects(
      gate.withSystem('audit.purge', (tx) => purgeAuditBatch(tx, before, limit)),
      (error: { code?: string }) => error.code === '22023',
      `${before.toISOString()} ${limit}`,
    );
  }
  // Entering the gate is recorded (4 entries); no row was deleted.
  assert.equal(await auditCount(), count + cases.length);
  assert.equal((await surviving(tag)).length, 2);
  // A clock far ahead of the database's cannot make the service purge recent rows either.
  await assert.rejects(
    retention(new Date(Date.now() + 365 * DAY)).purge('operator'),
    /within the last 23 hours/,
  );
  assert.equal((await surviving(tag)).length, 2);
});

test('§8 audit writers are not blocked by a purge: a write commits while a batch transaction is open', async (t) => {
  const tag = randomUUID();
  await db.pools.mssp.query(
    `INSERT INTO audit_log ("timestamp", tenant_id, actor_principal, actor_id, action,
       resource_type, resource_id)
     SELECT now() - interval '300 days' + g * interval '1 ms', $1, 'System', 'system:test',
            'test.probe', 'probe', $2
       FROM generate_series(1, 20000) AS g`,
    [tenantA, tag],
  );
  const write = () =>
    db.app.withTenant(tenantB, async (tx) => {
      // A writer that waited on any lock for 500 ms would fail instead of passing slowly.
      await tx.query(`SET LOCAL lock_timeout = '500ms'`);
      await writeAudit(tx, {
        tenantId: tenantB,
        actorPrincipal: 'System',
        actorId: 'system:writer',
        action: 'test.write',
        resourceType: 'probe',
        resourceId: tag,
      });
    });
  await gate.withSystem('audit.purge', async (tx) => {
    assert.equal(await purgeAuditBatch(tx, new Date(Date.now() - 200 * DAY), 5000), 5000);
    await write();
  });
  // A whole run of several batches against a writer that keeps writing: both finish.
  let purging = true;
  const latencies: number[] = [];
  const writer = (async () => {
    while (purging) {
      const start = performance.now();
      await write();
      latencies.push(performance.now() - start);
    }
  })();
  const started = performance.now();
  const run = await retention(new Date()).purge('operator');
  const took = performance.now() - started;
  purging = false;
  await writer;
  assert.equal(run.deleted, 15_000);
  assert.equal(run.batches, 4);
  assert.ok(latencies.length > 0);
  const worst = Math.max(...latencies);
  t.diagnostic(
    `purge of 15000 rows: ${took.toFixed(0)} ms; ${latencies.length} writes meanwhile, worst ${worst.toFixed(1)} ms`,
  );
  const { rows } = await db.pools.mssp.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM audit_log WHERE action = 'test.write' AND resource_id = $1`,
    [tag],
  );
  assert.equal(rows[0]?.n, latencies.length + 1);
});

test('§8 a batch stays short on a connection that purged a small table before (no cached plan)', async (t) => {
  // One connection, so every call shares its plan cache: PL/pgSQL would keep a generic plan
  // after five calls, planned for a few rows (27 s per 5,000 of 20,000 rows, measured).
  const single = createSystemGate(db.target, 1);
  try {
    const old = () => new Date(Date.now() - 200 * DAY);
    for (let i = 0; i < 8; i++) {
      await row(randomUUID(), new Date(Date.now() - 300 * DAY), tenantA);
      await single.withSystem('audit.purge', (tx) => purgeAuditBatch(tx, old(), 3));
    }
    await db.pools.mssp.query(
      `INSERT INTO audit_log ("timestamp", tenant_id, actor_principal, actor_id, action,
         resource_type, resource_id)
       SELECT now() - interval '300 days' + g * interval '1 ms', $1, 'System', 'system:test',
              'test.probe', 'probe', 'bulk'
         FROM generate_series(1, 20000) AS g`,
      [tenantA],
    );
    const started = performance.now();
    const deleted = await single.withSystem('audit.purge', (tx) =>
      purgeAuditBatch(tx, old(), 5000),
    );
    const took = performance.now() - started;
    t.diagnostic(`5000 of 20000 rows after 8 small calls: ${took.toFixed(0)} ms`);
    assert.equal(deleted, 5000);
    assert.ok(took < 5000, `one batch took ${took} ms`);
  } finally {
    await single.close();
  }
});

test(`§8 the worker's daily schedule (${AUDIT_PURGE_CRON} UTC) runs the purge; a day missed runs at start`, async () => {
  const tag = randomUUID();
  await row(tag, new Date(Date.now() - 120 * DAY), null);
  const summaries = (await purgeRows('schedule')).length;
  // As if the last run was two days ago and every worker was down since: the start backfills
  // the one occurrence inside the last day (graphile-worker's known_crontabs).
  await db.pools.admin.query(
    `INSERT INTO graphile_worker._private_known_crontabs (identifier, known_since, last_execution)
     VALUES ('audit.purge', now() - interval '3 days', now() - interval '2 days')`,
  );
  const config = { ...loadConfig({}), dataDir };
  const core = await composeCore({
    config,
    logger: createLogger('silent'),
    target: db.target,
    db: db.app,
  });
  const workers = await composeWorkers(core, { jobs: {}, concurrency: 1, pollIntervalMs: 100 });
  try {
    const deadline = Date.now() + 15_000;
    while ((await purgeRows('schedule')).length === summaries && Date.now() < deadline)
      await sleep(100);
  } finally {
    await workers.stop();
    await core.close();
  }
  const rows = await purgeRows('schedule');
  assert.equal(rows.length, summaries + 1);
  assert.equal(rows.at(-1)?.actor_id, 'system:audit.purge');
  assert.deepEqual(await surviving(tag), []);
  const { rows: known } = await db.pools.admin.query<{ recent: boolean }>(
    `SELECT last_execution > now() - interval '1 day' AS recent
       FROM graphile_worker._private_known_crontabs WHERE identifier = 'audit.purge'`,
  );
  assert.deepEqual(known, [{ recent: true }]);
});

function svc(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const t = db.target;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...externalDatabaseEnv(t),
      SVC_DATA_DIR: dataDir,
      SVC_LOG_LEVEL: 'warn',
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

test('§8 `svc audit purge` runs one purge now and prints what it deleted', async () => {
  const tag = randomUUID();
  for (const tenant of [tenantA, null]) await row(tag, new Date(Date.now() - 95 * DAY), tenant);
  await row(tag, new Date(Date.now() - 85 * DAY), tenantA);
  const ran = await svc(['audit', 'purge']);
  assert.equal(ran.code, 0, ran.stderr);
  assert.match(
    ran.stdout,
    /^deleted 2 audit row\(s\) older than \d{4}-\d\d-\d\dT[\d:.]+Z \(retention 90 days\) in 1 batch\(es\)$/m,
  );
  assert.equal((await surviving(tag)).length, 1);
  const rows = await purgeRows('operator');
  assert.equal(rows.at(-1)?.details.deleted, 2);
});

// Issue 27 item 7: sessions are kept as long as the audit rows that name them, then purged
// by the same run. Each test below removes the sessions it made (purgeable or not), so the
// counts of one do not depend on another.

/** A session of `user` with the given times (ms offsets from `base`); returns its id. */
async function session(
  user: string,
  base: Date,
  at: { created: number; idle: number; absolute: number; revoked?: number },
): Promise<string> {
  const t = (ms: number) => new Date(base.getTime() + ms);
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    `INSERT INTO sessions (id, user_id, created_at, last_seen_at, idle_expiry, absolute_expiry,
       revoked_at, secret_hash)
     VALUES (gen_random_uuid(), $1, $2, $2, $3, $4, $5,
       encode(sha256(uuid_send(gen_random_uuid())), 'hex'))
     RETURNING id`,
    [
      user,
      t(at.created),
      t(at.idle),
      t(at.absolute),
      at.revoked === undefined ? null : t(at.revoked),
    ],
  );
  return rows[0]?.id ?? '';
}

async function sessionUser(): Promise<string> {
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    `INSERT INTO users (email, role) VALUES ($1, 'analyst') RETURNING id`,
    [`purge-${randomUUID().slice(0, 8)}@mssp.test`],
  );
  return rows[0]?.id ?? '';
}

async function sessionsOf(user: string): Promise<string[]> {
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    'SELECT id FROM sessions WHERE user_id = $1 ORDER BY id',
    [user],
  );
  return rows.map((r) => r.id);
}

const dropUser = (user: string) => db.pools.mssp.query('DELETE FROM users WHERE id = $1', [user]);

const HOUR = 3_600_000;
const MIN = 60_000;

test('issue 27.7 sessions that ended before the retention cutoff are purged; live and recently ended ones stay', async () => {
  const now = new Date();
  const cutoff = new Date(now.getTime() - 90 * DAY);
  const user = await sessionUser();
  try {
    const gone = [
      // Revoked (logout) long ago.
      await session(user, cutoff, {
        created: -2 * DAY,
        idle: -2 * DAY + 30 * MIN,
        absolute: -DAY,
        revoked: -2 * DAY + MIN,
      }),
      // Never revoked, ran out idle long ago.
      await session(user, cutoff, { created: -DAY, idle: -DAY + 30 * MIN, absolute: -12 * HOUR }),
      // Revoked a moment before the cutoff, although its idle expiry was after it.
      await session(user, cutoff, {
        created: -HOUR,
        idle: 10 * MIN,
        absolute: 11 * HOUR,
        revoked: -1,
      }),
      // Reached its absolute expiry a moment before the cutoff.
      await session(user, cutoff, { created: -12 * HOUR - 1, idle: -1, absolute: -1 }),
    ];
    const kept = [
      // Created before the cutoff, but slid past it: it ended after the cutoff.
      await session(user, cutoff, { created: -HOUR, idle: MIN, absolute: 11 * HOUR }),
      // Ended exactly at the cutoff: not before it.
      await session(user, cutoff, { created: -HOUR, idle: 0, absolute: 11 * HOUR }),
      // Revoked recently.
      await session(user, now, {
        created: -HOUR,
        idle: -30 * MIN,
        absolute: 11 * HOUR,
        revoked: -40 * MIN,
      }),
      // Live now.
      await session(user, now, { created: -10 * MIN, idle: 20 * MIN, absolute: 11 * HOUR }),
      // Live now although created before the cutoff (no such row is made by svc; a live
      // session is never purged whatever its age).
      await session(user, cutoff, {
        created: -DAY,
        idle: now.getTime() - cutoff.getTime() + 10 * MIN,
        absolute: now.getTime() - cutoff.getTime() + HOUR,
      }),
    ];
    const run = await retention(now).purge('operator');
    assert.equal(run.sessionsDeleted, gone.length);
    assert.deepEqual(await sessionsOf(user), kept.sort());
    const summary = (await purgeRows('operator')).at(-1);
    assert.equal(summary?.details.sessions_deleted, gone.length);
  } finally {
    await dropUser(user);
  }
});

test('issue 27.7 sessions are purged in batches too, each batch its own transaction', async () => {
  const now = new Date();
  const user = await sessionUser();
  try {
    for (let i = 0; i < 5; i++)
      await session(user, new Date(now.getTime() - 100 * DAY), {
        created: i,
        idle: 30 * MIN,
        absolute: HOUR,
      });
    const run = await retention(now, { batchSize: 2 }).purge('operator');
    assert.deepEqual([run.sessionsDeleted, run.batches], [5, 3]);
    assert.deepEqual(await sessionsOf(user), []);
  } finally {
    await dropUser(user);
  }
});

test('issue 27.7 the purge counts the sessions it deleted in svc_sessions_purged_total', async () => {
  const user = await sessionUser();
  const core = await composeCore({
    config: { ...loadConfig({}), dataDir },
    logger: createLogger('silent'),
    target: db.target,
    db: db.app,
  });
  try {
    const old = new Date(Date.now() - 100 * DAY);
    for (let i = 0; i < 3; i++)
      await session(user, old, { created: i, idle: 30 * MIN, absolute: HOUR });
    await session(user, new Date(), { created: -MIN, idle: 29 * MIN, absolute: 11 * HOUR });
    await composeAuditRetention(core).purge('schedule');
    const { body } = await core.metrics.scrape();
    assert.match(body, /^svc_sessions_purged_total 3$/m);
    assert.equal((await sessionsOf(user)).length, 1);
  } finally {
    await core.close();
    await dropUser(user);
  }
});

test('issue 27.7 `svc audit purge` purges ended sessions too and says how many', async () => {
  const user = await sessionUser();
  try {
    const old = new Date(Date.now() - 100 * DAY);
    for (let i = 0; i < 2; i++)
      await session(user, old, { created: i, idle: 30 * MIN, absolute: HOUR });
    const live = await session(user, new Date(), {
      created: -MIN,
      idle: 29 * MIN,
      absolute: 11 * HOUR,
    });
    const ran = await svc(['audit', 'purge']);
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(ran.stdout, /^deleted 2 ended session\(s\) \(ended before \S+Z\)$/m);
    assert.deepEqual(await sessionsOf(user), [live]);
    assert.equal((await purgeRows('operator')).at(-1)?.details.sessions_deleted, 2);
  } finally {
    await dropUser(user);
  }
});
