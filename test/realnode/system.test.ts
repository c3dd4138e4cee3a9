// Issue 31: svc's system chart installed as an operator installs it (`helm install`) on a real
// node: the database on a real volume, svc's API, orchestrator and worker Ready through their own
// probes under the restricted Pod Security profile, as uid 10001 on a read-only root; /healthz
// and /readyz through the API's Service (the test cluster has no Ingress controller, so the
// chart's Ingress is only stored); and a failing liveness probe makes the kubelet restart the
// worker. One node and one install for the whole file.
// Issue 32: the install runs with backups on (a node volume for the svc-backups claim,
// retention 2); Jobs made from the backup CronJob run `svc db backup` for real and the newest
// archive restores into a fresh database.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { request } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  ApiException,
  BatchV1Api,
  CoreV1Api,
  NetworkingV1Api,
  type V1Job,
  type V1Pod,
} from '@kubernetes/client-node';
import pg from 'pg';
import { type ClusterDns, startClusterDns } from '../../testcluster/node/dns.ts';
import {
  processesWithArg,
  type RealNode,
  startRealNode,
} from '../../testcluster/node/real-node.ts';
import {
  createNodeVolume,
  type NodeVolume,
  realNodeStorageClass,
} from '../../testcluster/node/volumes.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';
import { externalDatabaseEnv, testServer } from '../support/database.ts';
import { installSystemOnRealNode, ready, type SystemInstall } from './fixtures/system-install.ts';

const run = promisify(execFile);
const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const networking = cluster.kubeConfig.makeApiClient(NetworkingV1Api);
const batch = cluster.kubeConfig.makeApiClient(BatchV1Api);
const started = performance.now();
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** How many backups the CronJob keeps (backup.retention). */
const KEEP = 2;

let node: RealNode;
let dns: ClusterDns;
let install: SystemInstall;
/** The svc-backups claim's volume: a directory of the node the test reads directly. */
let backups: NodeVolume;
/** The database a backup is restored into, on the shared test PostgreSQL. */
let restoredName: string | undefined;

before(async () => {
  node = await startRealNode(cluster, { timeoutMs: 180_000 });
  dns = await startClusterDns({ kubeconfigPath: cluster.kubeconfigPath, node });
  install = await installSystemOnRealNode({
    cluster,
    node,
    values: {
      backup: {
        enabled: true,
        retention: KEEP,
        storage: { size: '1Gi', storageClassName: realNodeStorageClass },
        resources: { requests: { cpu: '50m', memory: '128Mi' } },
      },
    },
  });
  // The chart's claim waits Pending until this PV, pre-bound to it, appears; nothing runs on it
  // before the test makes a Job. Owned by svc's user (the CronJob's runAsUser/runAsGroup 10001).
  backups = await createNodeVolume(cluster.kubeConfig, {
    node,
    namespace: install.namespace,
    claim: 'svc-backups',
    uid: 10001,
    gid: 10001,
    size: '1Gi',
  });
  console.log(
    `real node Ready after ${node.readyAfterMs} ms, CoreDNS after ${dns.readyAfterMs} ms, ` +
      `svc-system: images after ${install.imagesAfterMs} ms, helm install done after ` +
      `${install.installedAfterMs} ms, every Pod Ready after ${install.readyAfterMs} ms ` +
      JSON.stringify(install.componentsReadyAfterMs),
  );
});

after(async () => {
  const uninstallStarted = performance.now();
  try {
    await install?.uninstall();
  } finally {
    // The claim carries helm.sh/resource-policy: keep; the namespace's deletion takes it.
    await backups?.remove();
    if (restoredName)
      await superuserQuery('postgres', `DROP DATABASE IF EXISTS ${restoredName} WITH (FORCE)`);
  }
  console.log(`uninstall took ${Math.round(performance.now() - uninstallStarted)} ms`);
  await dns?.stop();
  await node?.stop();
  console.log(`system test file took ${Math.round(performance.now() - started)} ms`);
});

/** Waits for `check`; on failure the error carries the namespace's Pods, events and logs. */
async function waitInstall<T>(what: string, check: () => Promise<T | undefined>, ms = 120_000) {
  try {
    return await waitUntil(what, check, ms);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${await install.diagnostics()}`);
  }
}

async function podOf(component: string): Promise<V1Pod> {
  const pods = await core.listNamespacedPod({
    namespace: install.namespace,
    labelSelector: `app.kubernetes.io/component=${component}`,
  });
  const pod = pods.items.find((p) => !p.metadata?.deletionTimestamp);
  assert.ok(pod, `no ${component} Pod in ${install.namespace}`);
  return pod;
}

function ctr(...args: string[]) {
  return run('ctr', ['--address', node.containerdSocket, '--namespace', 'k8s.io', ...args], {
    maxBuffer: 16 * 2 ** 20,
  });
}

/** The container's id in containerd and its process's PID in the host's PID namespace. */
async function task(pod: V1Pod): Promise<{ id: string; pid: string }> {
  const id = (pod.status?.containerStatuses?.[0]?.containerID ?? '').replace('containerd://', '');
  const tasks = (await ctr('tasks', 'ls')).stdout;
  const pid = tasks
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .find((words) => words[0] === id)?.[1];
  assert.ok(pid, `task ${id} of ${pod.metadata?.name} in\n${tasks}`);
  return { id, pid };
}

let execs = 0;
/** Runs a command in a running container (as its own user); answers stdout, or rejects. */
async function execIn(containerId: string, command: string): Promise<string> {
  const { stdout } = await ctr(
    'tasks',
    'exec',
    '--exec-id',
    `t${process.pid}-${++execs}`,
    containerId,
    'sh',
    '-c',
    command,
  );
  return stdout;
}

/** GET over the host's loopback to the kubelet's forwarder, as the cluster admin. */
function kubeletGet(path: string): Promise<string> {
  const pki = join(dirname(cluster.kubeconfigPath), 'pki');
  return new Promise((resolve, reject) => {
    const req = request(
      `https://127.0.0.1:${node.kubeletPort}${path}`,
      {
        cert: readFileSync(join(pki, 'admin.crt')),
        key: readFileSync(join(pki, 'admin.key')),
        // The kubelet serves a self-signed certificate, as the API server accepts it.
        rejectUnauthorized: false,
        timeout: 5_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () =>
          res.statusCode === 200 ? resolve(body) : reject(new Error(`${res.statusCode} ${body}`)),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** The kubelet's count of one probe's results for a Pod of the install (0 when none yet). */
async function probeCount(pod: string, probe: string, result: string): Promise<number> {
  const metrics = await kubeletGet('/metrics/probes');
  const line = metrics
    .split('\n')
    .find(
      (l) =>
        l.startsWith('prober_probe_total{') &&
        l.includes(`namespace="${install.namespace}"`) &&
        l.includes(`pod="${pod}"`) &&
        l.includes(`probe_type="${probe}"`) &&
        l.includes(`result="${result}"`),
    );
  return line ? Number(line.split(' ').at(-1)) : 0;
}

async function getJson(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.text() };
}

test('issue 31: RealNode.forward relays a host loopback port to a Pod address in the node, and close() removes it', async () => {
  const api = await podOf('api');
  const forward = await node.forward(api.status?.podIP ?? '', 8080);
  const healthz = await getJson(`http://127.0.0.1:${forward.port}/healthz`);
  assert.equal(healthz.status, 200, healthz.body);
  const listener = `TCP-LISTEN:${forward.port},bind=127.0.0.1,fork,reuseaddr`;
  // The listener, and a child per connection still open (fetch keeps it alive).
  assert.ok((await processesWithArg(listener)).length >= 1, 'the host listener runs');
  await forward.close();
  assert.deepEqual(await processesWithArg(listener), []);
  const refused = await new Promise<string>((resolve) => {
    const socket = connect(forward.port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? String(error)));
  });
  assert.equal(refused, 'ECONNREFUSED');
});

test("issue 31: helm install of the system chart runs svc's database, API, orchestrator and worker on the real node, Ready through their own probes", async () => {
  const components = ['database', 'api', 'orchestrator', 'worker'];
  for (const component of components) {
    const pod = await podOf(component);
    assert.equal(pod.spec?.nodeName, node.name, component);
    assert.ok(ready(pod), `${component} Ready`);
    // The kubelet ran the chart's readiness probe and it succeeded (its own counters).
    const name = pod.metadata?.name ?? '';
    await waitInstall(`a successful readiness probe of ${name}`, async () =>
      (await probeCount(name, 'Readiness', 'successful')) >= 1 ? true : undefined,
    );
  }
  // The database's volume is the real node's local PV, bound to the StatefulSet's claim.
  const claim = await core.readNamespacedPersistentVolumeClaim({
    name: 'data-svc-postgres-0',
    namespace: install.namespace,
  });
  assert.equal(claim.status?.phase, 'Bound');
  const pv = await core.readPersistentVolume({ name: claim.spec?.volumeName ?? '' });
  assert.ok(pv.spec?.local?.path?.startsWith(node.dir), pv.spec?.local?.path);
  const pgVersion = await readFile(
    join(pv.spec?.local?.path ?? '', 'pgdata', 'PG_VERSION'),
    'utf8',
  );
  assert.equal(pgVersion.trim(), '18');
  // No Ingress controller runs in the test cluster: the chart's Ingress is stored, never served;
  // the tests reach the API through its Service instead.
  const ingresses = await networking.listNamespacedIngress({ namespace: install.namespace });
  assert.ok(ingresses.items.length > 0, 'the chart renders its Ingress');
});

test('issue 31: the install namespace enforces restricted Pod Security: a privileged Pod is refused', async () => {
  const ns = await core.readNamespace({ name: install.namespace });
  assert.equal(ns.metadata?.labels?.['pod-security.kubernetes.io/enforce'], 'restricted');
  await assert.rejects(
    core.createNamespacedPod({
      namespace: install.namespace,
      body: {
        metadata: { name: 'privileged' },
        spec: {
          containers: [
            {
              name: 'root',
              image: install.image,
              imagePullPolicy: 'Never',
              securityContext: { privileged: true },
            },
          ],
        },
      },
    }),
    (error: unknown) =>
      error instanceof ApiException &&
      error.code === 403 &&
      /violates PodSecurity "restricted:latest": privileged/.test(
        String((typeof error.body === 'string' ? JSON.parse(error.body) : error.body)?.message),
      ),
  );
});

test("issue 31: svc's API, orchestrator and worker run as uid 10001 without capabilities on a read-only root", async () => {
  for (const component of ['api', 'orchestrator', 'worker']) {
    const pod = await podOf(component);
    const { id, pid } = await task(pod);
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    assert.match(status, /^Uid:\s+10001\s+10001\s+10001\s+10001$/m, component);
    assert.match(status, /^Gid:\s+10001\s+10001\s+10001\s+10001$/m, component);
    assert.match(status, /^CapEff:\s+0+$/m, component);
    assert.match(status, /^NoNewPrivs:\s+1$/m, component);
    assert.match(status, /^Seccomp:\s+2$/m, component);
    // The root filesystem refuses a write; the data and tmp volumes take one.
    await assert.rejects(execIn(id, ': > /usr/local/bin/probe'), /Read-only file system/);
    for (const dir of ['/var/lib/svc', '/tmp']) {
      assert.equal(await execIn(id, `: > ${dir}/probe && echo ok`), 'ok\n', `${component} ${dir}`);
    }
  }
});

test("issue 31: /healthz and /readyz through svc-api's Service; the worker's and orchestrator's own probes answer", async () => {
  const healthz = await getJson(`${install.apiUrl}/healthz`);
  assert.equal(healthz.status, 200, healthz.body);
  assert.match(healthz.body, /"status":"ok"/);
  const readyz = await getJson(`${install.apiUrl}/readyz`);
  assert.equal(readyz.status, 200, readyz.body);
  for (const component of ['orchestrator', 'worker']) {
    const pod = await podOf(component);
    const forward = await node.forward(pod.status?.podIP ?? '', 8080);
    try {
      for (const path of ['/healthz', '/readyz']) {
        const answer = await getJson(`http://127.0.0.1:${forward.port}${path}`);
        assert.equal(answer.status, 200, `${component} ${path}: ${answer.body}`);
      }
    } finally {
      await forward.close();
    }
    const name = pod.metadata?.name ?? '';
    await waitInstall(`a successful liveness probe of ${name}`, async () =>
      (await probeCount(name, 'Liveness', 'successful')) >= 1 ? true : undefined,
    );
  }
});

test("issue 31: the worker's liveness lock lost (its backend terminated) fails /healthz, and the kubelet restarts the worker", async () => {
  const worker = await podOf('worker');
  const name = worker.metadata?.name ?? '';
  const restarts = worker.status?.containerStatuses?.[0]?.restartCount ?? 0;
  const forward = await node.forward(worker.status?.podIP ?? '', 8080);
  try {
    // From the database Pod, as the superuser: end the liveness lock's session.
    const database = await task(await podOf('database'));
    const terminated = await execIn(
      database.id,
      'PGPASSWORD="$(cat /var/run/secrets/svc/superuser/password)" psql -h 127.0.0.1 -U postgres -d postgres -Atc ' +
        `"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'svc-worker-liveness'"`,
    );
    assert.equal(terminated.trim(), '1', 'one liveness session');
    const failing = await waitInstall('the worker /healthz to fail', async () => {
      const answer = await getJson(`http://127.0.0.1:${forward.port}/healthz`).catch(
        () => undefined,
      );
      return answer && answer.status !== 200 ? answer : undefined;
    });
    assert.equal(failing.status, 503, failing.body);
    assert.match(failing.body, /liveness_lock/);
  } finally {
    await forward.close();
  }
  // periodSeconds 20 × failureThreshold 3, then the restart and the startup probe.
  const restarted = await waitInstall(
    'the kubelet to restart the worker container and the Pod Ready again',
    async () => {
      const pod = await core.readNamespacedPod({ name, namespace: install.namespace });
      const count = pod.status?.containerStatuses?.[0]?.restartCount ?? 0;
      return count > restarts && ready(pod) ? pod : undefined;
    },
    240_000,
  );
  assert.equal(
    restarted.metadata?.uid,
    worker.metadata?.uid,
    'the same Pod, its container restarted',
  );
  assert.ok((await probeCount(name, 'Liveness', 'failed')) >= 3);
  const events = await core.listNamespacedEvent({
    namespace: install.namespace,
    fieldSelector: `involvedObject.name=${name}`,
  });
  assert.ok(
    events.items.some(
      (e) => e.reason === 'Killing' && /failed liveness probe/.test(e.message ?? ''),
    ),
    events.items.map((e) => `${e.reason}: ${e.message}`).join('\n'),
  );
});

async function superuserQuery<R extends object>(
  database: string,
  sql: string,
  values: unknown[] = [],
): Promise<R[]> {
  const client = new pg.Client({ ...testServer().superuser, database });
  await client.connect();
  try {
    return (await client.query<R>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/** A sign-in with an unknown email through svc-api's Service: 401, audited as auth.login.failure. */
async function failedSignIn(email: string): Promise<void> {
  const res = await fetch(`${install.apiUrl}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: 'https://mssp.example.com' },
    body: JSON.stringify({ email, password: 'not-the-password-1' }),
    signal: AbortSignal.timeout(10_000),
  });
  assert.equal(res.status, 401, await res.text());
}

/** A Job from the CronJob's jobTemplate, owned by it, as `kubectl create job --from=cronjob/…` makes. */
async function jobFromCronJob(cronJob: string, name: string): Promise<V1Job> {
  const namespace = install.namespace;
  const cron = await batch.readNamespacedCronJob({ name: cronJob, namespace });
  const template = cron.spec?.jobTemplate;
  assert.ok(template?.spec && cron.metadata?.uid, `CronJob ${cronJob} has a jobTemplate`);
  return batch.createNamespacedJob({
    namespace,
    body: {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name,
        namespace,
        labels: template.metadata?.labels ?? {},
        annotations: {
          ...template.metadata?.annotations,
          'cronjob.kubernetes.io/instantiate': 'manual',
        },
        ownerReferences: [
          {
            apiVersion: 'batch/v1',
            kind: 'CronJob',
            name: cronJob,
            uid: cron.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: template.spec,
    },
  });
}

/** The Job's Pods' states and container logs (the kubelet's files on the node). */
async function jobLogs(job: string): Promise<string> {
  const pods = await core.listNamespacedPod({
    namespace: install.namespace,
    labelSelector: `batch.kubernetes.io/job-name=${job}`,
  });
  const root = join(node.dir, 'pod-logs');
  const files = await readdir(root, { recursive: true }).catch(() => [] as string[]);
  const lines: string[] = [];
  for (const pod of pods.items) {
    lines.push(
      `pod ${pod.metadata?.name}: ${pod.status?.phase} ${JSON.stringify(pod.status?.containerStatuses?.map((c) => c.state))}`,
    );
    const prefix = `${install.namespace}_${pod.metadata?.name}_`;
    for (const file of files.filter((f) => f.startsWith(prefix) && f.endsWith('.log'))) {
      lines.push(`--- ${file} ---`, await readFile(join(root, file), 'utf8').catch(() => ''));
    }
  }
  return lines.join('\n');
}

/** Waits for the Job's Complete condition; a failed Pod fails the test with its log. */
async function jobComplete(name: string): Promise<void> {
  const job = await waitInstall(
    `Job ${name} to complete`,
    async () => {
      const j = await batch.readNamespacedJob({ name, namespace: install.namespace });
      const done = j.status?.conditions?.some(
        (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
      );
      return done || (j.status?.failed ?? 0) > 0 ? j : undefined;
    },
    240_000,
  );
  const complete = job.status?.conditions?.some(
    (c) => c.type === 'Complete' && c.status === 'True',
  );
  if (!complete) {
    throw new Error(`Job ${name} failed: ${JSON.stringify(job.status)}\n${await jobLogs(name)}`);
  }
}

/** The archives `svc db backup --dir` named (svc-<UTC time>.dump), oldest first. */
async function archivesIn(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => /^svc-\d{8}T\d{6}Z\.dump$/.test(f)).sort();
}

/** `svc db restore` on the host into `database` of the shared test PostgreSQL. */
async function svcRestore(
  args: string[],
  database: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  // PostgreSQL 18's pg_restore, cached once per machine (.ci/install-pg-client).
  const installed = await run('bash', [join(ROOT, '.ci/install-pg-client')], { cwd: ROOT });
  const pgClientBin = /PG_CLIENT_BIN=(.*)/.exec(installed.stdout)?.[1];
  assert.ok(pgClientBin, `install-pg-client printed no PG_CLIENT_BIN: ${installed.stdout}`);
  const server = testServer();
  const bootstrap = new URL('postgresql://placeholder/postgres');
  bootstrap.hostname = server.superuser.host;
  bootstrap.port = String(server.superuser.port);
  bootstrap.username = encodeURIComponent(server.superuser.user);
  bootstrap.password = encodeURIComponent(server.superuser.password);
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-restore-data-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...externalDatabaseEnv({ ...server.target, database }),
    SVC_DATABASE_BOOTSTRAP_URL: bootstrap.toString(),
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'warn',
    PATH: `${pgClientBin}:${process.env.PATH ?? ''}`,
  };
  delete env.KUBECONFIG;
  delete env.SVC_INSTALL_ID;
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'db', 'restore', ...args],
      { cwd: ROOT, env, timeout: 180_000 },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof e.code === 'number' ? e.code : 1,
      stdout: e.stdout ?? '',
      stderr: e.stderr ?? '',
    };
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

test('issue 32: Jobs from the backup CronJob back up the in-chart database to its volume on the real node, keep the newest backup.retention, and the newest restores into a fresh database', async () => {
  const { installId, msspId } = install.values.install as { installId: string; msspId: string };
  const schemaLevel = (await readdir(join(ROOT, 'sql'))).filter((f) =>
    /^\d{4}_.*\.sql$/.test(f),
  ).length;
  const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
  };
  const written: string[] = [];
  const probes: string[] = [];
  for (let n = 1; n <= 3; n++) {
    // Written through the API before this backup: the newest archive must carry all of them.
    const probe = `backup-probe-${n}-${randomBytes(4).toString('hex')}@example.test`;
    await failedSignIn(probe);
    probes.push(probe);
    const before = await archivesIn(backups.path);
    const jobStarted = performance.now();
    await jobFromCronJob('svc-backup', `svc-backup-manual-${n}`);
    await jobComplete(`svc-backup-manual-${n}`);
    const after = await archivesIn(backups.path);
    const added = after.filter((a) => !before.includes(a));
    assert.equal(added.length, 1, `run ${n} wrote one archive: ${after.join(', ')}`);
    written.push(added[0] ?? '');
    // Retention: the run prunes all but the KEEP newest, the one it wrote among them.
    assert.deepEqual(after, written.slice(-KEEP), `after run ${n}`);
    console.log(
      `backup Job ${n} (${added[0]}) complete after ${Math.round(performance.now() - jobStarted)} ms`,
    );
  }
  const kept = written.slice(-KEEP);
  // Nothing else in the directory: no manifest of a pruned archive, no temp file left behind.
  assert.deepEqual(
    (await readdir(backups.path)).sort(),
    kept.flatMap((a) => [a, `${a}.manifest.json`]).sort(),
  );
  for (const archive of kept) {
    const file = join(backups.path, archive);
    const manifest = JSON.parse(await readFile(`${file}.manifest.json`, 'utf8'));
    assert.equal(manifest.format, 'svc-backup/1');
    assert.equal(manifest.installId, installId);
    assert.equal(manifest.schemaVersion, schemaLevel);
    assert.equal(manifest.svcVersion, version);
    assert.match(manifest.postgres.serverVersion, /^18\./);
    assert.equal(manifest.archive.file, archive);
    const bytes = await readFile(file);
    assert.equal(manifest.archive.sha256, createHash('sha256').update(bytes).digest('hex'));
    assert.equal(manifest.archive.bytes, bytes.length);
    // Written by svc's user (the Job ran as 10001 under restricted PSA), owner-only: the archive
    // holds password hashes and session digests.
    for (const f of [file, `${file}.manifest.json`]) {
      const info = await stat(f);
      assert.equal(info.uid, 10001, f);
      assert.equal(info.mode & 0o777, 0o600, f);
    }
  }

  restoredName = `r_${randomBytes(6).toString('hex')}`;
  const newest = join(backups.path, kept.at(-1) ?? '');
  const restoreStarted = performance.now();
  const restored = await svcRestore(['--from', newest, '--install-id', installId], restoredName);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, new RegExp(`restored .* into database ${restoredName}`));
  console.log(`restore took ${Math.round(performance.now() - restoreStarted)} ms`);
  const organization = await superuserQuery<{ install_id: string; mssp_id: string }>(
    restoredName,
    'SELECT install_id::text, mssp_id::text FROM organization',
  );
  assert.deepEqual(organization, [{ install_id: installId, mssp_id: msspId }]);
  const audited = await superuserQuery<{ email: string }>(
    restoredName,
    `SELECT details->>'email' AS email FROM audit_log
      WHERE action = 'auth.login.failure' AND details->>'email' = ANY($1) ORDER BY "timestamp"`,
    [probes],
  );
  assert.deepEqual(
    audited.map((r) => r.email),
    probes,
  );
});
