// Issue 31: a real kubelet node (testcluster/node) beside the kwok nodes runs svc's own image
// under the restricted Pod Security profile; a Service in front of it answers another Pod
// through kube-proxy; stopping the node leaves nothing behind on the machine.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { access, readdir, readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { CoreV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { realNodeLabel } from '../../testcluster/node/configs.ts';
import {
  mountsUnder,
  processesWithArg,
  type RealNode,
  startRealNode,
  sweepStaleRealNodes,
} from '../../testcluster/node/real-node.ts';
import { builtImage } from '../packaging/artifacts.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';

const run = promisify(execFile);
const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const started = performance.now();
/** The last lines of every container log on the node (the kubelet writes them under its dir). */
async function containerLogs(): Promise<string> {
  const root = join(node.dir, 'pod-logs');
  const files = (await readdir(root, { recursive: true })).filter((f) => f.endsWith('.log'));
  const tails = await Promise.all(
    files.map(async (file) => {
      const text = await readFile(join(root, file), 'utf8').catch(() => '');
      return `--- ${file} ---\n${text.trimEnd().split('\n').slice(-15).join('\n')}`;
    }),
  );
  return tails.join('\n');
}

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let node: RealNode;
let svcImage: string;
let namespace: string;
let stopped = false;

before(async () => {
  const image = await builtImage();
  node = await startRealNode(cluster, { timeoutMs: 180_000 });
  console.log(`real node ${node.name} Ready after ${node.readyAfterMs} ms`);
  const { version } = JSON.parse(
    await readFile(new URL('../../package.json', import.meta.url), 'utf8'),
  ) as { version: string };
  const names = await node.importImage(image, 'localhost/svc');
  svcImage = `localhost/svc:${version}`;
  assert.ok(names.includes(svcImage), `${svcImage} not among ${names.join(', ')}`);
  namespace = await createTestNamespace(cluster, 'realnode');
  await core.patchNamespace(
    {
      name: namespace,
      body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } },
    },
    mergePatch,
  );
});

after(async () => {
  if (!stopped) await node?.stop();
  console.log(`real-node test file took ${Math.round(performance.now() - started)} ms`);
});

/** Waits for `check`; on failure adds the kubelet's and containerd's log tails to the error. */
async function waitOnNode<T>(what: string, check: () => Promise<T | undefined>, ms = 120_000) {
  try {
    return await waitUntil(what, check, ms);
  } catch (error) {
    const tails = await Promise.all(['kubelet', 'containerd'].map((c) => node.logTail(c, 25)));
    throw new Error(`${(error as Error).message}\n${tails.join('\n')}\n${await containerLogs()}`);
  }
}

/** Where this Pod may run: only the real node, whose taint it tolerates. */
function onRealNode() {
  return {
    nodeSelector: { 'kubernetes.io/hostname': node.name },
    tolerations: [
      { key: realNodeLabel, operator: 'Equal', value: 'true', effect: 'NoSchedule' as const },
    ],
  };
}

/** The charts' securityContext (charts/svc-system/templates/_helpers.tpl). */
const podSecurityContext = {
  runAsNonRoot: true,
  runAsUser: 10001,
  runAsGroup: 10001,
  fsGroup: 10001,
  seccompProfile: { type: 'RuntimeDefault' },
};
const containerSecurityContext = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
};

function readyPod(pod: V1Pod): V1Pod | undefined {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
    ? pod
    : undefined;
}

function ctr(...args: string[]) {
  return run('ctr', ['--address', node.containerdSocket, '--namespace', 'k8s.io', ...args]);
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

test('issue 31: the real node registers Ready, labelled and tainted, beside the kwok node', async () => {
  const real = await core.readNode({ name: node.name });
  assert.equal(real.metadata?.labels?.[realNodeLabel], 'true');
  assert.deepEqual(
    real.spec?.taints?.map((t) => `${t.key}=${t.value}:${t.effect}`),
    [`${realNodeLabel}=true:NoSchedule`],
  );
  assert.equal(real.status?.nodeInfo?.kubeletVersion, 'v1.35.8');
  assert.match(real.status?.nodeInfo?.containerRuntimeVersion ?? '', /^containerd:\/\/1\.6\./);
  // The kubelet answers on the host's loopback only through the node's forwarder.
  assert.equal(await kubeletGet('/healthz'), 'ok');
  const kwok = await core.listNode({ labelSelector: 'type=kwok' });
  assert.ok(kwok.items.length > 0, 'the kwok nodes stay');
});

test("issue 31: svc's image runs as uid 10001 on a read-only root under restricted Pod Security, Ready by its own probe, behind a Service other Pods reach", async () => {
  const labels = { app: 'svc-realnode' };
  const podStarted = performance.now();
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: 'svc', labels },
      spec: {
        ...onRealNode(),
        securityContext: podSecurityContext,
        automountServiceAccountToken: false,
        containers: [
          {
            name: 'svc',
            image: svcImage,
            imagePullPolicy: 'Never',
            command: ['svc', 'serve'],
            // The embedded PostgreSQL keeps its data in the data volume (the image's
            // SVC_DATA_DIR, an emptyDir owned by root): no database needed.
            env: [
              { name: 'SVC_PORT', value: '8080' },
              { name: 'SVC_LOG_LEVEL', value: 'info' },
            ],
            ports: [{ name: 'http', containerPort: 8080 }],
            readinessProbe: {
              httpGet: { path: '/healthz', port: 'http' },
              periodSeconds: 2,
              failureThreshold: 60,
            },
            // As the system chart: liveness waits for a first answer (the embedded database's
            // set-up and migrations took over 60 s on a busy node), up to 5 minutes.
            startupProbe: {
              httpGet: { path: '/healthz', port: 'http' },
              periodSeconds: 5,
              failureThreshold: 60,
            },
            livenessProbe: {
              httpGet: { path: '/healthz', port: 'http' },
              periodSeconds: 10,
            },
            securityContext: containerSecurityContext,
            volumeMounts: [
              { name: 'data', mountPath: '/var/lib/svc' },
              { name: 'tmp', mountPath: '/tmp' },
            ],
          },
        ],
        volumes: [
          { name: 'data', emptyDir: {} },
          { name: 'tmp', emptyDir: {} },
        ],
      },
    },
  });
  const pod = await waitOnNode('the svc Pod Ready through its readiness probe', async () =>
    readyPod(await core.readNamespacedPod({ name: 'svc', namespace })),
  );
  console.log(`svc Pod Ready after ${Math.round(performance.now() - podStarted)} ms`);
  assert.equal(pod.spec?.nodeName, node.name);

  // The kubelet's own counters: the readiness probe really was served, and succeeded.
  const probes = await kubeletGet('/metrics/probes');
  const successful = probes
    .split('\n')
    .find(
      (line) =>
        line.startsWith('prober_probe_total{') &&
        line.includes(`namespace="${namespace}"`) &&
        line.includes('probe_type="Readiness"') &&
        line.includes('result="successful"'),
    );
  assert.ok(successful && Number(successful.split(' ').at(-1)) >= 1, probes.slice(0, 2000));

  // The container's process, found through containerd: uid 10001, no capabilities.
  const containerId = (pod.status?.containerStatuses?.[0]?.containerID ?? '').replace(
    'containerd://',
    '',
  );
  const tasks = (await ctr('tasks', 'ls')).stdout;
  const pid = tasks
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .find((words) => words[0] === containerId)?.[1];
  assert.ok(pid, `task ${containerId} in\n${tasks}`);
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  assert.match(status, /^Uid:\s+10001\s+10001\s+10001\s+10001$/m);
  assert.match(status, /^Gid:\s+10001\s+10001\s+10001\s+10001$/m);
  assert.match(status, /^CapEff:\s+0+$/m);
  assert.match(status, /^Seccomp:\s+2$/m);
  // The root filesystem refuses a write; the data volume takes one.
  const write = (path: string) =>
    ctr('tasks', 'exec', '--exec-id', `w${Date.now()}`, containerId, 'sh', '-c', `: > ${path}`)
      .then(() => 'written')
      .catch((error: { stderr?: string }) => error.stderr ?? String(error));
  assert.match(await write('/usr/local/bin/probe'), /Read-only file system/);
  assert.equal(await write('/var/lib/svc/probe'), 'written');

  // The API server reaches the kubelet (through the host forwarder): the Pod's log.
  const log = await core.readNamespacedPodLog({ name: 'svc', namespace, container: 'svc' });
  assert.ok(log.length > 0, 'the Pod log is empty');

  // A Service in front of it, reached from a second Pod through kube-proxy's rules.
  const service = await core.createNamespacedService({
    namespace,
    body: {
      metadata: { name: 'svc-http' },
      spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    },
  });
  const clusterIp = service.spec?.clusterIP ?? '';
  assert.match(clusterIp, /^10\.96\./);
  await waitOnNode('kube-proxy to program the Service', async () => {
    const { stdout } = await node.inNode('iptables', ['-t', 'nat', '-S', 'KUBE-SERVICES']);
    return stdout.includes(clusterIp) ? true : undefined;
  });
  // svc's single binary is Node: a preloaded script makes it a one-shot HTTP client.
  await core.createNamespacedConfigMap({
    namespace,
    body: {
      metadata: { name: 'client' },
      data: {
        'client.cjs': `
const https = require('node:https');
const fs = require('node:fs');
const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
// The API server through the kubernetes Service, verified against the cluster CA as any
// in-cluster client does.
function apiServer() {
  return new Promise((resolve, reject) => {
    const req = https.get(
      {
        host: '10.96.0.1',
        port: 443,
        path: '/livez',
        ca: fs.readFileSync(sa + '/ca.crt'),
        headers: { authorization: 'Bearer ' + fs.readFileSync(sa + '/token', 'utf8') },
      },
      (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve(res.statusCode + ' ' + body));
      },
    );
    req.on('error', reject);
  });
}
(async () => {
  for (let i = 0; i < 60; i++) {
    try {
      const res = await fetch('http://${clusterIp}/healthz');
      console.log('STATUS ' + res.status + ' ' + (await res.text()));
      console.log('APISERVER ' + (await apiServer()));
      process.exit(0);
    } catch (error) {
      console.log('retry ' + (error.cause?.code ?? error.message));
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  process.exit(1);
})();
`,
      },
    },
  });
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: 'client' },
      spec: {
        ...onRealNode(),
        securityContext: podSecurityContext,
        automountServiceAccountToken: true,
        restartPolicy: 'Never',
        containers: [
          {
            name: 'client',
            image: svcImage,
            imagePullPolicy: 'Never',
            command: ['svc', '--version'],
            env: [{ name: 'NODE_OPTIONS', value: '--require /client/client.cjs' }],
            securityContext: containerSecurityContext,
            volumeMounts: [{ name: 'client', mountPath: '/client', readOnly: true }],
          },
        ],
        volumes: [{ name: 'client', configMap: { name: 'client' } }],
      },
    },
  });
  const phase = await waitOnNode('the client Pod to finish', async () => {
    const client = await core.readNamespacedPod({ name: 'client', namespace });
    const p = client.status?.phase;
    return p === 'Succeeded' || p === 'Failed' ? p : undefined;
  });
  const clientLog = await core.readNamespacedPodLog({ name: 'client', namespace });
  assert.equal(phase, 'Succeeded', clientLog);
  assert.match(clientLog, /^STATUS 200 \{"status":"ok"/m);
  assert.match(clientLog, /^APISERVER 200 ok$/m);
});

test('issue 31: stopping the real node leaves no process, mount, namespace, cgroup or Node behind', async () => {
  const { dir, netnsPath, name, containerdSocket, pids } = node;
  const cgroup = `/sys/fs/cgroup/memory/svc-realnode-${name.replace(/^real-/, '')}`;
  await access(cgroup);
  // The machine's own values of the settings the kubelet changes, recorded by the first node.
  const originals = JSON.parse(await readFile('/run/svc-realnode/sysctls.json', 'utf8')) as Record<
    string,
    string
  >;
  assert.equal(await kernelSetting('kernel/panic'), '10', 'the kubelet set kernel.panic');
  stopped = true;
  await node.stop();
  assert.deepEqual(await mountsUnder(dir), []);
  await assert.rejects(access(dir));
  await assert.rejects(access(netnsPath));
  await assert.rejects(access(cgroup));
  assert.deepEqual(await processesWithArg(containerdSocket), []);
  assert.deepEqual(await processesWithArg(dir), []);
  for (const pid of pids) assert.equal(await alive(pid), false, `process ${pid} still runs`);
  const { stdout } = await run('ip', ['netns', 'list']);
  assert.doesNotMatch(stdout, new RegExp(node.netnsName));
  await assert.rejects(core.readNode({ name }), /404|not found/i);
  // Restored by the last node out: while another real node (another test file) runs, its
  // kubelet's values stay.
  const others = await readdir('/run/svc-realnode/nodes').catch(() => []);
  if (others.length === 0) {
    for (const [key, value] of Object.entries(originals)) {
      assert.equal(await kernelSetting(key), value, key);
    }
  } else {
    assert.equal(await kernelSetting('kernel/panic'), '10', 'left for the node still running');
  }
});

async function kernelSetting(key: string): Promise<string> {
  return (await readFile(`/proc/sys/${key}`, 'utf8')).trim();
}

/** True while the PID is a live (non-zombie) process. */
async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
}

test('issue 31: a real node whose test process was killed is cleaned up by the next start', async () => {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      new URL('./fixtures/hold-node.ts', import.meta.url).pathname,
      cluster.kubeconfigPath,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  const held = await waitUntil(
    'the held node to be Ready',
    async () => {
      if (child.exitCode !== null) throw new Error(`hold-node exited ${child.exitCode}`);
      const line = output.split('\n').find((l) => l.startsWith('{'));
      return line
        ? (JSON.parse(line) as {
            name: string;
            dir: string;
            netnsPath: string;
            pids: number[];
          })
        : undefined;
    },
    120_000,
  );
  child.kill('SIGKILL');
  await once(child, 'exit');
  // Its daemons run in process groups of their own: killing the owner leaves them running.
  assert.ok((await processesWithArg(held.dir)).length > 0, 'the node outlives its owner');
  const swept = await sweepStaleRealNodes();
  assert.ok(
    swept.some((name) => held.netnsPath.endsWith(name)),
    `swept ${swept.join(', ')}`,
  );
  assert.deepEqual(await processesWithArg(held.dir), []);
  assert.deepEqual(await mountsUnder(held.dir), []);
  await assert.rejects(access(held.dir));
  await assert.rejects(access(held.netnsPath));
  for (const pid of held.pids) assert.equal(await alive(pid), false, `process ${pid} still runs`);
  // The Node object outlives its kubelet (a killed run's cluster usually goes with it).
  await core.deleteNode({ name: held.name });
});
