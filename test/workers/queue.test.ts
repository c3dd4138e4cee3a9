import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Core, composeCore, composeWorkers, type Workers } from '../../src/app/compose.ts';
import { loadConfig } from '../../src/config/index.ts';
import { enqueueJobs } from '../../src/domains/jobs/job-repository.ts';
import { createLogger } from '../../src/log/index.ts';
import { createTokenService, signingKeyFromPem, TokenError } from '../../src/tokens/index.ts';
import { checkJobPayload, type JobPayload } from '../../src/workers/index.ts';
import { type JobRun, JobTokenMismatchError, runWithToken } from '../../src/workers/runtime.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant, TENANT_ROW_FIXTURES } from '../support/fixtures.ts';

let db: TestDatabase;
let core: Core;
let workers: Workers;
let tenantA: string;
let tenantB: string;
const runs: Array<JobRun & { seen: string[] }> = [];

before(async () => {
  db = await createTestDatabase();
  tenantA = await createTenant(db.pools.app);
  tenantB = await createTenant(db.pools.app);
  for (const t of [tenantA, tenantB]) {
    await db.app.withTenant(t, async (tx) => TENANT_ROW_FIXTURES.investigations?.(tx, t));
  }
  const config = { ...loadConfig({}), dataDir: await mkdtemp(path.join(tmpdir(), 'svc-key-')) };
  core = await composeCore({
    config,
    logger: createLogger('silent'),
    target: db.target,
    db: db.app,
  });
  workers = await composeWorkers(core, {
    concurrency: 2,
    pollIntervalMs: 200,
    jobs: {
      // Reads every investigation it can see: RLS must show only the job's tenant.
      probe: async (run) => {
        const seen = await db.app.withTenant(run.tenantId, async (tx) => {
          const { rows } = await tx.query<{ tenant_id: string }>(
            'SELECT DISTINCT tenant_id FROM investigations',
          );
          return rows.map((r) => r.tenant_id);
        });
        runs.push({ ...run, seen });
      },
    },
  });
});
after(async () => {
  await workers.stop();
  await core.close();
  await db.drop();
});

async function until<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  ms = 10_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error('timed out');
    await sleep(50);
  }
}

async function queued(): Promise<number> {
  const { rows } = await db.pools.admin.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM graphile_worker._private_jobs',
  );
  return rows[0]?.n ?? 0;
}

test('issue 13: a job enqueued in a tenant transaction runs once, for that tenant only, as worker:<job_id>', async () => {
  const marker = randomUUID();
  await db.app.withTenant(tenantA, (tx) =>
    enqueueJobs(tx, [{ tenantId: tenantA, jobType: 'probe', input: { marker } }]),
  );
  const run = await until(() => runs.find((r) => r.input.marker === marker));
  assert.equal(run.tenantId, tenantA);
  assert.deepEqual(run.seen, [tenantA]);
  assert.equal(run.actorId, `worker:${run.jobId}`);
  assert.equal(run.attempt, 1);
  await until(async () => ((await queued()) === 0 ? true : undefined));
  assert.equal(runs.filter((r) => r.input.marker === marker).length, 1);
});

test('issue 13: a job enqueued in a transaction that rolls back never exists', async () => {
  const marker = randomUUID();
  await assert.rejects(
    db.app.withTenant(tenantA, async (tx) => {
      await enqueueJobs(tx, [{ tenantId: tenantA, jobType: 'probe', input: { marker } }]);
      throw new Error('roll back');
    }),
  );
  assert.equal(await queued(), 0);
  await sleep(500);
  assert.equal(runs.filter((r) => r.input.marker === marker).length, 0);
});

test('issue 13: jobs with one key enqueued together run once', async () => {
  const marker = randomUUID();
  await db.app.withTenant(tenantB, async (tx) => {
    for (let i = 0; i < 3; i++) {
      await enqueueJobs(tx, [
        {
          tenantId: tenantB,
          jobType: 'probe',
          input: { marker },
          jobKey: `probe:${marker}`,
          runAt: new Date(Date.now() + 300),
        },
      ]);
    }
  });
  await until(() => runs.find((r) => r.input.marker === marker));
  await sleep(600);
  assert.equal(runs.filter((r) => r.input.marker === marker).length, 1);
});

async function refusals(): Promise<Array<{ actor_id: string; after: Record<string, unknown> }>> {
  const { rows } = await db.pools.mssp.query<{ actor_id: string; after: Record<string, unknown> }>(
    `SELECT actor_id, after FROM audit_log WHERE action = 'job.refuse' AND tenant_id IS NULL
      AND actor_principal = 'Worker' ORDER BY timestamp`,
  );
  return rows;
}

test('§5.7.5 a queued job without a usable tenant_id is refused, recorded, and never run or retried', async () => {
  const before = (await refusals()).length;
  const marker = randomUUID();
  for (const payload of [
    { job_id: randomUUID(), job_type: 'probe', input: { marker } },
    { tenant_id: 'alpha', job_id: randomUUID(), job_type: 'probe', input: { marker } },
    { tenant_id: tenantA, job_id: randomUUID(), job_type: 'other', input: { marker } },
  ]) {
    await db.pools.app.query("SELECT graphile_worker.add_job('probe', $1::json)", [
      JSON.stringify(payload),
    ]);
  }
  const rows = await until(async () => {
    const r = await refusals();
    return r.length >= before + 3 ? r : undefined;
  });
  const reasons = rows.slice(-3).map((r) => String(r.after.reason));
  assert.ok(
    reasons.some((r) => r.includes('tenant_id')),
    reasons.join('; '),
  );
  assert.ok(
    reasons.some((r) => r.includes('queued as probe')),
    reasons.join('; '),
  );
  await until(async () => ((await queued()) === 0 ? true : undefined));
  assert.equal(runs.filter((r) => r.input.marker === marker).length, 0);
});

test('§5.2 the runner refuses a Worker token for another tenant, job or type, and a forged one', async () => {
  const jobId = randomUUID();
  const job: JobPayload = { tenant_id: tenantB, job_id: jobId, job_type: 'probe', input: {} };
  const handler = async () => assert.fail('must not run');
  const attempt = { attempt: 1, maxAttempts: 1 };
  const refused = async (token: string, error: new (...args: never[]) => Error) =>
    assert.rejects(runWithToken(core.tokens, token, job, handler, attempt), error);
  const forA = await core.tokens.mintWorker({ tenantId: tenantA, jobId, jobType: 'probe' });
  await refused(forA.token, JobTokenMismatchError);
  const otherJob = await core.tokens.mintWorker({
    tenantId: tenantB,
    jobId: randomUUID(),
    jobType: 'probe',
  });
  await refused(otherJob.token, JobTokenMismatchError);
  const otherType = await core.tokens.mintWorker({ tenantId: tenantB, jobId, jobType: 'act' });
  await refused(otherType.token, JobTokenMismatchError);
  const { privateKey } = generateKeyPairSync('ed25519');
  const forger = createTokenService({
    key: await signingKeyFromPem(
      privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      'forged',
    ),
    now: () => new Date(),
  });
  await refused(
    (await forger.mintWorker({ tenantId: tenantB, jobId, jobType: 'probe' })).token,
    TokenError,
  );
  await refused((await core.tokens.mintAdapter({ tenantId: tenantB })).token, TokenError);
  // The genuine token runs the handler.
  let ran = false;
  const genuine = await core.tokens.mintWorker({ tenantId: tenantB, jobId, jobType: 'probe' });
  await runWithToken(
    core.tokens,
    genuine.token,
    job,
    async () => {
      ran = true;
    },
    attempt,
  );
  assert.equal(ran, true);
});

test('§5.7.5 checkJobPayload: the job type must be the task it was queued as', () => {
  const payload = { tenant_id: tenantA, job_id: randomUUID(), job_type: 'probe' };
  assert.equal(checkJobPayload(payload, 'probe').ok, true);
  assert.equal(checkJobPayload(payload, 'triage').ok, false);
  assert.equal(checkJobPayload(null, 'probe').ok, false);
});

test('§5.7.5 a worker query without tenant context sees zero rows, also on a connection that had a tenant', async () => {
  const tables = ['investigations', 'pending_reviews', 'llm_cache', 'events'];
  for (const t of [tenantA, tenantB]) {
    await db.app.withTenant(t, async (tx) => {
      for (const table of tables.slice(1)) await TENANT_ROW_FIXTURES[table]?.(tx, t);
    });
  }
  const countAll = async (tx: { query: typeof db.pools.app.query }) => {
    const counts: number[] = [];
    for (const table of tables) {
      const { rows } = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
      counts.push(rows[0]?.n ?? -1);
    }
    return counts;
  };
  const stored = await countAll(db.pools.mssp);
  assert.ok(
    stored.every((n) => n >= 2),
    `rows of both tenants exist: ${stored.join(', ')}`,
  );
  const whoAmI =
    "SELECT pg_backend_pid() AS pid, current_setting('app.current_tenant_id', true) AS setting";
  const scoped = await db.app.withTenant(tenantA, async (tx) => ({
    ...(await tx.query<{ pid: number }>(whoAmI)).rows[0],
    seen: await countAll(tx),
  }));
  assert.ok(
    scoped.seen.every((n) => n >= 1),
    `tenant A sees its rows: ${scoped.seen.join(', ')}`,
  );
  // The pool hands the last released connection out again: the one that just had tenant A.
  const blind = await db.app.withoutTenant(async (tx) => ({
    ...(await tx.query<{ pid: number; setting: string | null }>(whoAmI)).rows[0],
    seen: await countAll(tx),
  }));
  assert.deepEqual(blind.seen, [0, 0, 0, 0]);
  assert.equal(blind.pid, scoped.pid, 'the same pooled connection');
  assert.equal(blind.setting, '', 'the setting a finished tenant transaction leaves behind');
});
