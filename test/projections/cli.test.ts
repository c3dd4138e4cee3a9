import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import { createProjectionService } from '../../src/domains/projections/projection-service.ts';
import { createTestDatabase, externalDatabaseEnv, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { projectionRows, randomTraffic, seeded } from './support.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

let db: TestDatabase;
let system: SystemGate;
let dataDir: string;
let env: NodeJS.ProcessEnv;

before(async () => {
  db = await createTestDatabase();
  system = createSystemGate(db.target);
  dataDir = await mkdtemp(path.join(tmpdir(), 'svc-projections-'));
  env = {
    ...process.env,
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'warn',
    ...externalDatabaseEnv(db.target),
  };
});
after(async () => {
  await system.close();
  await db.drop();
  await rm(dataDir, { recursive: true, force: true });
});

/** `svc <args>` as an OS process, as bin/svc.js runs it. */
function svc(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', ...args],
      { cwd: ROOT, env, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
          stdout,
          stderr,
        }),
    );
  });
}

test('§2.3 svc projections rebuild --tenant restores exactly the incremental rows, keeps reviews, leaves other tenants alone', async () => {
  const a = await createTenant(db.pools.app, 'cli-alpha');
  const b = await createTenant(db.pools.app, 'cli-bravo');
  const random = seeded(5);
  await randomTraffic(db.app, a, 80, random);
  await randomTraffic(db.app, b, 40, random);
  const projections = createProjectionService({ db: db.app, system });
  for (const t of [a, b]) await projections.foldNext(t);
  const incremental = await projectionRows(db, a);
  // An analyst's review on one of A's investigations (pending_reviews refers to the row).
  const inv = (incremental.investigations as { id: string }[])[0]?.id;
  await db.app.withTenant(a, (tx) =>
    tx.query(
      `INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, rationale, risk, requested_by)
       VALUES ($1, $2, 'block_ip', 'brute force', 'medium', 'worker:triage')`,
      [a, inv],
    ),
  );
  // Drift in every projection of A (a bug, a hand edit), and B's rows as they are.
  await db.pools.mssp.query(
    `WITH r AS (UPDATE rule_stats SET fired = fired + 100 WHERE tenant_id = $1),
          m AS (DELETE FROM metrics_hourly WHERE tenant_id = $1 AND metric = 'alerts.received'),
          i AS (UPDATE ioc_stats SET hits = 1 WHERE tenant_id = $1)
     UPDATE investigations SET alert_count = 0, severity = 'info' WHERE tenant_id = $1`,
    [a],
  );
  const bBefore = await projectionRows(db, b);

  const out = await svc(['projections', 'rebuild', '--tenant', 'cli-alpha']);
  assert.equal(out.code, 0, out.stderr);
  assert.match(
    out.stdout,
    /^\[1\/1\] cli-alpha \([0-9a-f-]{36}\): \d+ events folded, checkpoint \d+\n/,
  );
  assert.match(out.stdout, /rebuilt 1 tenant\(s\), \d+ events\n$/);
  assert.deepEqual(await projectionRows(db, a), incremental);
  assert.deepEqual(await projectionRows(db, b), bBefore);
  const { rows } = await db.pools.mssp.query(
    'SELECT investigation_id FROM pending_reviews WHERE tenant_id = $1',
    [a],
  );
  assert.deepEqual(rows, [{ investigation_id: inv }]);
});

test('§2.3 svc projections rebuild without --tenant walks every tenant one at a time, printing progress', async () => {
  const { rows } = await db.pools.mssp.query<{ slug: string }>(
    'SELECT slug FROM tenants ORDER BY slug',
  );
  const out = await svc(['projections', 'rebuild']);
  assert.equal(out.code, 0, out.stderr);
  const lines = out.stdout.trim().split('\n');
  assert.deepEqual(
    lines.slice(0, -1).map((l) => /\] (\S+) \(/.exec(l)?.[1]),
    rows.map((r) => r.slug),
  );
  assert.match(
    lines.at(-1) ?? '',
    new RegExp(`^rebuilt ${rows.length} tenant\\(s\\), \\d+ events$`),
  );
});

test('§2.3 svc projections rebuild --tenant with an unknown tenant exits 1 with one line and changes nothing', async () => {
  const before = await db.pools.mssp.query('SELECT count(*)::int AS n FROM projection_checkpoints');
  const out = await svc(['projections', 'rebuild', '--tenant', 'no-such-tenant']);
  assert.deepEqual(out, {
    code: 1,
    stdout: '',
    stderr: 'svc: no tenant with slug or id "no-such-tenant"\n',
  });
  const after = await db.pools.mssp.query('SELECT count(*)::int AS n FROM projection_checkpoints');
  assert.deepEqual(after.rows, before.rows);
});
