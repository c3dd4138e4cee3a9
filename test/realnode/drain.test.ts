// Issue 31: "a node drain reschedules svc's Pods". Two real nodes joined by a veth pair
// (testcluster/node/link.ts), kube-router on each; svc's image as a Deployment with a
// PodDisruptionBudget behind a Service. A client Pod on node B reaches it on node A across the
// link, as itself for A's policy agent; draining A (cordon, Eviction API, DaemonSet Pods left)
// moves svc's Pods to B one at a time as the budget allows, and the Service answers from them.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import {
  AppsV1Api,
  CoreV1Api,
  NetworkingV1Api,
  PatchStrategy,
  PolicyV1Api,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { pauseImage, realNodeLabel } from '../../testcluster/node/configs.ts';
import { cordonNode, drainNode } from '../../testcluster/node/drain.ts';
import { connectRealNodes, linkTrace, type NodeLink } from '../../testcluster/node/link.ts';
import { type PolicyEnforcer, startPolicyEnforcer } from '../../testcluster/node/netpol.ts';
import { podNetns } from '../../testcluster/node/pod-netns.ts';
import { type RealNode, startRealNode } from '../../testcluster/node/real-node.ts';
import { builtImage } from '../packaging/artifacts.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';

const run = promisify(execFile);
const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
const policy = cluster.kubeConfig.makeApiClient(PolicyV1Api);
const networking = cluster.kubeConfig.makeApiClient(NetworkingV1Api);
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const started = performance.now();

const app = { app: 'svc-drain' };
const svcPort = 8080;

let nodeA: RealNode;
let nodeB: RealNode;
const enforcers: PolicyEnforcer[] = [];
let link: NodeLink | undefined;
let svcImage: string;
let namespace: string;
let clusterIp: string;
let stoppedA = false;

before(async () => {
  const image = await builtImage();
  console.log(`svc's image at hand after ${Math.round(performance.now() - started)} ms`);
  // One after the other: each node picks a Pod /24 no registered node uses.
  nodeA = await startRealNode(cluster, { timeoutMs: 180_000 });
  nodeB = await startRealNode(cluster, { timeoutMs: 180_000 });
  const { version } = JSON.parse(
    await readFile(new URL('../../package.json', import.meta.url), 'utf8'),
  ) as { version: string };
  svcImage = `localhost/svc:${version}`;
  const imported = performance.now();
  await Promise.all(
    [nodeA, nodeB].map(async (node) => {
      const names = await node.importImage(image, 'localhost/svc');
      assert.ok(names.includes(svcImage), `${svcImage} not among ${names.join(', ')}`);
    }),
  );
  const importMs = Math.round(performance.now() - imported);
  for (const node of [nodeA, nodeB]) {
    enforcers.push(
      await startPolicyEnforcer({
        kubeconfigPath: cluster.kubeconfigPath,
        netnsPath: node.netnsPath,
        nodeName: node.name,
        dir: node.dir,
      }),
    );
  }
  const linked = performance.now();
  link = await connectRealNodes(nodeA, nodeB);
  console.log(
    `nodes Ready after ${nodeA.readyAfterMs} / ${nodeB.readyAfterMs} ms (${nodeA.podSubnet}, ` +
      `${nodeB.podSubnet}), svc image imported into both in ${importMs} ms, linked in ` +
      `${Math.round(performance.now() - linked)} ms`,
  );
  namespace = await createTestNamespace(cluster, 'drain');
  await core.patchNamespace(
    {
      name: namespace,
      body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } },
    },
    mergePatch,
  );
});

/** Removes the workloads whose controllers would recreate Pods while a node stops. */
async function deleteControllers(): Promise<void> {
  await apps.deleteNamespacedDaemonSet({ name: 'agent', namespace }).catch(() => undefined);
  await apps.deleteNamespacedDeployment({ name: 'svc', namespace }).catch(() => undefined);
}

after(async () => {
  if (namespace) await deleteControllers();
  for (const enforcer of enforcers) await enforcer.stop().catch(() => undefined);
  await link?.disconnect().catch(() => undefined);
  if (!stoppedA) await nodeA?.stop();
  await nodeB?.stop();
  if (namespace) await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  console.log(`drain test file took ${Math.round(performance.now() - started)} ms`);
});

/** The last lines of every container log on both nodes (the kubelets write them there). */
async function containerLogs(): Promise<string> {
  const tails: string[] = [];
  for (const node of [nodeA, nodeB].filter(Boolean)) {
    const root = join(node.dir, 'pod-logs');
    const files = (await readdir(root, { recursive: true }).catch(() => [])).filter((f) =>
      f.endsWith('.log'),
    );
    for (const file of files) {
      const text = await readFile(join(root, file), 'utf8').catch(() => '');
      tails.push(
        `--- ${node.name} ${file} ---\n${text.trimEnd().split('\n').slice(-15).join('\n')}`,
      );
    }
  }
  return tails.join('\n');
}

/** Waits for `check`; on failure adds both kubelets' and kube-routers' logs and the Pods' logs. */
async function waitOnNodes<T>(what: string, check: () => Promise<T | undefined>, ms = 120_000) {
  try {
    return await waitUntil(what, check, ms);
  } catch (error) {
    const tails = await Promise.all(
      [nodeA, nodeB].flatMap((n) => ['kubelet', 'kube-router'].map((c) => n.logTail(c, 15))),
    );
    throw new Error(`${(error as Error).message}\n${tails.join('\n')}\n${await containerLogs()}`);
  }
}

const tolerateRealNodes = [
  { key: realNodeLabel, operator: 'Exists', effect: 'NoSchedule' as const },
];
/** The charts' restricted-profile contexts (charts/svc-system/templates/_helpers.tpl). */
const podSecurityContext = (uid: number) => ({
  runAsNonRoot: true,
  runAsUser: uid,
  runAsGroup: uid,
  fsGroup: uid,
  seccompProfile: { type: 'RuntimeDefault' },
});
const containerSecurityContext = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
};

function isReady(pod: V1Pod): boolean {
  return Boolean(
    pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') &&
      pod.status?.podIP &&
      !pod.metadata?.deletionTimestamp,
  );
}

async function svcPods(): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace, labelSelector: 'app=svc-drain' })).items;
}

/** A Pod on `node` that only holds a network namespace (the pause image), to send from. */
async function startProbePod(node: RealNode, name: string, labels: Record<string, string>) {
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, labels },
      spec: {
        nodeSelector: { 'kubernetes.io/hostname': node.name },
        tolerations: tolerateRealNodes,
        automountServiceAccountToken: false,
        securityContext: podSecurityContext(65535),
        containers: [
          {
            name: 'pause',
            image: pauseImage,
            imagePullPolicy: 'Never',
            securityContext: containerSecurityContext,
          },
        ],
      },
    },
  });
  return waitOnNodes(`Pod ${name} running on ${node.name}`, async () => {
    const pod = await core.readNamespacedPod({ name, namespace });
    return isReady(pod) ? pod : undefined;
  });
}

/**
 * GET `url` from inside a Pod's own network namespace (so the packets carry the Pod's address
 * through its node's bridge, kube-proxy, kube-router and the link): "200 <body>", or why not.
 */
async function getFrom(netns: string, url: string): Promise<string> {
  const script = `
fetch(process.argv[1], { signal: AbortSignal.timeout(2500) })
  .then(async (res) => console.log(res.status + ' ' + (await res.text())))
  .catch((error) => console.log(error.cause?.code ?? error.name));`;
  const { stdout } = await run('nsenter', [`--net=${netns}`, process.execPath, '-e', script, url]);
  return stdout.trim();
}

/** Waits until a GET from `netns` does (or does not) get svc's health answer. */
async function reaches(netns: string, url: string, answers: boolean, what: string) {
  const since = performance.now();
  const got = await waitOnNodes(`${what}: ${url} ${answers ? 'answers' : 'refused'}`, async () => {
    const got = await getFrom(netns, url);
    return got.startsWith('200 {"status":"ok"') === answers ? got : undefined;
  });
  console.log(`${what}: ${got.slice(0, 40)} after ${Math.round(performance.now() - since)} ms`);
  return got;
}

let client: V1Pod;
let stranger: V1Pod;

test("two linked real nodes: a Pod on B reaches svc's Pods on A by Pod IP and through their Service, and A's kube-router judges it by its own address", async () => {
  // Both replicas on A: B refuses new Pods while they are placed.
  await cordonNode(cluster.kubeConfig, nodeB.name);
  const placed = performance.now();
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: 'svc', labels: app },
      spec: {
        replicas: 2,
        selector: { matchLabels: app },
        template: {
          metadata: { labels: app },
          spec: {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [
                    {
                      matchExpressions: [
                        {
                          key: 'kubernetes.io/hostname',
                          operator: 'In',
                          values: [nodeA.name, nodeB.name],
                        },
                      ],
                    },
                  ],
                },
              },
            },
            tolerations: tolerateRealNodes,
            securityContext: podSecurityContext(10001),
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 15,
            containers: [
              {
                name: 'svc',
                image: svcImage,
                imagePullPolicy: 'Never',
                // The embedded PostgreSQL in the data emptyDir: no database to move.
                command: ['svc', 'serve'],
                env: [
                  { name: 'SVC_PORT', value: String(svcPort) },
                  { name: 'SVC_LOG_LEVEL', value: 'info' },
                ],
                ports: [{ name: 'http', containerPort: svcPort }],
                // As the system chart's: liveness only once started, however slow the start
                // (initdb and migrations took 70 s on a loaded machine, and a liveness probe with
                // a fixed initial delay killed svc just before it listened).
                startupProbe: {
                  tcpSocket: { port: 'http' },
                  periodSeconds: 2,
                  failureThreshold: 150,
                },
                readinessProbe: {
                  httpGet: { path: '/healthz', port: 'http' },
                  periodSeconds: 2,
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
      },
    },
  });
  // At least one replica serves throughout a drain.
  await policy.createNamespacedPodDisruptionBudget({
    namespace,
    body: {
      metadata: { name: 'svc' },
      spec: { minAvailable: 1, selector: { matchLabels: app } },
    },
  });
  const service = await core.createNamespacedService({
    namespace,
    body: {
      metadata: { name: 'svc' },
      spec: { selector: app, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    },
  });
  clusterIp = service.spec?.clusterIP ?? '';
  // A DaemonSet on every real node: a drain leaves its Pods where they are.
  await apps.createNamespacedDaemonSet({
    namespace,
    body: {
      metadata: { name: 'agent' },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        template: {
          metadata: { labels: { app: 'agent' } },
          spec: {
            nodeSelector: { [realNodeLabel]: 'true' },
            tolerations: tolerateRealNodes,
            automountServiceAccountToken: false,
            securityContext: podSecurityContext(65535),
            containers: [
              {
                name: 'pause',
                image: pauseImage,
                imagePullPolicy: 'Never',
                securityContext: containerSecurityContext,
              },
            ],
          },
        },
      },
    },
  });
  const onA = await waitOnNodes(
    'both svc replicas Ready on node A',
    async () => {
      const ready = (await svcPods()).filter(isReady);
      return ready.length === 2 ? ready : undefined;
    },
    300_000,
  );
  console.log(`2 svc replicas Ready on A after ${Math.round(performance.now() - placed)} ms`);
  assert.deepEqual(
    onA.map((p) => p.spec?.nodeName),
    [nodeA.name, nodeA.name],
  );
  assert.ok(onA.every((p) => p.status?.podIP?.startsWith(nodeA.podSubnet.replace(/0\/24$/, ''))));
  await cordonNode(cluster.kubeConfig, nodeB.name, false);

  [client, stranger] = await Promise.all([
    startProbePod(nodeB, 'client', { role: 'client' }),
    startProbePod(nodeB, 'stranger', { role: 'stranger' }),
  ]);
  console.log(
    `client and stranger running on B after ${Math.round(performance.now() - placed)} ms`,
  );
  const fromClient = await podNetns(nodeB, client);
  const fromStranger = await podNetns(nodeB, stranger);
  const podUrl = `http://${onA[0]?.status?.podIP}:${svcPort}/healthz`;
  const serviceUrl = `http://${clusterIp}/healthz`;
  // Pod to Pod across the link, and kube-proxy on B DNATing the ClusterIP to A's Pods.
  await reaches(fromClient, podUrl, true, 'client on B to a Pod on A');
  await reaches(fromClient, serviceUrl, true, 'client on B to the Service');
  await reaches(fromStranger, serviceUrl, true, 'stranger on B, before any policy');

  // Only role=client may reach svc: had the packets been NATed on the way, the client would be
  // refused too (A's kube-router matches the peer's Pod IP against the selector's ipset).
  await networking.createNamespacedNetworkPolicy({
    namespace,
    body: {
      metadata: { name: 'svc-from-clients' },
      spec: {
        podSelector: { matchLabels: app },
        policyTypes: ['Ingress'],
        ingress: [
          {
            _from: [{ podSelector: { matchLabels: { role: 'client' } } }],
            ports: [{ port: svcPort, protocol: 'TCP' }],
          },
        ],
      },
    },
  });
  await reaches(fromStranger, serviceUrl, false, 'stranger on B under the policy');
  await reaches(fromStranger, podUrl, false, 'stranger on B to the Pod under the policy');
  await reaches(fromClient, serviceUrl, true, 'client on B under the policy');
  await reaches(fromClient, podUrl, true, 'client on B to the Pod under the policy');
});

test("draining node A evicts svc's Pods as the PodDisruptionBudget allows, leaves the DaemonSet's Pod, and the Pods rescheduled on B serve the Service", async () => {
  const before = await svcPods();
  assert.equal(before.length, 2, 'the first test placed two replicas');
  const agentOnA = (
    await core.listNamespacedPod({ namespace, labelSelector: 'app=agent' })
  ).items.find((p) => p.spec?.nodeName === nodeA.name);
  assert.ok(agentOnA, "the DaemonSet's Pod on A");
  // The budget allows one disruption once the disruption controller counted both Ready Pods.
  await waitOnNodes('the PodDisruptionBudget to allow one disruption', async () => {
    const pdb = await policy.readNamespacedPodDisruptionBudget({ name: 'svc', namespace });
    return pdb.status?.disruptionsAllowed === 1 ? pdb : undefined;
  });

  // Meanwhile the client on B keeps asking the Service.
  const fromClient = await podNetns(nodeB, client);
  const asked = { answered: 0, failed: 0 };
  let draining = true;
  const asking = (async () => {
    while (draining) {
      const got = await getFrom(fromClient, `http://${clusterIp}/healthz`);
      if (got.startsWith('200 ')) asked.answered++;
      else asked.failed++;
    }
  })();

  const drainStarted = performance.now();
  const result = await drainNode(cluster.kubeConfig, nodeA.name, {
    deleteEmptyDirData: true,
    timeoutMs: 240_000,
  }).finally(() => {
    draining = false;
  });
  await asking;
  console.log(
    `drained A in ${result.tookMs} ms: evicted ${result.evicted.join(', ')}; ` +
      `${result.refusals} evictions refused by the budget; skipped ${result.skipped.join(', ')}; ` +
      `the Service answered ${asked.answered} requests from B during the drain, failed ${asked.failed}`,
  );
  assert.deepEqual(
    [...result.evicted].sort(),
    before.map((p) => `${namespace}/${p.metadata?.name}`).sort(),
  );
  assert.ok(
    result.skipped.includes(`${namespace}/${agentOnA.metadata?.name}`),
    result.skipped.join(),
  );
  // Both evictions went in at once; the second waited for the first's replacement to be Ready.
  assert.ok(result.refusals >= 1, 'the PodDisruptionBudget refused an eviction');
  assert.ok(asked.answered > 0, 'the Service answered during the drain');

  const node = await core.readNode({ name: nodeA.name });
  assert.equal(node.spec?.unschedulable, true, 'a drained node stays cordoned');
  const onB = await waitOnNodes(
    'both svc replicas Ready on node B',
    async () => {
      const ready = (await svcPods()).filter(isReady);
      return ready.length === 2 && ready.every((p) => p.spec?.nodeName === nodeB.name)
        ? ready
        : undefined;
    },
    300_000,
  );
  console.log(
    `both replicas Ready on B ${Math.round(performance.now() - drainStarted)} ms after the drain began`,
  );
  assert.ok(onB.every((p) => !before.some((b) => b.metadata?.uid === p.metadata?.uid)));
  const agent = await core.readNamespacedPod({ name: agentOnA.metadata?.name ?? '', namespace });
  assert.equal(agent.metadata?.uid, agentOnA.metadata?.uid, 'the DaemonSet Pod on A stays');
  assert.equal(agent.status?.phase, 'Running');

  // The Service answers the client from the rescheduled Pods; the policy still keeps the
  // stranger out, now on the client's own node.
  const fromStranger = await podNetns(nodeB, stranger);
  const serviceUrl = `http://${clusterIp}/healthz`;
  await reaches(fromClient, serviceUrl, true, 'client on B to the Service after the drain');
  await reaches(fromStranger, serviceUrl, false, 'stranger on B after the drain');

  await cordonNode(cluster.kubeConfig, nodeA.name, false);
  assert.ok(!(await core.readNode({ name: nodeA.name })).spec?.unschedulable, 'uncordoned');
});

test('the link goes with a disconnect, and with either node: nothing of it stays in the other', async () => {
  assert.ok(link);
  const [deviceA, deviceB] = link.devices;
  const up = await linkTrace(nodeA, deviceA, nodeB.podSubnet);
  assert.equal(up.device, true);
  assert.equal(up.routes.length, 1);
  assert.match(
    up.routes[0] ?? '',
    new RegExp(
      `^${nodeB.podSubnet} via ${link.addresses[1]} dev ${deviceA} .*src ${link.addresses[0]}`,
    ),
  );
  await link.disconnect();
  link = undefined;
  for (const [node, device, peer] of [
    [nodeA, deviceA, nodeB],
    [nodeB, deviceB, nodeA],
  ] as const) {
    assert.deepEqual(await linkTrace(node, device, peer.podSubnet), { device: false, routes: [] });
  }
  // The client on B no longer reaches A's Pods: the DaemonSet's Pod there answers nothing, so
  // ask for a route instead.
  const noRoute = await nodeB
    .inNode('ip', ['route', 'get', `${nodeA.podSubnet.replace(/0\/24$/, '2')}`])
    .then(
      ({ stdout }) => stdout,
      (error: { stderr?: string }) => error.stderr ?? String(error),
    );
  assert.match(noRoute, /unreachable/i);

  const again = await connectRealNodes(nodeA, nodeB);
  link = again;
  assert.equal((await linkTrace(nodeB, again.devices[1], nodeA.podSubnet)).device, true);
  // The DaemonSet would put its Pod back on A while A stops.
  await deleteControllers();
  stoppedA = true;
  const stopping = performance.now();
  await enforcers[0]?.stop();
  await nodeA.stop();
  console.log(`node A stopped in ${Math.round(performance.now() - stopping)} ms`);
  assert.deepEqual(await linkTrace(nodeB, again.devices[1], nodeA.podSubnet), {
    device: false,
    routes: [],
  });
  await again.disconnect();
  link = undefined;
});
