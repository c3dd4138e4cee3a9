// Issue 31: svc's system chart installed as an operator installs it (`helm install`) on a real
// node: the database on a real volume, svc's API, orchestrator and worker Ready through their own
// probes under the restricted Pod Security profile, as uid 10001 on a read-only root; /healthz
// and /readyz through the API's Service (the test cluster has no Ingress controller, so the
// chart's Ingress is only stored); and a failing liveness probe makes the kubelet restart the
// worker. One node and one install for the whole file.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { ApiException, CoreV1Api, NetworkingV1Api, type V1Pod } from '@kubernetes/client-node';
import { type ClusterDns, startClusterDns } from '../../testcluster/node/dns.ts';
import {
  processesWithArg,
  type RealNode,
  startRealNode,
} from '../../testcluster/node/real-node.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';
import { installSystemOnRealNode, ready, type SystemInstall } from './fixtures/system-install.ts';

const run = promisify(execFile);
const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const networking = cluster.kubeConfig.makeApiClient(NetworkingV1Api);
const started = performance.now();

let node: RealNode;
let dns: ClusterDns;
let install: SystemInstall;

before(async () => {
  node = await startRealNode(cluster, { timeoutMs: 180_000 });
  dns = await startClusterDns({ kubeconfigPath: cluster.kubeconfigPath, node });
  install = await installSystemOnRealNode({ cluster, node });
  console.log(
    `real node Ready after ${node.readyAfterMs} ms, CoreDNS after ${dns.readyAfterMs} ms, ` +
      `svc-system: images after ${install.imagesAfterMs} ms, helm install done after ` +
      `${install.installedAfterMs} ms, every Pod Ready after ${install.readyAfterMs} ms ` +
      JSON.stringify(install.componentsReadyAfterMs),
  );
});

after(async () => {
  const uninstallStarted = performance.now();
  await install?.uninstall();
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
