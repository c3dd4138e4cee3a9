import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { freePort } from '../../src/db/embedded.ts';
import { openStream } from '../events/support.ts';
import {
  attackAlert,
  ingest,
  type PipelineRig,
  pipelineTenant,
  startPipelineRig,
  streamTypes,
  until,
} from '../pipeline/support.ts';
import { seedUser } from '../support/api.ts';
import { getTestCluster } from '../support/cluster.ts';
import { externalDatabaseEnv } from '../support/database.ts';
import { type Pgbouncer, startPgbouncer } from '../support/pgbouncer.ts';
import { TEST_PASSWORD } from '../support/sign-in.ts';
import { type SvcProcess, startSvcProcess } from '../support/svc-process.ts';

/**
 * Real `svc serve` and `svc worker` processes whose transactional pools go through a real
 * PgBouncer in transaction-pooling mode (SVC_DATABASE_POOLER_HOST/PORT), the rest direct
 * (docs/operations.md "Connection pooling"): sign-in, tenant creation, a tenant-scoped write
 * and read, the event stream fed by another process's commits, and the pipeline's jobs.
 */
/** An external database means a real install: state-changing requests need its hostname. */
const MSSP_HOST = 'mssp.example.test';
const ORIGIN = `https://${MSSP_HOST}`;
let rig: PipelineRig;
let bouncer: Pgbouncer;
let dataDir: string;
const children: SvcProcess[] = [];

before(async () => {
  rig = await startPipelineRig({ workers: false });
  rig.llm.respond(() =>
    JSON.stringify({
      verdict: 'true_positive',
      severity: 'high',
      confidence: 0.93,
      rationale:
        'Repeated failed SSH logins from one external address against a non-existent user.',
      recommended_action: 'escalate',
    }),
  );
  bouncer = await startPgbouncer(rig.db.target, {
    poolSize: 3,
    admin: rig.db.target.credentials.admin,
  });
  dataDir = await mkdtemp(path.join(tmpdir(), 'svc-pooled-'));
});
after(async () => {
  await Promise.all(children.map((svc) => svc.kill()));
  await bouncer?.stop();
  await rig?.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** What the system chart sets for a pooled install, pointed at this file's rig. */
function pooledEnv(port: number): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'info',
    SVC_PORT: String(port),
    ...externalDatabaseEnv(rig.db.target),
    SVC_DATABASE_POOLER_HOST: bouncer.host,
    SVC_DATABASE_POOLER_PORT: String(bouncer.port),
    SVC_TOKEN_SIGNING_KEY: generateKeyPairSync('ed25519')
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString(),
    SVC_INSTALL_NAMESPACE: rig.namespace,
    KUBECONFIG: getTestCluster().kubeconfigPath,
    SVC_OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8',
    SVC_OUTBOUND_CA_FILE: rig.caFile,
    SVC_TRIAGE_DELAY: '0s',
    SVC_MSSP_HOSTNAME: MSSP_HOST,
  };
}

/** Starts `svc <role>` and waits for the log line that says it runs. */
async function start(role: 'serve' | 'worker', env: Record<string, string>, ready: string) {
  const svc = await startSvcProcess({ command: role, env, ready: (line) => line.msg === ready });
  children.push(svc);
  return svc.child;
}

test('svc serve and svc worker through PgBouncer: sign-in, tenant write and read, event stream, pipeline jobs', async () => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  await start(
    'serve',
    { ...pooledEnv(port), SVC_WORKER: 'off', SVC_ORCHESTRATOR: 'off' },
    'svc listening',
  );
  await start('worker', { ...pooledEnv(0), SVC_WORKER_CONCURRENCY: '2' }, 'worker running');

  // Sign-in through the pooled serve (session check, device cookie, audit in one unit).
  const email = 'pooled-admin@example.test';
  await seedUser(rig.db, rig.api.hasher, { email, role: 'mssp_admin', password: TEST_PASSWORD });
  const login = await fetch(`${url}/api/auth/login`, {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: TEST_PASSWORD }),
  });
  assert.equal(login.status, 200);
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const admin: SvcClient = createSvcClient({ baseUrl: url, headers: { origin: ORIGIN, cookie } });

  // Tenant creation and its tenant-scoped triage policy: written through the pooled serve.
  const { tenantId, token } = await pipelineTenant({ ...rig, admin }, { analyzers: [] });
  const listed = await admin.mssp.listTenants({ query: {} });
  assert.equal(listed.status, 200);
  assert.ok(listed.status === 200 && listed.body.items.some((t) => t.id === tenantId));

  // An alert through the in-process API: the pooled worker runs triage to review, and the
  // pooled serve's stream (LISTEN direct, reads pooled) delivers the review as it commits.
  const stream = await openStream(`${url}/api/mssp/tenants/${tenantId}/events`, { cookie });
  const streamed: string[] = [];
  try {
    await ingest(rig, token, [attackAlert(1)]);
    while (!streamed.includes('review.requested')) {
      const block = await stream.next(60_000);
      assert.ok(block, `the stream ended after ${streamed.join(', ')}`);
      if (block.event) streamed.push(block.event);
    }
  } finally {
    stream.close();
  }
  await until('the pipeline settled', async () =>
    (await streamTypes(rig.db, tenantId)).includes('review.requested') ? true : undefined,
  );
  assert.deepEqual(await streamTypes(rig.db, tenantId), [
    'investigation.opened',
    'triage.started',
    'triage.completed',
    'enrichment.completed',
    'decision.made',
    'review.requested',
  ]);
  const reviews = await admin.mssp.tenantReviews({ params: { tenant_id: tenantId } });
  assert.equal(reviews.status, 200);
  assert.equal(reviews.status === 200 && reviews.body.items.length, 1);
  // The pooled parts went through the pooler, the session-level parts did not.
  const clients = await bouncer.show('CLIENTS');
  const names = new Set(clients.map((c) => `${c.user}/${c.application_name}`));
  const { app, mssp } = rig.db.target.credentials;
  assert.ok(names.has(`${app.user}/svc-app`), [...names].join(' '));
  assert.ok(names.has(`${mssp.user}/svc-mssp`), [...names].join(' '));
  for (const direct of ['svc-app-events', 'svc-worker', 'svc-worker-liveness', 'svc-admin']) {
    assert.ok(
      ![...names].some((n) => n.endsWith(`/${direct}`)),
      `${direct} went through the pooler`,
    );
  }
  const stats = await bouncer.show('STATS');
  const transactions = Number(stats.find((s) => s.database === rig.db.name)?.total_xact_count);
  assert.ok(transactions > 20, `${transactions} transactions through the pooler`);
  const servers = await bouncer.show('SERVERS');
  assert.ok(
    servers.filter((s) => s.user === app.user).length <= 3,
    'svc_app shares at most default_pool_size server connections',
  );
});
