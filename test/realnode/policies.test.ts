// Issue 31: the NetworkPolicies around svc's own namespaces, enforced for real. svc's API and its
// PostgreSQL run from the system chart's rendered objects on the real node (svc's image and the
// postgres test image); the system chart's policies and two tenants' policies (the tenant chart
// rendered from the values svc itself renders) are enforced by kube-router. Every check sends
// real packets from a Pod's own network namespace: svc's API Pod, the database Pod, Pods standing
// in for a tenant's adapter and indexer by their labels, and plain Pods.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  CoreV1Api,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
  NetworkingV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
  type V1NetworkPolicy,
  type V1Pod,
  type V1StatefulSet,
} from '@kubernetes/client-node';
import { parse, parseAllDocuments } from 'yaml';
import { namespaceLabels, renderTenantValues } from '../../src/orchestrator/render.ts';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { builtTestImage } from '../../testcluster/images/images.ts';
import { nodeAddress, realNodeLabel } from '../../testcluster/node/configs.ts';
import { type ClusterDns, resolveInNode, startClusterDns } from '../../testcluster/node/dns.ts';
import { type PolicyEnforcer, startPolicyEnforcer } from '../../testcluster/node/netpol.ts';
import { type RealNode, startRealNode } from '../../testcluster/node/real-node.ts';
import {
  helmWithValues,
  mergeValues,
  renderSystemChart,
  sampleValues,
} from '../../testcluster/system-chart.ts';
import { builtImage } from '../packaging/artifacts.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';
import {
  connectManyFrom,
  listenInNode,
  type NodeListener,
  podNetns,
  readyPod,
  standInPod,
} from './fixtures/policy-probes.ts';

const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const networking = cluster.kubeConfig.makeApiClient(NetworkingV1Api);
const objects = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
const tenantChart = fileURLToPath(new URL('../../charts/svc-tenant', import.meta.url));
const started = performance.now();
/** The tenant package's release name (the policies select on its instance label). */
const release = 'svc-tenant';
/** Ports of the listener on the node address: 443 is networkPolicies.outbound's default, 9443 no one's. */
const outboundPort = 443;
const strayPort = 9443;
/** This install's own ids, so no other install's admission policy or namespace label matches. */
const install = { msspId: randomUUID(), installId: randomUUID() };

let node: RealNode;
let dns: ClusterDns;
let enforcer: PolicyEnforcer;
let listener: NodeListener;
const ns = { install: '', a: '', b: '' };
/** Cluster-scoped objects the system chart renders (its ClusterRoles), deleted in after(). */
const clusterScoped: KubernetesObject[] = [];
let systemValues: Record<string, unknown>;
const policies: V1NetworkPolicy[] = [];
/** Pods by role, with their network namespaces. */
const pods: Record<string, { pod: V1Pod; netns: string }> = {};
const services = { api: '', database: '' };
/** SVC_API_URL as the system chart renders it (the adapters' adapter.apiUrl). */
let apiUrl = '';

before(async () => {
  const [svcArchive, postgres] = await Promise.all([builtImage(), builtTestImage('postgres')]);
  node = await startRealNode(cluster, { timeoutMs: 180_000 });
  // One after the other, so that after() can stop whichever started when the other fails.
  dns = await startClusterDns({ kubeconfigPath: cluster.kubeconfigPath, node });
  enforcer = await startPolicyEnforcer({
    kubeconfigPath: cluster.kubeconfigPath,
    netnsPath: node.netnsPath,
    nodeName: node.name,
    dir: node.dir,
  });
  const importing = performance.now();
  const { version } = JSON.parse(
    await readFile(new URL('../../package.json', import.meta.url), 'utf8'),
  ) as { version: string };
  const svcNames = await node.importImage(svcArchive, 'localhost/svc');
  assert.ok(svcNames.includes(`localhost/svc:${version}`), svcNames.join(', '));
  await node.importImage(postgres.archive);
  console.log(
    `real node Ready after ${node.readyAfterMs} ms, CoreDNS after ${dns.readyAfterMs} ms, ` +
      `kube-router synced after ${enforcer.readyAfterMs} ms, images imported in ` +
      `${Math.round(performance.now() - importing)} ms`,
  );
  listener = await listenInNode(node, nodeAddress, [outboundPort, strayPort]);

  ns.install = await createTestNamespace(cluster, 'svc-install');
  ns.a = await createTestNamespace(cluster, 'tenant-a');
  ns.b = await createTestNamespace(cluster, 'tenant-b');

  // The system chart as an operator renders it, into the install namespace, on the real node.
  const at = postgres.ref.lastIndexOf(':');
  systemValues = mergeValues(sampleValues(ns.install, install), {
    image: { registry: 'localhost', tag: version, pullPolicy: 'Never' },
    database: { image: { repository: postgres.ref.slice(0, at), tag: postgres.ref.slice(at + 1) } },
    scheduling: {
      nodeSelector: { 'kubernetes.io/hostname': node.name },
      tolerations: [{ key: realNodeLabel, operator: 'Equal', value: 'true', effect: 'NoSchedule' }],
    },
  });
  const rendered = await renderSystemChart('helm', ns.install, systemValues);
  apiUrl = apiUrlOf(rendered);
  for (const object of rendered) {
    if (object.kind === 'NetworkPolicy') {
      policies.push(object as V1NetworkPolicy);
      continue;
    }
    if (!appliedKinds.has(object.kind ?? '')) continue;
    // The orchestrator and the job runner share the API's policy rules (svc.egress); the API
    // alone proves them and leaves the two cores to the rest.
    if (object.kind === 'Deployment' && object.metadata?.name !== 'svc-api') continue;
    if (object.kind === 'StatefulSet') withEmptyDirData(object as V1StatefulSet);
    await objects.create(typed(object));
    if (!object.metadata?.namespace) clusterScoped.push(object);
  }

  // Two tenants of this install: their namespaces carry the labels svc gives them, their
  // policies come from the tenant chart with the values svc renders (adapter.apiUrl is the
  // system chart's SVC_API_URL, networkPolicies.installNamespace this install's namespace).
  for (const [key, slug] of [
    ['a', 'alpha'],
    ['b', 'bravo'],
  ] as const) {
    const tenantId = randomUUID();
    const facts = { ...install, namespace: ns.install, serviceAccount: 'svc' };
    await core.patchNamespace(
      { name: ns[key], body: { metadata: { labels: namespaceLabels(tenantId, facts) } } },
      mergePatch,
    );
    policies.push(...(await tenantPolicies(ns[key], tenantId, slug, facts, apiUrl, version)));
  }

  const tenant = (name: string) => ({
    'app.kubernetes.io/name': name,
    'app.kubernetes.io/instance': release,
  });
  const standIns: [string, V1Pod][] = [
    ['adapter', standInPod(node, ns.a, 'adapter', tenant('svc-adapter'))],
    ['other', standInPod(node, ns.a, 'cases', tenant('cases-server'))],
    ['indexerA', standInPod(node, ns.a, 'indexer', tenant('monitor-indexer'), 9200)],
    ['indexerB', standInPod(node, ns.b, 'indexer', tenant('monitor-indexer'), 9200)],
    ['plain', standInPod(node, ns.install, 'plain', { app: 'plain' })],
  ];
  for (const [, body] of standIns) {
    await core.createNamespacedPod({ namespace: body.metadata?.namespace ?? '', body });
  }
  for (const [role, body] of standIns) {
    const { name = '', namespace = '' } = body.metadata ?? {};
    const pod = await waitOnNode(`Pod ${namespace}/${name} Ready`, () =>
      readyPod(core, namespace, name),
    );
    pods[role] = { pod, netns: await podNetns(node, pod) };
  }
  // svc's API migrates the database before it serves, and reports Ready (/healthz) only with
  // the database answering: the slowest part of the file.
  const waited = performance.now();
  for (const [role, component] of [
    ['database', 'database'],
    ['api', 'api'],
  ] as const) {
    const pod = await waitOnNode(
      `svc's ${component} Pod Ready`,
      async () => {
        const list = await core.listNamespacedPod({
          namespace: ns.install,
          labelSelector: `app.kubernetes.io/component=${component}`,
        });
        const name = list.items[0]?.metadata?.name;
        return name ? readyPod(core, ns.install, name) : undefined;
      },
      300_000,
    );
    pods[role] = { pod, netns: await podNetns(node, pod) };
  }
  console.log(`svc's database and API Ready ${Math.round(performance.now() - waited)} ms later`);
  for (const name of ['svc-api', 'svc-postgres'] as const) {
    const service = await core.readNamespacedService({ name, namespace: ns.install });
    services[name === 'svc-api' ? 'api' : 'database'] = service.spec?.clusterIP ?? '';
  }
});

after(async () => {
  await listener?.stop();
  await enforcer?.stop();
  await dns?.stop();
  await node?.stop();
  await Promise.all(
    Object.values(ns)
      .filter(Boolean)
      .map((name) => core.deleteNamespace({ name }).catch(() => undefined)),
  );
  for (const object of clusterScoped) await objects.delete(object).catch(() => undefined);
  console.log(`policies test file took ${Math.round(performance.now() - started)} ms`);
});

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * A rendered object as the client's model holds it. The typed clients serialize from the model,
 * whose field for a rule's `from` is `_from`: a rendered policy passed as is would reach the API
 * server with every ingress rule's peers dropped, i.e. "from anywhere".
 */
function typed<T extends KubernetesObject>(object: T): T {
  return loadAllYaml(JSON.stringify(object))[0] as T;
}

/** What of the system chart this file applies besides the policies (no admission, no Ingress). */
const appliedKinds = new Set([
  'ServiceAccount',
  'Secret',
  'ConfigMap',
  'Role',
  'RoleBinding',
  'ClusterRole',
  'ClusterRoleBinding',
  'Service',
  'StatefulSet',
  'Deployment',
]);

/** The database keeps its data in an emptyDir: these checks need no volume that outlives it. */
function withEmptyDirData(statefulSet: V1StatefulSet) {
  const spec = statefulSet.spec;
  assert.ok(spec, 'the StatefulSet has a spec');
  assert.ok(spec.volumeClaimTemplates?.some((t) => t.metadata?.name === 'data'));
  delete spec.volumeClaimTemplates;
  spec.template.spec?.volumes?.push({ name: 'data', emptyDir: {} });
}

/** SVC_API_URL as the system chart sets it: the URL the tenant adapters are given. */
function apiUrlOf(rendered: KubernetesObject[]): string {
  const api = rendered.find((o) => o.kind === 'Deployment' && o.metadata?.name === 'svc-api');
  const env = (api as V1Deployment).spec?.template.spec?.containers[0]?.env ?? [];
  const url = env.find((e) => e.name === 'SVC_API_URL')?.value;
  assert.ok(url, 'the API Deployment sets SVC_API_URL');
  return url;
}

/** The tenant chart's NetworkPolicies for one tenant, rendered from svc's own values. */
async function tenantPolicies(
  namespace: string,
  tenantId: string,
  slug: string,
  facts: Parameters<typeof namespaceLabels>[1],
  apiUrl: string,
  version: string,
): Promise<V1NetworkPolicy[]> {
  const values = renderTenantValues({
    tenant: { id: tenantId, slug, displayName: slug },
    config: { slug, display_name: slug } as never,
    install: facts,
    settings: {
      adapterImage: { repository: 'localhost/svc', tag: version, digest: '' },
      apiUrl,
      storageClassName: '',
      defaultLlm: { provider: 'openai', baseUrl: 'https://llm.example.com/v1', model: 'm' },
    },
    chartDefaults: parse(await readFile(`${tenantChart}/values.yaml`, 'utf8')),
    hasLlmKey: false,
  });
  const text = await helmWithValues(
    'helm',
    [
      'template',
      release,
      tenantChart,
      '--namespace',
      namespace,
      '--show-only',
      'templates/networkpolicies.yaml',
    ],
    values as unknown as Record<string, unknown>,
  );
  return parseAllDocuments(text)
    .map((doc) => doc.toJS() as V1NetworkPolicy | null)
    .filter((doc): doc is V1NetworkPolicy => doc?.kind === 'NetworkPolicy')
    .map((p) => ({ ...p, metadata: { ...p.metadata, namespace } }));
}

/** Waits for `check`; on failure adds kube-router's and the kubelet's log tails. */
async function waitOnNode<T>(what: string, check: () => Promise<T | undefined>, ms = 90_000) {
  try {
    return await waitUntil(what, check, ms);
  } catch (error) {
    const tails = await Promise.all(['kube-router', 'kubelet'].map((c) => node.logTail(c, 25)));
    // kube-router's chains and sets at the moment of failure (the node's own dir goes at stop).
    const dump = join(tmpdir(), `svc-netpol-state-${node.name}.txt`);
    const state = await Promise.all([
      node.inNode('iptables-save', []).then((r) => r.stdout),
      node.inNode('ipset', ['list']).then((r) => r.stdout),
    ]).catch((e: unknown) => [String(e)]);
    await writeFile(dump, state.join('\n')).catch(() => undefined);
    throw new Error(`${(error as Error).message} (chains and sets: ${dump})\n${tails.join('\n')}`);
  }
}

const ip = (role: string) => pods[role]?.pod.status?.podIP ?? '';

/** One flow: from a Pod (by role) to host:port. */
type Flow = [from: string, host: () => string, port: number, what: string];

/** Waits until the flow connects (or until it does not: kube-router syncs asynchronously). */
function expectFlow(flow: Flow, connects: boolean) {
  return expectFlows([flow], connects);
}

/**
 * Waits until every flow connects (or none does), probing each source Pod's flows at once;
 * the error names the flows that still disagree.
 */
async function expectFlows(flows: readonly Flow[], connects: boolean) {
  const sources = [...new Set(flows.map(([from]) => from))];
  await Promise.all(
    sources.map(async (from) => {
      const mine = flows.filter(([source]) => source === from);
      let wrong: string[] = [];
      let probes = 0;
      const since = performance.now();
      await waitOnNode(
        `${mine.length} flows from ${from} ${connects ? 'open' : 'refused'}`,
        async () => {
          const got = await connectManyFrom(
            pods[from]?.netns ?? '',
            mine.map(([, host, port]) => [host(), port] as const),
          );
          wrong = mine
            .map(([, host, port, what], i) => `${what} (${host()}:${port}): ${got[i]}`)
            .filter((_, i) => (got[i] === 'connected') !== connects);
          probes += 1;
          if (probes === 1 && wrong.length > 0) console.log(`first probe from ${from}: ${wrong}`);
          return wrong.length === 0 ? got : undefined;
        },
      ).catch((error: Error) => {
        throw new Error(`${error.message}\nstill wrong: ${wrong.join('; ')}`);
      });
      console.log(
        `${mine.length} flows from ${from} ${connects ? 'open' : 'refused'} after ` +
          `${probes} probes, ${Math.round(performance.now() - since)} ms`,
      );
    }),
  );
}

const toNode = () => nodeAddress;
/** Flows the policies refuse; each is open without them (the first and the last test). */
const refused: Flow[] = [
  ['adapter', () => ip('indexerB'), 9200, "tenant A's adapter to tenant B's indexer"],
  ['adapter', () => ip('database'), 5432, "tenant A's adapter to svc's database Pod"],
  ['adapter', () => services.database, 5432, "tenant A's adapter to svc's database Service"],
  ['adapter', toNode, outboundPort, "tenant A's adapter to a host outside its allow-list"],
  ['other', () => services.api, 8080, "tenant A's case server to svc's API"],
  ['other', () => ip('database'), 5432, "tenant A's case server to svc's database"],
  ['plain', () => ip('database'), 5432, "a plain Pod in svc's namespace to the database"],
  ['plain', () => ip('api'), 8080, "a plain Pod in svc's namespace to the API"],
  ['api', toNode, strayPort, "svc's API to a port networkPolicies.outbound does not list"],
  ['database', toNode, outboundPort, "svc's database to anywhere"],
];
/** Flows the policies allow. */
const allowed: Flow[] = [
  ['adapter', () => ip('indexerA'), 9200, "tenant A's adapter to its own indexer"],
  ['adapter', () => services.api, 8080, "tenant A's adapter to svc's API Service (SVC_API_URL)"],
  ['api', () => ip('database'), 5432, "svc's API to the database Pod"],
  ['api', () => services.database, 5432, "svc's API to the database Service"],
  ['api', toNode, outboundPort, "svc's API to networkPolicies.outbound (any address, 443)"],
  ['api', () => ip('indexerB'), 9200, "svc's API to tenant B's indexer"],
];

test('without NetworkPolicies every probed flow is open: the refusals below are the policies’ doing', async () => {
  await expectFlows([...refused, ...allowed], true);
});

test("with the system chart's and the tenant chart's policies: tenant A's adapter reaches its indexer and svc's API only; no tenant Pod reaches svc's database", async () => {
  for (const policy of policies) {
    await networking.createNamespacedNetworkPolicy({
      namespace: policy.metadata?.namespace ?? '',
      body: typed(policy),
    });
  }
  await expectFlows(
    refused.filter(([from]) => ['adapter', 'other'].includes(from)),
    false,
  );
  await expectFlows(
    allowed.filter(([from]) => from === 'adapter'),
    true,
  );
  // The adapter finds the API by SVC_API_URL's name: DNS is open to it under default-deny.
  const apiHost = new URL(apiUrl).hostname;
  const answer = await resolveInNode(pods.adapter?.netns ?? '', `${apiHost}.cluster.local`);
  assert.deepEqual('records' in answer ? answer.records : answer.error, [services.api]);
});

test("in svc's namespace: the API reaches the database and networkPolicies.outbound, nothing else reaches the database, the database reaches nothing", async () => {
  await expectFlows(
    refused.filter(([from]) => ['plain', 'api', 'database'].includes(from)),
    false,
  );
  await expectFlows(
    allowed.filter(([from]) => from === 'api'),
    true,
  );
  // The API stays Ready through its own probe (/healthz asks the database) under the policies.
  const api = pods.api?.pod.metadata?.name ?? '';
  assert.ok(await readyPod(core, ns.install, api), 'svc-api Ready under the policies');

  // networkPolicies.outbound.cidrs narrows the outbound port to the listed networks: with a
  // network that is not the node's (TEST-NET-1), 443 on the node address is refused too. The
  // kubeApiServer rule opens 443 and 6443 to any address while its cidrs are empty (the
  // default), so it is narrowed here to the API server's endpoint in this cluster as well.
  const narrowed = await renderSystemChart(
    'helm',
    ns.install,
    mergeValues(systemValues, {
      networkPolicies: {
        kubeApiServer: { cidrs: [`${nodeAddress}/32`], ports: [6443] },
        outbound: { cidrs: ['192.0.2.0/24'], ports: [outboundPort] },
      },
    }),
    ['templates/networkpolicies.yaml'],
  );
  const apiPolicy = narrowed.find((o) => o.metadata?.name === 'svc-api') as V1NetworkPolicy;
  await networking.replaceNamespacedNetworkPolicy({
    name: 'svc-api',
    namespace: ns.install,
    body: typed(apiPolicy),
  });
  await expectFlow(['api', toNode, outboundPort, "svc's API outside outbound.cidrs"], false);
  await expectFlow(['api', () => ip('database'), 5432, "svc's API to the database"], true);
});

test('removing the policies opens the refused flows again', async () => {
  for (const policy of policies) {
    await networking.deleteNamespacedNetworkPolicy({
      name: policy.metadata?.name ?? '',
      namespace: policy.metadata?.namespace ?? '',
    });
  }
  await expectFlows(refused, true);
  await expectFlow(['api', toNode, outboundPort, "svc's API to the node address"], true);
});
