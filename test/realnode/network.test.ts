// Issue 31: cluster DNS and enforced NetworkPolicies on the real node. CoreDNS runs as a Pod in
// kube-system (testcluster/node/dns.ts), kube-router's policy controller in the node's network
// namespace (testcluster/node/netpol.ts). The policies are the tenant chart's own, rendered by
// helm; every check sends real packets from a Pod's own network namespace.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  CoreV1Api,
  loadAllYaml,
  NetworkingV1Api,
  type V1NetworkPolicy,
  type V1Pod,
} from '@kubernetes/client-node';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { realNodeLabel } from '../../testcluster/node/configs.ts';
import {
  type ClusterDns,
  corednsImage,
  type ResolveAnswer,
  resolveInNode,
  startClusterDns,
} from '../../testcluster/node/dns.ts';
import { type PolicyEnforcer, startPolicyEnforcer } from '../../testcluster/node/netpol.ts';
import { podNetns } from '../../testcluster/node/pod-netns.ts';
import { type RealNode, startRealNode } from '../../testcluster/node/real-node.ts';
import { sampleTenantValues } from '../fixtures/tenant-values.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';

const run = promisify(execFile);
const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const networking = cluster.kubeConfig.makeApiClient(NetworkingV1Api);
const tenantChart = fileURLToPath(new URL('../../charts/svc-tenant', import.meta.url));
const started = performance.now();
/** The port every test Pod listens on (CoreDNS's default whoami server, TCP and UDP). */
const port = 1053;
const release = 'svc-tenant';

let node: RealNode;
let dns: ClusterDns;
let enforcer: PolicyEnforcer;
let scratch: string;
const ns = { a: '', b: '', install: '' };

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'svc-realnode-net-'));
  node = await startRealNode(cluster, { timeoutMs: 180_000 });
  dns = await startClusterDns({ kubeconfigPath: cluster.kubeconfigPath, node });
  enforcer = await startPolicyEnforcer({
    kubeconfigPath: cluster.kubeconfigPath,
    netnsPath: node.netnsPath,
    nodeName: node.name,
    dir: node.dir,
  });
  console.log(
    `real node Ready after ${node.readyAfterMs} ms, CoreDNS after ${dns.readyAfterMs} ms, ` +
      `kube-router synced after ${enforcer.readyAfterMs} ms`,
  );
  ns.a = await createTestNamespace(cluster, 'tenant-a');
  ns.b = await createTestNamespace(cluster, 'tenant-b');
  ns.install = await createTestNamespace(cluster, 'install');
});

after(async () => {
  await enforcer?.stop();
  await dns?.stop();
  await node?.stop();
  await Promise.all(
    Object.values(ns)
      .filter(Boolean)
      .map((name) => core.deleteNamespace({ name }).catch(() => undefined)),
  );
  if (scratch) await rm(scratch, { recursive: true, force: true });
  console.log(`network test file took ${Math.round(performance.now() - started)} ms`);
});

/** A Pod on the real node that answers on `port` (CoreDNS without a Corefile: whoami). */
async function startServerPod(namespace: string, name: string, labels: Record<string, string>) {
  const body: V1Pod = {
    metadata: { name, namespace, labels },
    spec: {
      nodeSelector: { 'kubernetes.io/hostname': node.name },
      tolerations: [{ key: realNodeLabel, operator: 'Exists', effect: 'NoSchedule' }],
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 65532,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: 'server',
          image: corednsImage,
          imagePullPolicy: 'Never',
          args: ['-dns.port', String(port)],
          ports: [{ containerPort: port, protocol: 'TCP' }],
          readinessProbe: { tcpSocket: { port }, periodSeconds: 1 },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
        },
      ],
    },
  };
  await core.createNamespacedPod({ namespace, body });
  return waitOnNode(`Pod ${namespace}/${name} Ready`, async () => {
    const pod = await core.readNamespacedPod({ name, namespace });
    const ready = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    return ready && pod.status?.podIP ? pod : undefined;
  });
}

/** Waits for `check`; on failure adds kube-router's and the kubelet's log tails. */
async function waitOnNode<T>(what: string, check: () => Promise<T | undefined>, ms = 90_000) {
  try {
    return await waitUntil(what, check, ms);
  } catch (error) {
    const tails = await Promise.all(['kube-router', 'kubelet'].map((c) => node.logTail(c, 25)));
    throw new Error(`${(error as Error).message}\n${tails.join('\n')}`);
  }
}

/**
 * Opens a TCP connection from inside `netns` (a Pod's own namespace, so the packets carry the
 * Pod's address through the node's bridge and kube-router's chains): "connected", or why not.
 */
async function connectFrom(netns: string, host: string, toPort = port): Promise<string> {
  const script = `
const socket = require('node:net').connect({ host: process.argv[1], port: Number(process.argv[2]) });
socket.setTimeout(1500);
socket.on('connect', () => { console.log('connected'); socket.destroy(); });
socket.on('timeout', () => { console.log('timeout'); socket.destroy(); });
socket.on('error', (error) => console.log(error.code ?? String(error)));`;
  const { stdout } = await run('nsenter', [
    `--net=${netns}`,
    process.execPath,
    '-e',
    script,
    host,
    String(toPort),
  ]);
  return stdout.trim();
}

/** The tenant chart's NetworkPolicies for `namespace`, rendered by helm with the sample values. */
async function chartPolicies(namespace: string): Promise<V1NetworkPolicy[]> {
  const values = sampleTenantValues();
  values.networkPolicies = { ...values.networkPolicies, installNamespace: ns.install };
  const file = join(scratch, `values-${namespace}.json`);
  await writeFile(file, JSON.stringify(values));
  const { stdout } = await run(
    'helm',
    [
      'template',
      release,
      tenantChart,
      '--namespace',
      namespace,
      '-f',
      file,
      '--show-only',
      'templates/networkpolicies.yaml',
    ],
    { maxBuffer: 16 * 2 ** 20 },
  );
  // Through the client's own deserializer: its model names an ingress rule's peers `_from`, so a
  // plain parsed object would reach the API server without them (every ingress "from anywhere").
  const policies = (loadAllYaml(stdout) as (V1NetworkPolicy | null)[]).filter(
    (doc): doc is V1NetworkPolicy => doc?.kind === 'NetworkPolicy',
  );
  assert.ok(
    policies.some((p) => p.spec?.ingress?.some((rule) => (rule._from?.length ?? 0) > 0)),
    'the ingress rules keep their peers',
  );
  assert.ok(
    policies.some((p) => p.metadata?.name === 'default-deny'),
    'the chart renders default-deny',
  );
  return policies;
}

const records = (answer: ResolveAnswer) => ('records' in answer ? answer.records : answer.error);

test('CoreDNS on the real node answers for the kubernetes Service by A and SRV, NXDOMAIN elsewhere', async () => {
  const client = await startServerPod(ns.a, 'dns-client', { app: 'dns-client' });
  const netns = await podNetns(node, client);
  // Through the kube-dns Service (10.96.0.10, kube-proxy) from a Pod, as a Pod's resolver asks.
  const a = await waitOnNode('an A record for kubernetes.default', async () => {
    const answer = await resolveInNode(netns, 'kubernetes.default.svc.cluster.local');
    return 'records' in answer ? answer : undefined;
  });
  assert.deepEqual(records(a), ['10.96.0.1']);
  const srv = await resolveInNode(netns, '_https._tcp.kubernetes.default.svc.cluster.local', {
    type: 'SRV',
  });
  assert.deepEqual(records(srv), [
    {
      name: 'kubernetes.default.svc.cluster.local',
      port: 443,
      priority: 0,
      weight: 100,
      type: 'SRV',
    },
  ]);
  // No upstream: a name outside cluster.local is answered, and it does not exist.
  assert.deepEqual(records(await resolveInNode(netns, 'registry.example.org')), 'ENOTFOUND');
  assert.deepEqual(
    records(await resolveInNode(netns, 'nothing.default.svc.cluster.local')),
    'ENOTFOUND',
  );
  await core.deleteNamespacedPod({ name: 'dns-client', namespace: ns.a, gracePeriodSeconds: 0 });
});

test("kube-router's chains and ipsets live in the node's namespace only", async () => {
  const inNode = await node.inNode('iptables', ['-S']);
  assert.match(inNode.stdout, /-N KUBE-ROUTER-FORWARD/);
  const onHost = await run('iptables', ['-S']);
  assert.doesNotMatch(onHost.stdout, /KUBE-ROUTER/, 'no kube-router chain on the machine');
  const hostSets = await run('ipset', ['list', '-n']);
  assert.doesNotMatch(hostSets.stdout, /KUBE-/, 'no kube-router ipset on the machine');
});

test("the tenant chart's policies keep tenant A from tenant B and the API server, allow the install namespace and DNS; removing them restores the flow", async () => {
  const tenantLabels = (name: string) => ({
    'app.kubernetes.io/name': name,
    'app.kubernetes.io/instance': release,
  });
  const [client, sibling, target, api] = await Promise.all([
    startServerPod(ns.a, 'client', tenantLabels('cases-server')),
    startServerPod(ns.a, 'sibling', tenantLabels('analysis-server')),
    startServerPod(ns.b, 'indexer', tenantLabels('monitor-indexer')),
    startServerPod(ns.install, 'api', { app: 'api' }),
  ]);
  await core.createNamespacedService({
    namespace: ns.install,
    body: {
      metadata: { name: 'api' },
      spec: { selector: { app: 'api' }, ports: [{ port: 8080, targetPort: port }] },
    },
  });
  const from = await podNetns(node, client);
  const ip = (pod: V1Pod) => pod.status?.podIP ?? '';
  /** Waits until a connection from tenant A's client does (or does not) get through. */
  const reaches = (host: string, connects: boolean, toPort = port) =>
    waitOnNode(`${host}:${toPort} ${connects ? 'reachable' : 'unreachable'} from A`, async () => {
      const got = await connectFrom(from, host, toPort);
      return (got === 'connected') === connects ? got : undefined;
    });

  // Without policies every flow is open: the later refusals are the policies' doing.
  await reaches(ip(target), true);
  await reaches(ip(api), true);
  // The API server through the `kubernetes` Service: a destination outside the Pods' allow-list.
  await reaches('10.96.0.1', true, 443);

  const policies = [...(await chartPolicies(ns.a)), ...(await chartPolicies(ns.b))];
  for (const policy of policies) {
    await networking.createNamespacedNetworkPolicy({
      namespace: policy.metadata?.namespace ?? '',
      body: policy,
    });
  }
  // kube-router REJECTs: the connection is refused (or times out), never made.
  await reaches(ip(target), false);
  await reaches('10.96.0.1', false, 443);
  await reaches(ip(sibling), true);
  await reaches(ip(api), true);
  // DNS still works under default-deny (allow-dns: UDP/TCP 53 to kube-system), and the name
  // leads to the install namespace's Service through kube-proxy.
  const apiName = `api.${ns.install}.svc.cluster.local`;
  const resolved = await waitOnNode(`${apiName} resolves from tenant A`, async () => {
    const answer = await resolveInNode(from, apiName);
    return 'records' in answer ? answer.records : undefined;
  });
  const service = await core.readNamespacedService({ name: 'api', namespace: ns.install });
  assert.deepEqual(resolved, [service.spec?.clusterIP]);
  await reaches(String(resolved[0]), true, 8080);

  for (const policy of policies) {
    await networking.deleteNamespacedNetworkPolicy({
      name: policy.metadata?.name ?? '',
      namespace: policy.metadata?.namespace ?? '',
    });
  }
  await reaches(ip(target), true);
});

test('stopping DNS and the enforcer removes the CoreDNS Pod and ends kube-router', async () => {
  const { podName } = dns;
  await dns.stop();
  await assert.rejects(core.readNamespacedPod({ name: podName, namespace: 'kube-system' }), {
    code: 404,
  });
  const { pid } = enforcer;
  await enforcer.stop();
  await assert.rejects(access(`/proc/${pid}`), { code: 'ENOENT' });
});
