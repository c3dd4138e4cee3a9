/**
 * What does PgBouncer (transaction pooling) in front of PostgreSQL save and cost?
 *
 * 1. Connections: R `svc serve` replicas (API only) with C concurrent clients reading a tenant
 *    for S seconds, direct and then through a private PgBouncer 1.18 (pool `--pool` per role);
 *    prints the peak PostgreSQL backends by application_name and the requests/s of each run.
 * 2. The pipeline question (docs/operations.md "Connection pooling"): the cross-tenant hammer
 *    (test/support/tenant-hammer.ts) through PgBouncer with pg's pipeline off (what svc runs)
 *    and on (what svc refuses behind a pooler), printing violations, errors and units/s.
 *
 *   npm run bench:pooler -- --replicas 3 --clients 60 --seconds 8 --pool 5
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createPasswordHasher } from '../src/auth/passwords.ts';
import { freePort } from '../src/db/embedded.ts';
import { UnnamedStatementClient } from '../src/db/prepared.ts';
import type { ScratchDatabase } from '../src/db/scratch.ts';
import { clientConfig, type DatabaseTarget, pooledConfig } from '../src/db/target.ts';
import { inScope, unitOfWork } from '../src/db/unit-of-work.ts';
import { setPassword } from '../src/domains/users/user-repository.ts';
import { externalDatabaseEnv } from '../test/support/database.ts';
import { createTenant } from '../test/support/fixtures.ts';
import { startPgbouncer } from '../test/support/pgbouncer.ts';
import { hammer, type Scopes, seedEvents } from '../test/support/tenant-hammer.ts';
import { runOnScratchDatabase } from './harness.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const MSSP_HOST = 'mssp.example.test';
const EMAIL = 'bench-pooler@example.test';
const PASSWORD = 'a bench passphrase for the pooler';

const { values } = parseArgs({
  options: {
    replicas: { type: 'string', default: '3' },
    clients: { type: 'string', default: '60' },
    seconds: { type: 'string', default: '8' },
    pool: { type: 'string', default: '5' },
    units: { type: 'string', default: '3000' },
  },
});
const options = {
  replicas: Number(values.replicas),
  clients: Number(values.clients),
  seconds: Number(values.seconds),
  pool: Number(values.pool),
  units: Number(values.units),
};

async function startServe(target: DatabaseTarget, dataDir: string) {
  const port = await freePort();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    SVC_DATA_DIR: dataDir,
    SVC_PORT: String(port),
    SVC_LOG_LEVEL: 'warn',
    ...externalDatabaseEnv(target),
    SVC_MSSP_HOSTNAME: MSSP_HOST,
    SVC_WORKER: 'off',
    SVC_ORCHESTRATOR: 'off',
    SVC_PROJECTOR: 'off',
  };
  if (target.pooler) {
    env.SVC_DATABASE_POOLER_HOST = target.pooler.host;
    env.SVC_DATABASE_POOLER_PORT = String(target.pooler.port);
  }
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`svc serve exited ${child.exitCode}`);
    if (
      await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { url, child };
    await sleep(100);
  }
}

async function stopAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }),
  );
}

async function backends(admin: pg.Pool, database: string): Promise<Record<string, number>> {
  const { rows } = await admin.query<{ name: string; n: number }>(
    `SELECT application_name AS name, count(*)::int AS n FROM pg_stat_activity
      WHERE datname = $1 AND application_name <> 'svc-bench' GROUP BY 1`,
    [database],
  );
  return Object.fromEntries(rows.map((r) => [r.name || '(pooler, unnamed)', r.n]));
}

/** One load run: the replicas up, one session shared by every client, the peak sampled. */
async function loadRun(target: DatabaseTarget, admin: pg.Pool, tenant: string) {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'svc-bench-pooler-'));
  const replicas = await Promise.all(
    Array.from({ length: options.replicas }, () => startServe(target, dataDir)),
  );
  try {
    const login = await fetch(`${replicas[0]?.url}/api/auth/login`, {
      method: 'POST',
      headers: { origin: `https://${MSSP_HOST}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
    });
    if (login.status !== 200) throw new Error(`sign-in: ${login.status}`);
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const peak: Record<string, number> = {};
    let running = true;
    const sampler = (async () => {
      while (running) {
        for (const [name, n] of Object.entries(await backends(admin, target.database))) {
          peak[name] = Math.max(peak[name] ?? 0, n);
        }
        await sleep(100);
      }
    })();
    let ok = 0;
    let failed = 0;
    const end = performance.now() + options.seconds * 1000;
    await Promise.all(
      Array.from({ length: options.clients }, async (_, i) => {
        const url = `${replicas[i % replicas.length]?.url}/api/mssp/tenants/${tenant}`;
        while (performance.now() < end) {
          const res = await fetch(url, { headers: { cookie } });
          await res.arrayBuffer();
          if (res.ok) ok++;
          else failed++;
        }
      }),
    );
    running = false;
    await sampler;
    const total = Object.values(peak).reduce((a, b) => a + b, 0);
    return { peak, total, perSecond: Math.round(ok / options.seconds), failed };
  } finally {
    await stopAll(replicas.map((r) => r.child));
    await rm(dataDir, { recursive: true, force: true });
  }
}

function scopesOf(pool: pg.Pool): Scopes {
  pool.on('error', () => undefined);
  return {
    withTenant: (tenant, fn) => inScope(pool, tenant, (tx) => fn(tx as never)),
    withoutTenant: (fn) => inScope(pool, null, (tx) => fn(tx as never)),
    unitOfWork: (fn) => unitOfWork(pool, fn),
  };
}

runOnScratchDatabase(async (scratch: ScratchDatabase) => {
  const bouncer = await startPgbouncer(scratch.target, { poolSize: options.pool });
  const admin = new pg.Pool({
    ...clientConfig(scratch.target, 'admin'),
    application_name: 'svc-bench',
    max: 2,
  });
  const directPool = new pg.Pool({ ...clientConfig(scratch.target, 'app'), max: 4 });
  const direct = scopesOf(directPool);
  try {
    const appPool = new pg.Pool({ ...clientConfig(scratch.target, 'app'), max: 1 });
    const tenants = [
      await createTenant(appPool),
      await createTenant(appPool),
      await createTenant(appPool),
    ];
    await appPool.end();
    const hash = await createPasswordHasher({ concurrency: 1, queue: 1 }).hash(PASSWORD);
    await direct.withoutTenant(async (tx) => {
      const { rows } = await tx.query<{ id: string }>(
        `INSERT INTO users (tenant_id, email, role) VALUES (NULL, $1, 'mssp_admin') RETURNING id`,
        [EMAIL],
      );
      await setPassword(tx, rows[0]?.id ?? '', hash, false, new Date());
    });
    console.log(
      `PgBouncer ${options.pool} server connections per role; ${options.replicas} × svc serve (API only), ${options.clients} clients, ${options.seconds} s of GET /api/mssp/tenants/{id}`,
    );
    for (const [label, target] of [
      ['direct', scratch.target],
      ['pooled', bouncer.target],
    ] as const) {
      const run = await loadRun(target, admin, tenants[0] ?? '');
      console.log(
        `  ${label.padEnd(6)} peak backends ${String(run.total).padStart(3)} ${JSON.stringify(run.peak)}; ${run.perSecond} req/s, ${run.failed} failed`,
      );
    }
    const seeded = await seedEvents(direct, tenants, 5);
    console.log(
      `Cross-tenant hammer through PgBouncer (pool 1, 40 clients, ${options.units} units; goal 0 violations, 0 errors)`,
    );
    const single = await startPgbouncer(scratch.target, { poolSize: 1 });
    try {
      for (const pipeline of [false, true]) {
        const pool = new pg.Pool({
          ...pooledConfig(single.target, 'app'),
          pipeline,
          Client: UnnamedStatementClient,
          max: 40,
        });
        const started = performance.now();
        const result = await hammer(scopesOf(pool), seeded, {
          units: options.units,
          concurrency: 40,
          seed: 33,
        });
        const secs = (performance.now() - started) / 1000;
        await pool.end();
        console.log(
          `  pipeline ${pipeline ? 'on ' : 'off'}: ${result.violations.length} violations, ${result.unexpected.length} errors, ${result.statements} statements, ${Math.round(result.units / secs)} units/s${pipeline ? ' (svc keeps it off behind a pooler: a clean run proves no safety)' : ''}`,
        );
      }
    } finally {
      await single.stop();
    }
  } finally {
    await directPool.end();
    await admin.end();
    await bouncer.stop();
  }
});
