// Issue 31: the edge proxy Pod forwards a tenant's manager port on the real node. The system
// chart's edge proxy (HAProxy, charts/svc-system/templates/edge-proxy*.yaml) runs from the
// haproxy test image; svc's own sync (src/orchestrator/edge-proxy.ts) writes a tenant's config,
// Service ports and config hash; an agent-side client in the node's namespace reaches a Wazuh
// manager stand-in through the edge Service and gets its answers; kube-router enforces the
// system chart's and the tenant chart's NetworkPolicies along the way.
//
// The stand-in (fixtures/manager-stand-in.*) is the same haproxy image with a Lua service: it
// is on the node already for the proxy, and its haproxy has Lua and OpenSSL, so it terminates
// the enrollment TLS and answers `OSSEC A:` with `OSSEC K:` like wazuh-authd, and frames event
// replies like wazuh-remoted. busybox (the other test images) has no TLS server, and svc's image
// would tie this file to rebuilding svc's binary on every source change.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  AppsV1Api,
  CoreV1Api,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type V1NetworkPolicy,
  type V1NetworkPolicyIngressRule,
  type V1Pod,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { createLogger } from '../../src/log/index.ts';
import { edgePorts } from '../../src/orchestrator/edge-ports.ts';
import {
  CONFIG_SHA_ANNOTATION,
  EDGE_PROXY_NAME,
  type EdgeProxyDeps,
  syncEdgeProxy,
} from '../../src/orchestrator/edge-proxy.ts';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { builtTestImage } from '../../testcluster/images/images.ts';
import { realNodeLabel } from '../../testcluster/node/configs.ts';
import { type ClusterDns, startClusterDns } from '../../testcluster/node/dns.ts';
import { type PolicyEnforcer, startPolicyEnforcer } from '../../testcluster/node/netpol.ts';
import { podNetns } from '../../testcluster/node/pod-netns.ts';
import { type RealNode, startRealNode } from '../../testcluster/node/real-node.ts';
import {
  helmWithValues,
  mergeValues,
  renderSystemChart,
  sampleValues,
} from '../../testcluster/system-chart.ts';
import { sampleTenantValues } from '../fixtures/tenant-values.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';

const run = promisify(execFile);
const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
const objects = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const helm = join(cluster.binDir, 'helm');
const tenantChart = fileURLToPath(new URL('../../charts/svc-tenant', import.meta.url));
const fixtures = new URL('./fixtures/', import.meta.url);
const started = performance.now();

const release = 'svc-tenant';
const tenantValues = sampleTenantValues();
const installId = tenantValues.tenant.installId;
const portBase = 20_000;
/** Not pair 0: the ports come from svc's arithmetic, not from the base alone. */
const pair = 2;
const ports = edgePorts(portBase, pair);
const replicas = 2;
const haproxyRef = 'localhost/svc-test/haproxy:2.6';
const restricted = { 'pod-security.kubernetes.io/enforce': 'restricted' };

let node: RealNode;
let dns: ClusterDns;
let enforcer: PolicyEnforcer;
let scratch: string;
/** The stand-in's certificate: the agent-side client trusts only it. */
let managerCert: string;
const ns = { install: '', tenant: '', outside: '' };
/** What svc's database would answer for `edgeProxyTenants()`: the tenants holding a pair. */
let edgeRows: { slug: string; edge_port_pair: number }[] = [];

const deps = (): EdgeProxyDeps => ({
  // The one read svc's sync makes of its database, answered from `edgeRows`.
  provisioning: {
    edgeProxyTenants: async () => edgeRows,
  } as unknown as EdgeProxyDeps['provisioning'],
  edgePortBase: portBase,
  edgeProxy: { enabled: true, clusterDomain: 'cluster.local' },
  install: {
    msspId: tenantValues.tenant.msspId,
    installId,
    namespace: ns.install,
    serviceAccount: 'svc',
  },
  kubeConfig: cluster.kubeConfig,
  logger: createLogger('silent'),
});

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'svc-realnode-edge-'));
  const haproxy = await builtTestImage('haproxy');
  node = await startRealNode(cluster, { timeoutMs: 180_000 });
  const names = await node.importImage(haproxy.archive);
  assert.ok(names.includes(haproxyRef), `${haproxyRef} not among ${names.join(', ')}`);
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
  ns.install = await createTestNamespace(cluster, 'edge');
  // `tenant-<slug>`: svc derives the namespace (and the monitor's DNS name) from the slug.
  ns.tenant = await createTestNamespace(cluster, 'tenant');
  ns.outside = await createTestNamespace(cluster, 'outside');
  await labelNamespace(ns.install, restricted);
  await labelNamespace(ns.tenant, { ...restricted, 'managed-by': 'svc', 'install-id': installId });
  await labelNamespace(ns.outside, restricted);
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=monitor',
    '-keyout',
    join(scratch, 'manager.key'),
    '-out',
    join(scratch, 'manager.crt'),
  ]);
  managerCert = await readFile(join(scratch, 'manager.crt'), 'utf8');
  outsider = await startStandIn(ns.outside, 'outsider', { app: 'outsider' });
  agentNetns = await podNetns(node, outsider);
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
  console.log(`edge proxy test file took ${Math.round(performance.now() - started)} ms`);
});

async function labelNamespace(name: string, labels: Record<string, string>): Promise<void> {
  await core.patchNamespace({ name, body: { metadata: { labels } } }, mergePatch);
}

/** The last log lines of every container in `namespace` (why a Pod is not Ready, or refuses). */
async function podLogs(namespace: string): Promise<string> {
  const pods = await core.listNamespacedPod({ namespace }).catch(() => undefined);
  const tails = await Promise.all(
    (pods?.items ?? []).map(async (pod) => {
      const name = pod.metadata?.name ?? '';
      const log = await core
        .readNamespacedPodLog({ name, namespace, tailLines: 15 })
        .catch((error: Error) => `(no log: ${error.message})`);
      return `--- ${namespace}/${name} (${pod.status?.phase})\n${log}`;
    }),
  );
  return tails.join('\n');
}

/** Waits for `check`; on failure adds the Pods' logs and the node's log tails to the error. */
async function waitOnNode<T>(what: string, check: () => Promise<T | undefined>, ms = 120_000) {
  try {
    return await waitUntil(what, check, ms);
  } catch (error) {
    const tails = await Promise.all(['kubelet', 'kube-router'].map((c) => node.logTail(c, 20)));
    const logs = await Promise.all(Object.values(ns).filter(Boolean).map(podLogs));
    const last = `last agent answer: ${JSON.stringify(lastAnswer)}`;
    throw new Error(
      `${(error as Error).message}\n${last}\n${logs.join('\n')}\n${tails.join('\n')}`,
    );
  }
}

const onNode = () => ({
  nodeSelector: { 'kubernetes.io/hostname': node.name },
  tolerations: [{ key: realNodeLabel, operator: 'Exists', effect: 'NoSchedule' }],
});

/** The tenant chart rendered for `ns.tenant` in edge-proxy mode, the templates named only. */
async function tenantChartObjects(showOnly: readonly string[]): Promise<KubernetesObject[]> {
  const values = {
    ...tenantValues,
    monitorIngress: { ...tenantValues.monitorIngress, mode: 'edge-proxy', edgePorts: ports },
    networkPolicies: { ...tenantValues.networkPolicies, installNamespace: ns.install },
  };
  const args = ['template', release, tenantChart, '--namespace', ns.tenant];
  for (const template of showOnly) args.push('--show-only', template);
  const stdout = await helmWithValues(helm, args, values);
  return parseAllDocuments(stdout)
    .map((doc) => doc.toJS() as KubernetesObject | null)
    .filter((object): object is KubernetesObject => object !== null);
}

/**
 * A Wazuh-manager stand-in Pod in `namespace` on the node, under restricted Pod Security: the
 * haproxy image with fixtures/manager-stand-in.cfg and .lua, TLS with the test's certificate.
 */
async function startStandIn(namespace: string, name: string, labels: Record<string, string>) {
  const [config, lua, key] = await Promise.all([
    readFile(new URL('manager-stand-in.cfg', fixtures), 'utf8'),
    readFile(new URL('manager-stand-in.lua', fixtures), 'utf8'),
    readFile(join(scratch, 'manager.key'), 'utf8'),
  ]);
  await core.createNamespacedConfigMap({
    namespace,
    body: {
      metadata: { name: 'manager-stand-in' },
      data: { 'manager-stand-in.cfg': config, 'manager-stand-in.lua': lua },
    },
  });
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: 'manager-stand-in-tls' },
      stringData: { 'manager.pem': managerCert + key },
    },
  });
  const body: V1Pod = {
    metadata: { name, namespace, labels },
    spec: {
      ...onNode(),
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 99,
        runAsGroup: 99,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: 'manager',
          image: haproxyRef,
          imagePullPolicy: 'Never',
          command: ['haproxy', '-db', '-f', '/etc/stand-in/manager-stand-in.cfg'],
          // The names the tenant chart's monitor-manager Service targets.
          ports: [
            { name: 'events', containerPort: 1514 },
            { name: 'enrollment', containerPort: 1515 },
          ],
          readinessProbe: { tcpSocket: { port: 1514 }, periodSeconds: 1 },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
          volumeMounts: [
            { name: 'config', mountPath: '/etc/stand-in', readOnly: true },
            { name: 'tls', mountPath: '/etc/stand-in-tls', readOnly: true },
          ],
        },
      ],
      volumes: [
        { name: 'config', configMap: { name: 'manager-stand-in' } },
        { name: 'tls', secret: { secretName: 'manager-stand-in-tls' } },
      ],
    },
  };
  await core.createNamespacedPod({ namespace, body });
  return waitOnNode(`stand-in ${namespace}/${name} Ready`, async () => {
    const pod = await core.readNamespacedPod({ name, namespace });
    const ready = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    return ready && pod.status?.podIP ? pod : undefined;
  });
}

const isReady = (pod: V1Pod) =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/**
 * The proxy's Pods once the Deployment has rolled out to the config hash `sha` (when given):
 * every replica updated and Ready, and no Pod left that is not being deleted but runs another.
 */
async function rolledOut(sha?: string): Promise<V1Pod[]> {
  return waitOnNode(`edge proxy rolled out${sha ? ` to ${sha.slice(0, 12)}` : ''}`, async () => {
    const deployment = await apps.readNamespacedDeployment({
      name: EDGE_PROXY_NAME,
      namespace: ns.install,
    });
    const status = deployment.status;
    if (
      (status?.observedGeneration ?? 0) < (deployment.metadata?.generation ?? 1) ||
      status?.updatedReplicas !== replicas ||
      status?.readyReplicas !== replicas ||
      status?.replicas !== replicas
    )
      return undefined;
    const selector = Object.entries(deployment.spec?.selector.matchLabels ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const pods = (
      await core.listNamespacedPod({ namespace: ns.install, labelSelector: selector })
    ).items.filter((pod) => !pod.metadata?.deletionTimestamp);
    const current = pods.filter(
      (pod) =>
        isReady(pod) &&
        (sha === undefined || pod.metadata?.annotations?.[CONFIG_SHA_ANNOTATION] === sha),
    );
    return current.length === replicas && pods.length === replicas ? pods : undefined;
  });
}

/**
 * An agent's first exchanges, from `netns` (a Pod's own network namespace): enrollment over TLS to
 * `host:enrollment` (trusting only the stand-in's certificate) and one framed event message to
 * `host:events`. Each answer is the reply text, or the error code.
 */
async function agent(
  host: string,
  to: { events: number; enrollment: number },
  netns = agentNetns,
): Promise<{ enroll: string; events: string }> {
  const script = `
const net = require('node:net');
const tls = require('node:tls');
const [host, events, enrollment, ca] = process.argv.slice(1);
const settle = (socket, resolve) => {
  socket.setTimeout(3000, () => { resolve('timeout'); socket.destroy(); });
  socket.on('error', (error) => resolve(error.code ?? String(error)));
};
const enroll = new Promise((resolve) => {
  const socket = tls.connect({ host, port: Number(enrollment), ca, servername: 'monitor',
    checkServerIdentity: () => undefined });
  settle(socket, resolve);
  let text = '';
  socket.setEncoding('utf8');
  socket.on('secureConnect', () => socket.write("OSSEC A:'edge-agent'\\n"));
  socket.on('data', (chunk) => { text += chunk; });
  socket.on('end', () => resolve(text));
});
const event = new Promise((resolve) => {
  const socket = net.connect({ host, port: Number(events) });
  settle(socket, resolve);
  let buffer = Buffer.alloc(0);
  socket.on('connect', () => {
    const message = Buffer.from('#!-agent startup {"version":"v4.9.0"}');
    const header = Buffer.alloc(4);
    header.writeUInt32LE(message.length);
    socket.write(Buffer.concat([header, message]));
  });
  socket.on('data', (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    if (buffer.length >= 4 && buffer.length >= 4 + buffer.readUInt32LE(0)) {
      resolve(buffer.subarray(4, 4 + buffer.readUInt32LE(0)).toString());
      socket.destroy();
    }
  });
  socket.on('end', () => resolve('closed: ' + JSON.stringify(buffer.toString())));
});
Promise.all([enroll, event]).then(([enroll, events]) =>
  console.log(JSON.stringify({ enroll, events })));`;
  const { stdout } = await run('nsenter', [
    `--net=${netns}`,
    process.execPath,
    '-e',
    script,
    host,
    String(to.events),
    String(to.enrollment),
    managerCert,
  ]);
  lastAnswer = { host, ...(JSON.parse(stdout) as { enroll: string; events: string }) };
  return lastAnswer;
}

const ENROLLED = /^OSSEC K:'001 edge-agent any [0-9a-f]{64}'\n$/;
const ACK = '#!-agent ack ';
const answered = (a: { enroll: string; events: string }) =>
  ENROLLED.test(a.enroll) && a.events === ACK;

async function edgeServiceIp(): Promise<string> {
  const service = await core.readNamespacedService({
    name: EDGE_PROXY_NAME,
    namespace: ns.install,
  });
  const ip = service.spec?.clusterIP;
  assert.ok(ip, 'the edge Service has a cluster IP');
  return ip;
}

let manager: V1Pod;
/**
 * Agents dial from the outsider's network namespace: a Pod in a namespace that is no tenant of
 * this install (real agents come from outside the cluster; the node's own namespace routes no
 * ClusterIP). Its own stand-in listener tells "refused by policy" from "nothing listens".
 */
let outsider: V1Pod;
let agentNetns: string;
/** The latest answer agent() got, for a wait's failure message. */
let lastAnswer: { host: string; enroll: string; events: string } | undefined;

test("the system chart's edge proxy runs on the real node under restricted Pod Security, Ready by its own /healthz probe", async () => {
  const values = mergeValues(sampleValues(ns.install, { installId }), {
    image: { pullPolicy: 'Never' },
    edgeProxy: {
      enabled: true,
      replicas,
      portBase,
      image: { repository: 'localhost/svc-test/haproxy', tag: '2.6' },
    },
    scheduling: onNode(),
  });
  const rendered = await renderSystemChart(helm, ns.install, values, [
    'templates/edge-proxy.yaml',
    'templates/edge-proxy-pdb.yaml',
    'templates/networkpolicies.yaml',
  ]);
  // The other policies of networkpolicies.yaml select svc's own Pods, which do not run here.
  const edge = rendered.filter(
    (object) => object.kind !== 'NetworkPolicy' || object.metadata?.name === EDGE_PROXY_NAME,
  );
  assert.deepEqual(
    edge.map((object) => object.kind),
    ['ConfigMap', 'Service', 'Deployment', 'PodDisruptionBudget', 'NetworkPolicy'],
  );
  for (const object of edge) await objects.create(object);

  const pods = await rolledOut();
  for (const pod of pods) assert.equal(pod.spec?.nodeName, node.name);
  // The readiness probe is the chart's own (/healthz on 8404); through the Service as well.
  const ip = await edgeServiceIp();
  // kube-proxy programs the new ClusterIP shortly after the Service appears: wait for it.
  await waitOnNode('/healthz through the edge Service', async () => {
    const { stdout } = await run('nsenter', [
      `--net=${agentNetns}`,
      process.execPath,
      '-e',
      `require('node:http').get('http://${ip}:8404/healthz', (r) => console.log(r.statusCode))
        .on('error', (e) => console.log(e.code));`,
    ]);
    return stdout.trim() === '200' ? true : undefined;
  });
});

test("svc's sync writes a tenant's edge config; the rolled proxy forwards the tenant's edge ports to its manager (TLS enrollment, framed events)", async () => {
  // The manager's Services and Pod labels exactly as the tenant chart renders them.
  const chart = await tenantChartObjects([
    'templates/monitor-service.yaml',
    'charts/monitor/templates/manager.yaml',
  ]);
  const services = chart.filter((object) => object.kind === 'Service');
  assert.deepEqual(services.map((s) => s.metadata?.name).sort(), ['monitor', 'monitor-manager']);
  const statefulSet = chart.find((object) => object.kind === 'StatefulSet') as
    | { spec: { template: { metadata: { labels: Record<string, string> } } } }
    | undefined;
  assert.ok(statefulSet, 'the chart renders the manager StatefulSet');
  for (const service of services) await objects.create(service);
  manager = await startStandIn(ns.tenant, 'monitor-manager-0', {
    ...statefulSet.spec.template.metadata.labels,
  });
  // The stand-in answers on the manager's Service before any edge proxy is involved.
  const monitor = await core.readNamespacedService({ name: 'monitor', namespace: ns.tenant });
  const direct = await waitOnNode('the stand-in answers through the monitor Service', async () => {
    const answer = await agent(monitor.spec?.clusterIP ?? '', { events: 1514, enrollment: 1515 });
    return answered(answer) ? answer : undefined;
  });
  assert.match(direct.enroll, ENROLLED);

  const ip = await edgeServiceIp();
  // Before svc writes the tenant, the edge has no such port.
  assert.ok(!answered(await agent(ip, ports)));

  edgeRows = [{ slug: ns.tenant.slice('tenant-'.length), edge_port_pair: pair }];
  const outcome = await syncEdgeProxy(deps());
  assert.ok(outcome);
  assert.deepEqual(
    { tenants: outcome.tenants, config: outcome.config, service: outcome.service },
    { tenants: 1, config: 'written', service: 'written' },
  );
  assert.equal(outcome.rollout, 'started');
  const service = await core.readNamespacedService({
    name: EDGE_PROXY_NAME,
    namespace: ns.install,
  });
  assert.deepEqual(
    (service.spec?.ports ?? []).map((p) => `${p.name}:${p.port}->${p.targetPort}`).sort(),
    [
      'health:8404->8404',
      `en-${ports.enrollment}:${ports.enrollment}->${ports.enrollment}`,
      `ev-${ports.events}:${ports.events}->${ports.events}`,
    ].sort(),
  );
  const pods = await rolledOut(outcome.sha256);

  const answer = await waitOnNode('the tenant answers on its edge ports', async () => {
    const got = await agent(ip, ports);
    return answered(got) ? got : undefined;
  });
  assert.match(answer.enroll, ENROLLED);
  assert.equal(answer.events, ACK);
  // Every replica forwards, not just the one the Service happened to pick.
  for (const pod of pods) {
    const got = await waitOnNode(`${pod.metadata?.name} forwards`, async () => {
      const reply = await agent(pod.status?.podIP ?? '', ports);
      return answered(reply) ? reply : undefined;
    });
    assert.equal(got.events, ACK);
  }

  // The same tenant set again writes nothing and rolls nothing.
  const again = await syncEdgeProxy(deps());
  assert.deepEqual(
    again && { config: again.config, service: again.service, rollout: again.rollout },
    { config: 'unchanged', service: 'unchanged', rollout: 'unchanged' },
  );
});

test("under kube-router, the system chart's edge-proxy policy and the tenant chart's policies admit the edge path and only it", async () => {
  assert.ok(manager, 'the forwarding test started the manager stand-in');
  const managerIp = manager.status?.podIP ?? '';
  const outsiderIp = outsider.status?.podIP ?? '';
  const proxies = await rolledOut();
  const proxyNetns = await podNetns(node, proxies[0] as V1Pod);
  const direct = { events: 1514, enrollment: 1515 };

  // Without the tenant's policies the manager's Pod reaches the outsider's listener (so a
  // refusal below is a policy's doing) and the outsider reaches the manager.
  const managerNetns = await podNetns(node, manager);
  assert.ok(answered(await agent(outsiderIp, direct, managerNetns)), 'the outsider answers');
  await waitOnNode('the outsider reaches the manager before the tenant policies', async () =>
    answered(await agent(managerIp, direct, agentNetns)) ? true : undefined,
  );

  const policies = (await tenantChartObjects(['templates/networkpolicies.yaml'])).filter(
    (object): object is V1NetworkPolicy => object.kind === 'NetworkPolicy',
  );
  assert.ok(policies.some((p) => p.metadata?.name === 'default-deny'));
  // client-node's model names an ingress rule's peers `_from` (a reserved word) and serializes
  // only that key, also in KubernetesObjectApi: a parsed manifest's `from` would be dropped and
  // every peer list read as "from anywhere". Renamed here.
  for (const policy of policies) {
    const ingress = policy.spec?.ingress?.map((rule) => {
      const { from, ...rest } = rule as V1NetworkPolicyIngressRule & { from?: unknown };
      return { ...rest, _from: from } as V1NetworkPolicyIngressRule;
    });
    const body = { ...policy, spec: { ...policy.spec, ingress } } as V1NetworkPolicy;
    await objects.create(body);
  }

  const ip = await edgeServiceIp();
  // The edge path: agent -> edge Service -> proxy -> monitor Service -> manager, both channels.
  await waitOnNode('the edge path under both charts’ policies', async () =>
    answered(await agent(ip, ports)) ? true : undefined,
  );
  // From the proxy's own namespace: the manager directly, yes; a non-tenant listener, no.
  assert.ok(answered(await agent(managerIp, direct, proxyNetns)));
  const refused = await agent(outsiderIp, direct, proxyNetns);
  assert.ok(!answered(refused), `the proxy reached a non-tenant Pod: ${JSON.stringify(refused)}`);
  // Agents come through the edge only: a Pod elsewhere reaches the manager's ports no more,
  // but still the edge Service.
  await waitOnNode('the manager refuses a Pod that is not the edge proxy', async () => {
    const got = await agent(managerIp, direct, agentNetns);
    return answered(got) ? undefined : got;
  });
  assert.ok(answered(await agent(ip, ports, agentNetns)));
});

test("removing the tenant from svc's set removes its ports and its listen sections; the edge stops forwarding", async () => {
  const ip = await edgeServiceIp();
  assert.ok(answered(await agent(ip, ports)), 'the edge forwards before the removal');
  edgeRows = [];
  const outcome = await syncEdgeProxy(deps());
  assert.deepEqual(
    outcome && {
      tenants: outcome.tenants,
      config: outcome.config,
      service: outcome.service,
      rollout: outcome.rollout,
    },
    { tenants: 0, config: 'written', service: 'written', rollout: 'started' },
  );
  const service = await core.readNamespacedService({
    name: EDGE_PROXY_NAME,
    namespace: ns.install,
  });
  assert.deepEqual(
    (service.spec?.ports ?? []).map((p) => p.name),
    ['health'],
  );
  const pods = await rolledOut(outcome?.sha256);
  await waitOnNode('the edge Service no longer forwards', async () => {
    const got = await agent(ip, ports);
    return got.enroll !== '' && !ENROLLED.test(got.enroll) && got.events !== ACK ? got : undefined;
  });
  // The new Pods do not listen on the tenant's ports at all (the policy admits them).
  for (const pod of pods) {
    const { enroll, events } = await agent(pod.status?.podIP ?? '', ports);
    assert.deepEqual({ enroll, events }, { enroll: 'ECONNREFUSED', events: 'ECONNREFUSED' });
  }
  // The manager itself still answers: it is the proxy that stopped.
  const monitor = await core.readNamespacedService({ name: 'monitor', namespace: ns.tenant });
  const proxyNetns = await podNetns(node, pods[0] as V1Pod);
  assert.ok(
    answered(
      await agent(monitor.spec?.clusterIP ?? '', { events: 1514, enrollment: 1515 }, proxyNetns),
    ),
  );
});
