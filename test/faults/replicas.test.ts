import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import pg from 'pg';
import { PROVISIONING_STEPS } from '../../src/domains/provisioning/provisioning-types.ts';
import { wazuhAlert } from '../internal/ingest-support.ts';
import {
  adapterHeartbeat,
  createTenantVia,
  lifecycle,
  svcProcessEnv,
  tenantChartCopy,
  tenantConfig,
  uniqueSlug,
  useOrchestration,
  waitForState,
  waitForStep,
} from '../provisioning/support.ts';
import { type LlmStandIn, startLlmStandIn } from '../support/llm-stand-in.ts';
import { loopbackCertificate } from '../support/loopback-tls.ts';
import { type SvcProcess, startSvcProcess } from '../support/svc-process.ts';
import { testStorageClass } from '../support/volumes.ts';

// Issue 33 "Replicas under faults": three `svc serve` (API and projector), two
// `svc orchestrator` and two `svc worker` OS processes on one database, plus this process's
// API for the MSSP's requests; a short form (3 tenants, 90 alerts) that runs in `npm test`. One of each is SIGKILLed in the middle of its work: the
// orchestrator holding every tenant mid-provisioning, an API replica while alerts are posted to it,
// the worker whose triage job waits on the model. Nothing may be lost or done twice: every
// tenant reaches active with each step once, every alert is received once, every
// investigation is triaged and reviewed once. The time each replica set took to recover is
// printed. (bench/ holds no timing goal for it: the recovery times are bounded by the
// settings below, which the test prints beside them.)

const LLM_KEY = 'sk-replicas-0123456789abcdef';
const REAP_EVERY_MS = 1_000;
const REAP_GRACE_MS = 2_000;
const TENANTS = 3;
const BATCHES = 6;
const PER_BATCH = 5;
/** Alerts group into investigations by rule and agent: this many agents, so as many each. */
const AGENTS = 3;

const escalate = JSON.stringify({
  verdict: 'true_positive',
  severity: 'high',
  confidence: 0.9,
  rationale: 'Repeated failed SSH logins from one external address.',
  recommended_action: 'escalate',
});

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/**
 * The tenant package's adapter asks for a node with this label, which no node has until the
 * test gives it to the kwok node: until then the first orchestrator waits for readiness with
 * the tenants in its hands, so it can be killed mid-flow deterministically. Unique to the file.
 */
const GATE = `svc-test/replicas-${randomUUID().slice(0, 8)}`;
const KWOK_NODE = 'kwok-node-0';

let dir = '';
let llm: LlmStandIn | undefined;
const signingKey = generateKeyPairSync('ed25519')
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const children: SvcProcess[] = [];

// First, so it runs before the orchestration closes: no process outlives its database.
after(async () => {
  await Promise.all(children.map((c) => c.kill()));
  await gate(null).catch(() => undefined);
  await superuser?.end();
  await llm?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const o = useOrchestration(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'svc-replicas-'));
  const tls = await loopbackCertificate();
  await writeFile(path.join(dir, 'ca.pem'), tls.cert);
  llm = await startLlmStandIn({ tls, apiKey: LLM_KEY });
  llm.respond(() => escalate);
  const chart = await tenantChartCopy(path.join(dir, 'charts'), '0.1.0', {
    unschedulableAdapter: true,
  });
  const adapter = path.join(chart, 'templates', 'adapter.yaml');
  await writeFile(adapter, (await readFile(adapter, 'utf8')).replace('svc-test/nowhere', GATE));
  return {
    run: false,
    chartsDir: path.join(dir, 'charts'),
    env: {
      ...outboundEnv(),
      SVC_TOKEN_SIGNING_KEY: signingKey,
    },
  };
});

/** Opens (a value) or closes (null) the gate on the kwok node. */
async function gate(value: string | null): Promise<void> {
  await o.core.patchNode(
    { name: KWOK_NODE, body: { metadata: { labels: { [GATE]: value } } } },
    mergePatch,
  );
}

function outboundEnv(): Record<string, string> {
  return {
    SVC_OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8',
    SVC_OUTBOUND_CA_FILE: path.join(dir, 'ca.pem'),
    SVC_TRIAGE_DELAY: '0s',
  };
}

/** A real `svc <command>` process on this file's database, install namespace and cluster. */
async function startSvc(
  name: string,
  command: 'serve' | 'orchestrator' | 'worker',
  ready: (line: Record<string, unknown>) => boolean,
  env: Record<string, string> = {},
): Promise<SvcProcess> {
  const dataDir = await mkdtemp(path.join(dir, `${name}-`));
  const svc = await startSvcProcess({
    name,
    command,
    ready,
    env: svcProcessEnv(o, dataDir, {
      SVC_LOG_LEVEL: 'info',
      SVC_METRICS_PORT: '0',
      SVC_PORT: '0',
      SVC_TOKEN_SIGNING_KEY: signingKey,
      SVC_TENANT_STORAGE_CLASS: testStorageClass,
      SVC_ADAPTER_IMAGE: 'registry.test/svc-adapter:0.1.0',
      SVC_API_URL: o.deps.settings.apiUrl,
      SVC_ORCHESTRATOR_POLL: '200ms',
      SVC_TENANT_CHARTS_DIR: path.join(dir, 'charts'),
      SVC_WORKER_CONCURRENCY: '2',
      SVC_WORKER_REAP_EVERY: `${REAP_EVERY_MS}ms`,
      SVC_WORKER_REAP_GRACE: `${REAP_GRACE_MS}ms`,
      ...outboundEnv(),
      ...env,
    }),
  });
  children.push(svc);
  return svc;
}

async function until<T>(
  what: string,
  ms: number,
  probe: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** SIGKILL; resolves with the moment of the kill once the process is gone. */
async function sigkill(svc: SvcProcess): Promise<number> {
  svc.child.kill('SIGKILL');
  const at = Date.now();
  await svc.exited;
  assert.equal(svc.child.signalCode, 'SIGKILL', `${svc.name} died of the kill`);
  return at;
}

async function count(tenantId: string, type: string): Promise<number> {
  const { rows } = await o.db.pools.mssp.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM events WHERE tenant_id = $1 AND type = $2',
    [tenantId, type],
  );
  return rows[0]?.n ?? 0;
}

/** graphile-worker's jobs of the tenant still in the queue (read as its owner). */
async function queued(tenantId: string): Promise<number> {
  const { rows } = await o.db.pools.admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE payload->>'tenant_id' = $1`,
    [tenantId],
  );
  return rows[0]?.n ?? 0;
}

let superuser: pg.Pool | undefined;
/** A superuser's pool: only it sees other roles' client addresses in pg_stat_activity. */
function su(): pg.Pool {
  superuser ??= new pg.Pool({ ...o.db.superuser, database: o.db.name, max: 1 });
  return superuser;
}

/** Advisory locks (a tenant's, while an orchestrator works on it) held by these backends. */
async function tenantsLockedBy(pids: number[]): Promise<number> {
  const { rows } = await su().query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_locks
      WHERE locktype = 'advisory' AND granted AND pid = ANY($1::int[])`,
    [pids],
  );
  return rows[0]?.n ?? 0;
}

/** The database backends whose client is the OS process `pid` (its TCP connections). */
async function backendsOf(pid: number): Promise<number[]> {
  const { rows } = await su().query<{ pid: number; port: number }>(
    `SELECT pid, client_port AS port FROM pg_stat_activity
      WHERE client_port IS NOT NULL AND datname = current_database()`,
  );
  const { readFile, readdir, readlink } = await import('node:fs/promises');
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
    const link = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const m = /^socket:\[(\d+)\]$/.exec(link);
    if (m?.[1]) inodes.add(m[1]);
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(table, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      const local = cols[1];
      const inode = cols[9];
      if (local && inode && inodes.has(inode))
        ports.add(Number.parseInt(local.split(':')[1] ?? '', 16));
    }
  }
  return rows.filter((r) => ports.has(r.port)).map((r) => r.pid);
}

interface Poster {
  /** Alert ids sent per tenant (each batch until some replica answered 200). */
  sent: Map<string, Set<string>>;
  retried: number;
  firstRetryOkAt?: number;
}

/** Posts one batch to the replicas in turn, as an adapter behind a Service would: a failed try goes to the next. */
async function postBatch(
  poster: Poster,
  replicas: () => string[],
  token: string,
  tenantId: string,
  alerts: Record<string, unknown>[],
  start: number,
): Promise<void> {
  const body = JSON.stringify({
    alerts,
    checkpoint: { search_after: [Date.now(), `doc-${randomUUID()}`], index: 'wazuh-alerts-*' },
  });
  for (let attempt = 0; ; attempt++) {
    const urls = replicas();
    const url = urls[(start + attempt) % urls.length] ?? '';
    try {
      const res = await fetch(`${url}/api/internal/adapter/alerts`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body,
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`ingest ${res.status} ${text}`);
      if (attempt > 0) poster.firstRetryOkAt ??= Date.now();
      const ids = poster.sent.get(tenantId) ?? new Set<string>();
      for (const a of alerts) ids.add(String(a.id));
      poster.sent.set(tenantId, ids);
      return;
    } catch (error) {
      // Only a replica going away is retried; an answer other than 200 is a failure.
      if (String(error).includes('ingest ')) throw error;
      poster.retried++;
      if (attempt > 10) throw error;
    }
  }
}

test('issue 33 replicas under faults: one serve, orchestrator and worker SIGKILLed mid-work lose nothing and do nothing twice', {
  timeout: 600_000,
}, async () => {
  const listening = (l: Record<string, unknown>) => l.msg === 'svc listening';
  const apiEnv = { SVC_ORCHESTRATOR: 'off', SVC_WORKER: 'off' };
  const [s1, s2, s3, o1, w1] = await Promise.all([
    startSvc('serve-1', 'serve', listening, apiEnv),
    startSvc('serve-2', 'serve', listening, apiEnv),
    startSvc('serve-3', 'serve', listening, apiEnv),
    startSvc('orchestrator-1', 'orchestrator', (l) => l.msg === 'orchestrator running'),
    startSvc('worker-1', 'worker', (l) => l.msg === 'worker running'),
  ]);
  const urlOf = (s: SvcProcess) =>
    String(s.logs.find(listening)?.url ?? '').replace('0.0.0.0', '127.0.0.1');
  let replicas = [urlOf(s1), urlOf(s2), urlOf(s3)];

  // Orchestrators: the first takes the tenants; it is killed holding one mid-flow, with the
  // second already running.
  const slugs = Array.from({ length: TENANTS }, () => uniqueSlug('replica'));
  const ids: string[] = [];
  for (const slug of slugs) {
    ids.push(
      await createTenantVia(
        o,
        tenantConfig(slug, {
          llm: {
            provider: 'openai',
            base_url: llm?.openaiBaseUrl ?? '',
            model: 'gpt-test',
            api_key: LLM_KEY,
          },
        }),
      ),
    );
  }
  const o1Pid = o1.child.pid ?? 0;
  // Installed, waiting for an adapter no node may run: every tenant is in orchestrator-1's hands.
  await until('orchestrator-1 waiting for readiness with every tenant', 120_000, async () => {
    for (const id of ids) if (!(await lifecycle(o, id)).includes('step:package_installed')) return;
    const locks = await tenantsLockedBy(await backendsOf(o1Pid));
    return locks >= TENANTS ? true : undefined;
  }).catch(async (error: unknown) => {
    const states = await Promise.all(ids.map((id) => lifecycle(o, id)));
    throw new Error(
      `${String(error)}\nlifecycles: ${JSON.stringify(states)}\nbackends: ${JSON.stringify(await backendsOf(o1Pid))}\n${o1.logs.map((l) => JSON.stringify(l)).join('\n')}\n${o1.stderr()}`,
    );
  });
  const o2 = await startSvc(
    'orchestrator-2',
    'orchestrator',
    (l) => l.msg === 'orchestrator running',
  );
  const orchestratorKilledAt = await sigkill(o1);
  for (const id of ids)
    assert.ok(!(await lifecycle(o, id)).includes('step:package_ready'), 'killed mid-flow');
  await gate('true');
  for (const id of ids) await waitForStep(o, id, 'step:package_ready');
  const orchestratorRecovery = Date.now() - orchestratorKilledAt;
  for (const [i, id] of ids.entries()) {
    const steps = (await lifecycle(o, id)).filter((s) => s.startsWith('step:'));
    for (const step of PROVISIONING_STEPS)
      assert.equal(
        steps.filter((s) => s === `step:${step}`).length,
        1,
        `${slugs[i]}: ${step} once: ${steps.join(', ')}`,
      );
    assert.ok(!(await lifecycle(o, id)).some((s) => s.startsWith('error')), 'no failed step');
    await waitForState(o, id, 'provisioning');
    const beat = await adapterHeartbeat(o, slugs[i] ?? '');
    assert.equal(beat.status, 200, JSON.stringify(beat.body));
    await waitForState(o, id, 'active');
    const policy = await o.admin.mssp.putTriagePolicy({
      params: { tenant_id: id },
      body: { analyzers: [] },
    });
    assert.equal(policy.status, 200, JSON.stringify(policy.body));
  }
  assert.ok(o2.child.exitCode === null, 'orchestrator-2 still runs');

  // Workers and API replicas: the first model call hangs, so worker-1's first triage job is
  // in flight when it dies; API replica 1 dies with a batch posted to it.
  llm?.fail([{ delayMs: 120_000 }]);
  const asked = llm?.requests.length ?? 0;
  const tokens = await Promise.all(
    ids.map(async (tenantId) => (await o.api.tokens.mintAdapter({ tenantId })).token),
  );
  const poster: Poster = { sent: new Map(), retried: 0 };
  const batch = (tenant: number, b: number) =>
    Array.from({ length: PER_BATCH }, (_, k) =>
      wazuhAlert({
        id: `${Date.now()}.${tenant}.${b}.${k}.${randomUUID().slice(0, 8)}`,
        timestamp: new Date(Date.now() - 60_000 + b * PER_BATCH + k).toISOString(),
        agent: { id: `00${k % AGENTS}`, name: `web-0${k % AGENTS}` },
      }),
    );
  let serveKilledAt = 0;
  let workerKilledAt = 0;
  let w2: SvcProcess | undefined;
  for (let b = 0; b < BATCHES; b++) {
    if (b === 2) {
      // A batch is on its way to replica 1 when it dies; the poster's next try is replica 2.
      const inFlight = postBatch(
        poster,
        () => replicas,
        tokens[0] ?? '',
        ids[0] ?? '',
        batch(0, b),
        0,
      );
      serveKilledAt = await sigkill(s1);
      replicas = [urlOf(s2), urlOf(s3)];
      await inFlight;
      await Promise.all(
        ids
          .slice(1)
          .map((id, i) =>
            postBatch(poster, () => replicas, tokens[i + 1] ?? '', id, batch(i + 1, b), b),
          ),
      );
    } else {
      await Promise.all(
        ids.map((id, i) =>
          postBatch(poster, () => replicas, tokens[i] ?? '', id, batch(i, b), b + i),
        ),
      );
    }
    if (b === 1) {
      // worker-1 holds a triage job whose model call hangs: start worker-2, kill worker-1.
      await until('worker-1 waiting on the model', 60_000, () =>
        (llm?.requests.length ?? 0) > asked ? true : undefined,
      );
      w2 = await startSvc('worker-2', 'worker', (l) => l.msg === 'worker running');
      const { rows } = await o.db.pools.admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM graphile_worker._private_jobs
          WHERE locked_at IS NOT NULL AND payload->>'tenant_id' = ANY($1::text[])`,
        [ids],
      );
      assert.ok((rows[0]?.n ?? 0) > 0, 'worker-1 dies holding a job');
      workerKilledAt = await sigkill(w1);
    }
  }
  assert.ok(w2 && w2.child.exitCode === null, 'worker-2 still runs');
  const served = poster.firstRetryOkAt ? poster.firstRetryOkAt - serveKilledAt : 0;

  // Settled: every investigation reviewed, nothing left in the queue.
  await until('every investigation reviewed and the queue empty', 180_000, async () => {
    for (const id of ids) {
      const opened = await count(id, 'investigation.opened');
      if (opened === 0 || (await count(id, 'review.requested')) < opened) return undefined;
      if ((await queued(id)) > 0) return undefined;
    }
    return true;
  });
  const workerRecovery = Date.now() - workerKilledAt;
  for (const [i, id] of ids.entries()) {
    const sent = poster.sent.get(id)?.size ?? 0;
    assert.equal(sent, BATCHES * PER_BATCH, `${slugs[i]}: every batch was accepted`);
    assert.equal(await count(id, 'alert.received'), sent, `${slugs[i]}: every alert once`);
    const opened = await count(id, 'investigation.opened');
    assert.ok(opened >= AGENTS, `${slugs[i]}: an investigation per rule and agent at least`);
    for (const type of ['triage.completed', 'decision.made', 'review.requested'])
      assert.equal(await count(id, type), opened, `${slugs[i]}: ${type} once per investigation`);
  }
  assert.ok(poster.retried > 0, 'a batch was retried on the surviving API replica');
  console.log(
    [
      'replicas under faults (3 serve + this process, 2 orchestrators, 2 workers):',
      `  orchestrator killed holding every tenant: all package_ready ${(orchestratorRecovery / 1000).toFixed(1)} s later`,
      `  API replica killed mid-batch: retried ${poster.retried} time(s), accepted by the survivor ${(served / 1000).toFixed(2)} s later`,
      `  worker killed mid-job: queue empty ${(workerRecovery / 1000).toFixed(1)} s later (reap grace ${REAP_GRACE_MS} ms, every ${REAP_EVERY_MS} ms)`,
      `  ${TENANTS} tenants, ${TENANTS * BATCHES * PER_BATCH} alerts, ${TENANTS * AGENTS} investigations: none lost, none twice`,
    ].join('\n'),
  );
});
