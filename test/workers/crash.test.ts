import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  attackAlert,
  ingest,
  type PipelineRig,
  pipelineTenant,
  startPipelineRig,
  streamTypes,
  until,
} from '../pipeline/support.ts';
import { getTestCluster } from '../support/cluster.ts';
import { externalDatabaseEnv } from '../support/database.ts';

// Issue 13: "Worker SIGKILLed mid-job: the job runs again and its effect happens once". The API
// runs in this process without workers; the jobs run in real `svc worker` OS processes on the
// test database, killed with SIGKILL while a job waits on a slow stand-in (the LLM, TheHive).
// Liveness locks (src/db/job-queue-liveness.ts) let a live worker unlock a dead one's jobs after
// SVC_WORKER_REAP_GRACE, looked for every SVC_WORKER_REAP_EVERY; both are short here.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REAP_EVERY_MS = 1_000;
const REAP_GRACE_MS = 2_000;

const escalate = JSON.stringify({
  verdict: 'true_positive',
  severity: 'high',
  confidence: 0.93,
  rationale: 'Repeated failed SSH logins from one external address against a non-existent user.',
  recommended_action: 'escalate',
});

interface WorkerProcess {
  child: ChildProcess;
  logs(): Record<string, unknown>[];
  /** Resolves with the exit code and signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let rig: PipelineRig;
let dataDir: string;
let signingKey: string;
const started: WorkerProcess[] = [];

before(async () => {
  rig = await startPipelineRig({ workers: false });
  rig.llm.respond(() => escalate);
  dataDir = await mkdtemp(path.join(tmpdir(), 'svc-worker-'));
  // Every worker replica gets the install's key, as the system chart mounts it.
  signingKey = generateKeyPairSync('ed25519')
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
});

/** Each test starts its own workers: none outlives it to take the next test's jobs. */
afterEach(async () => {
  for (const worker of started.splice(0)) {
    const { pid } = worker.child;
    if (pid !== undefined && worker.child.exitCode === null && worker.child.signalCode === null) {
      process.kill(pid, 'SIGKILL');
      await worker.exited;
    }
  }
});

after(async () => {
  await rig.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** The environment the system chart's worker Deployment gets, pointed at this file's rig. */
function workerEnv(): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'info',
    // The probes' port (src/cli/worker.ts): the system picks one per worker.
    SVC_PORT: '0',
    ...externalDatabaseEnv(rig.db.target),
    SVC_TOKEN_SIGNING_KEY: signingKey,
    SVC_WORKER_CONCURRENCY: '2',
    SVC_WORKER_REAP_EVERY: `${REAP_EVERY_MS}ms`,
    SVC_WORKER_REAP_GRACE: `${REAP_GRACE_MS}ms`,
    SVC_INSTALL_NAMESPACE: rig.namespace,
    KUBECONFIG: getTestCluster().kubeconfigPath,
    SVC_OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8',
    SVC_OUTBOUND_CA_FILE: rig.caFile,
  };
}

/** Starts `svc worker` (the node binary itself, so signals reach svc) and waits until it runs. */
async function startWorker(extraEnv: Record<string, string> = {}): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'worker'], {
    cwd: ROOT,
    env: { ...workerEnv(), ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  let partial = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    partial += d.toString('utf8');
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const part of parts) {
      try {
        lines.push(JSON.parse(part) as Record<string, unknown>);
      } catch {
        lines.push({ msg: part });
      }
    }
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const worker = { child, logs: () => lines, exited };
  started.push(worker);
  await until(
    'svc worker running',
    async () => {
      if (child.exitCode !== null)
        throw new Error(`svc worker exited ${child.exitCode}: ${stderr}`);
      return lines.some((l) => l.msg === 'worker running') ? true : undefined;
    },
    30_000,
  ).catch((error: unknown) => {
    throw new Error(
      `${String(error)}\n${lines.map((l) => JSON.stringify(l)).join('\n')}\n${stderr}`,
    );
  });
  return worker;
}

interface QueuedJob {
  id: string;
  locked_by: string | null;
  attempts: number;
  /** How long it has been locked. */
  locked_ms: number | null;
}

/** The tenant's queued job of this type (graphile-worker's table, read as its owner). */
async function queuedJob(tenantId: string, jobType: string): Promise<QueuedJob | undefined> {
  const { rows } = await rig.db.pools.admin.query<QueuedJob>(
    `SELECT j.id::text, j.locked_by, j.attempts,
            (extract(epoch FROM now() - j.locked_at) * 1000)::int AS locked_ms
       FROM graphile_worker._private_jobs j
       JOIN graphile_worker._private_tasks t ON t.id = j.task_id
      WHERE t.identifier = $1 AND j.payload->>'tenant_id' = $2`,
    [jobType, tenantId],
  );
  return rows[0];
}

/** SIGKILLs the worker; resolves with the time of the kill once it is gone. */
async function sigkill(worker: WorkerProcess): Promise<number> {
  const pid = worker.child.pid;
  assert.ok(pid !== undefined);
  process.kill(pid, 'SIGKILL');
  const killedAt = Date.now();
  assert.deepEqual(await worker.exited, { code: null, signal: 'SIGKILL' });
  return killedAt;
}

/** How long after the kill the dead worker's lock stayed on the job (ms). */
async function lockHeldAfter(killedAt: number, job: QueuedJob): Promise<number> {
  for (;;) {
    const { rows } = await rig.db.pools.admin.query<{ locked_by: string | null }>(
      'SELECT locked_by FROM graphile_worker._private_jobs WHERE id = $1',
      [job.id],
    );
    if (rows[0]?.locked_by !== job.locked_by) return Date.now() - killedAt;
    if (Date.now() - killedAt > 30_000) throw new Error('the dead worker kept its job for 30 s');
    await sleep(25);
  }
}

async function count(tenantId: string, type: string): Promise<number> {
  return (await streamTypes(rig.db, tenantId)).filter((t) => t === type).length;
}

async function reviewsOf(tenantId: string) {
  const res = await rig.admin.mssp.tenantReviews({ params: { tenant_id: tenantId } });
  assert.equal(res.status, 200);
  return res.status === 200 ? res.body.items : [];
}

/** The stream once the pipeline has settled: a review requested, nothing left in the queue. */
async function settled(tenantId: string): Promise<void> {
  await until('the review requested and the queue empty', async () => {
    if ((await count(tenantId, 'review.requested')) === 0) return undefined;
    for (const type of ['triage', 'enrich', 'decide', 'act'])
      if (await queuedJob(tenantId, type)) return undefined;
    return true;
  });
}

test('issue 13: a worker SIGKILLed while its triage job waits on the model: a live worker runs the job again, and triage, decision and review happen once', async () => {
  const doomed = await startWorker();
  const { tenantId, token } = await pipelineTenant(rig, { analyzers: [] });
  const asked = rig.llm.requests.length;
  // The first model call does not answer for 30 s: the job is mid-flight when its worker dies.
  rig.llm.fail([{ delayMs: 30_000 }]);
  await ingest(rig, token, [attackAlert(1)]);
  const job = await until('the triage job locked with its model call in flight', async () => {
    const queued = await queuedJob(tenantId, 'triage');
    return queued?.locked_by && rig.llm.requests.length > asked ? queued : undefined;
  });
  assert.equal(job.attempts, 1);
  assert.deepEqual(await streamTypes(rig.db, tenantId), ['investigation.opened', 'triage.started']);

  // Another replica is already running, as in a Deployment with several. Past the grace and
  // one of its sweeps, it still leaves the job alone: its worker is alive.
  const survivor = await startWorker();
  const age = (await queuedJob(tenantId, 'triage'))?.locked_ms ?? 0;
  await sleep(Math.max(0, REAP_GRACE_MS - age) + 1.5 * REAP_EVERY_MS);
  const held = await queuedJob(tenantId, 'triage');
  assert.equal(
    held?.locked_by,
    job.locked_by,
    `a live worker’s job is never taken from it: ${JSON.stringify(held)}`,
  );
  assert.equal(rig.llm.requests.length - asked, 1);
  const lockedMs = await lockHeldAfter(await sigkill(doomed), job);
  console.log(`triage job locked by the dead worker for ${(lockedMs / 1000).toFixed(2)} s`);
  // The grace (counted from the lock) is over: the survivor's next sweep unlocks it.
  assert.ok(lockedMs < REAP_EVERY_MS + 2_000, `${lockedMs} ms`);

  await settled(tenantId);
  assert.equal(rig.llm.requests.length - asked, 2, 'the job asked the model again');
  assert.deepEqual(await streamTypes(rig.db, tenantId), [
    'investigation.opened',
    'triage.started',
    'triage.completed',
    'enrichment.completed',
    'decision.made',
    'review.requested',
  ]);
  assert.equal((await reviewsOf(tenantId)).length, 1);
  assert.ok(
    survivor.logs().some((l) => l.msg === 'unlocked jobs of dead workers'),
    'the survivor says it unlocked the dead worker’s jobs',
  );
});

test('issue 13: a worker SIGKILLed while TheHive creates the approved case: the restarted worker finds that case; one case, one case.opened', async () => {
  const worker = await startWorker();
  const { tenantId, token } = await pipelineTenant(rig, { analyzers: [] });
  await ingest(rig, token, [attackAlert(2)]);
  await settled(tenantId);
  const [review] = await reviewsOf(tenantId);
  assert.ok(review);
  const reference = `svc-ref:${review.investigation_id}`;
  const creations = () =>
    rig.thehive.requests.filter(
      (r) =>
        r.method === 'POST' &&
        r.path === '/api/v1/case' &&
        ((r.body as { tags?: string[] }).tags ?? []).includes(reference),
    ).length;

  // TheHive creates the case at once and answers 5 s later: the worker dies before it hears.
  rig.thehive.setLatency(5_000);
  const approved = await rig.admin.mssp.approveReview({
    params: { tenant_id: tenantId, review_id: review.id },
    body: { note: 'confirmed brute force' },
  });
  assert.equal(approved.status, 200);
  await until('the case creation request at TheHive', async () =>
    creations() > 0 ? true : undefined,
  );
  const job = await queuedJob(tenantId, 'act');
  assert.ok(job?.locked_by, 'the act job is locked by its worker');
  // The only worker dies; its Deployment starts another.
  const killedAt = await sigkill(worker);
  rig.thehive.setLatency(0);
  assert.equal(rig.thehive.cases().filter((c) => c.tags.includes(reference)).length, 1);
  assert.equal(await count(tenantId, 'case.opened'), 0, 'the dead worker never recorded it');

  const [lockedMs] = await Promise.all([lockHeldAfter(killedAt, job), startWorker()]);
  await until('case.opened', async () =>
    (await count(tenantId, 'case.opened')) > 0 ? true : undefined,
  );
  const doneMs = Date.now() - killedAt;
  console.log(
    `act job locked by the dead worker for ${(lockedMs / 1000).toFixed(2)} s, done ${(doneMs / 1000).toFixed(2)} s after the kill (restart included)`,
  );
  // The queue marks the job done after the handler's transaction (with case.opened) commits:
  // a separate step, so it is waited for, not read once.
  await until('the act job completed', async () =>
    (await queuedJob(tenantId, 'act')) === undefined ? true : undefined,
  );
  assert.equal(creations(), 1, 'the retry found the case instead of creating another');
  const cases = rig.thehive.cases().filter((c) => c.tags.includes(reference));
  assert.equal(cases.length, 1);
  assert.equal(await count(tenantId, 'case.opened'), 1);
  const { rows } = await rig.db.pools.mssp.query<{ case_id: string }>(
    `SELECT payload->>'case_id' AS case_id FROM events WHERE tenant_id = $1 AND type = 'case.opened'`,
    [tenantId],
  );
  assert.equal(rows[0]?.case_id, cases[0]?._id, 'case.opened names the case TheHive holds');
});

test('issue 13: SIGTERM lets a running worker finish its job, then it exits 0', async () => {
  const worker = await startWorker();
  // An allowed analyzer keeps enrichment a job of its own (docs/pipeline.md "Inline steps").
  const { tenantId, token } = await pipelineTenant(rig);
  const asked = rig.llm.requests.length;
  rig.llm.fail([{ delayMs: 3_000 }]);
  await ingest(rig, token, [attackAlert(3)]);
  const job = await until('the triage job locked with its model call in flight', async () => {
    const queued = await queuedJob(tenantId, 'triage');
    return queued?.locked_by && rig.llm.requests.length > asked ? queued : undefined;
  });
  const pid = worker.child.pid;
  assert.ok(pid !== undefined);
  process.kill(pid, 'SIGTERM');
  assert.deepEqual(await worker.exited, { code: 0, signal: null });
  assert.ok(worker.logs().some((l) => l.msg === 'shutting down: finishing running jobs'));

  assert.equal(rig.llm.requests.length - asked, 1, 'one model call: the job was not cut short');
  assert.equal(await count(tenantId, 'triage.completed'), 1);
  const { rows } = await rig.db.pools.admin.query(
    'SELECT 1 FROM graphile_worker._private_jobs WHERE id = $1',
    [job.id],
  );
  assert.equal(rows.length, 0, 'the triage job completed, not released for another worker');
  // Its next step waits in the queue for the next worker, not lost and not taken.
  const enrich = await queuedJob(tenantId, 'enrich');
  assert.ok(enrich);
  assert.equal(enrich.locked_by, null);
});

/** One probe of a worker, as the kubelet makes it. */
async function probe(port: number, path: '/healthz' | '/readyz') {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

test('issue 31: svc worker answers its probes: ready while it takes jobs, alive until its liveness lock is lost; a taken port is refused at start', async () => {
  const worker = await startWorker();
  const port = Number(worker.logs().find((l) => l.msg === 'worker running')?.port);
  assert.ok(port > 0, 'the worker says where its probes are');
  assert.deepEqual(await probe(port, '/healthz'), { status: 200, body: { status: 'ok' } });
  assert.deepEqual(await probe(port, '/readyz'), {
    status: 200,
    body: { status: 'ready', database: 'reachable', running: true, stopping: false },
  });

  // A second worker on the first one's port stops at once and says why, before taking a job.
  const second = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'worker'], {
    cwd: ROOT,
    env: { ...workerEnv(), SVC_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  second.stdout?.on('data', (d) => {
    output += d;
  });
  second.stderr?.on('data', (d) => {
    output += d;
  });
  const code = await new Promise<number | null>((resolve) => second.once('exit', resolve));
  assert.notEqual(code, 0);
  assert.match(output, new RegExp(`SVC_PORT ${port} is taken`));
  assert.ok(!output.includes('worker running'), 'it took no job');

  // The connection holding the worker's liveness lock ends (as in a database restart): other
  // workers may now take its jobs, so it must not go on as if alive; the probe fails and the
  // kubelet restarts it.
  const superuser = new pg.Client(rig.db.superuser);
  await superuser.connect();
  try {
    const { rows } = await superuser.query(
      `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'svc-worker-liveness'`,
    );
    assert.ok(rows.length >= 1, 'the worker holds a liveness connection');
  } finally {
    await superuser.end();
  }
  const failed = await until('the liveness probe fails', async () => {
    const answer = await probe(port, '/healthz');
    return answer.status === 503 ? answer : undefined;
  });
  assert.deepEqual(failed.body, { status: 'failed', liveness_lock: 'lost' });
});
