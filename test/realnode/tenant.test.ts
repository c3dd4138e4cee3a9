// Issue 31: a tenant created through svc's API on a system chart installed on two linked real
// nodes. The database lives on node A (its volume pins it); svc's API, orchestrator and worker
// are placed on node B. tenants.scheduling places the tenant's adapter (svc's image) and indexer
// (the OpenSearch test image under the chart's indexer name) on A; the images this machine
// cannot build (Wazuh manager and dashboard, TheHive, Cortex) stay on kwok. While the tenant
// provisions, B is drained: svc's Pods come back on A and the new orchestrator finishes the
// provisioning; the adapter Pod trades its bootstrap credential, heartbeats, and the tenant
// becomes active. An alert written into the indexer Pod as the manager's Filebeat writes it
// reaches svc as the tenant's incident. docs/test-cluster.md "svc's system chart on the real
// node" and "Two nodes and a drain". About 7 min on a loaded machine.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { CoreV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { loopbackFetch } from '../../scripts/demo/loopback-fetch.ts';
import { PROVISIONING_STEPS } from '../../src/domains/provisioning/provisioning-types.ts';
import { INDEXER_TLS_SECRET } from '../../src/orchestrator/indexer-pki.ts';
import { importIndexerImage } from '../../testcluster/images/indexer-image.ts';
import { realNodeLabel } from '../../testcluster/node/configs.ts';
import { type ClusterDns, startClusterDns } from '../../testcluster/node/dns.ts';
import { drainNode } from '../../testcluster/node/drain.ts';
import { connectRealNodes, type NodeLink } from '../../testcluster/node/link.ts';
import { type RealNode, startRealNode } from '../../testcluster/node/real-node.ts';
import { createNodeVolume, type NodeVolume } from '../../testcluster/node/volumes.ts';
import {
  indexAlerts,
  installWazuhTemplate,
  type OpenSearchTarget,
} from '../../testcluster/opensearch/alert-index.ts';
import { wazuhAlert } from '../../testcluster/stand-ins/wazuh-alerts.ts';
import { testStorageClass } from '../../testcluster/volumes.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';
import {
  installSystemOnRealNode,
  namespaceDiagnostics,
  ready,
  type SystemInstall,
} from './fixtures/system-install.ts';

const run = promisify(execFile);
const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const started = performance.now();
const slug = `rn${randomBytes(3).toString('hex')}`;
const tenantNamespace = `tenant-${slug}`;
/** A label the tenant's adapter Pod selects besides node A's hostname: set after the drain. */
const adapterGate = 'svc.test/adapter-gate';

/** The database, the tenant's adapter and indexer, and svc's Pods after the drain. */
let node: RealNode;
/** svc's API, orchestrator and worker until the drain. */
let nodeB: RealNode;
const dns: ClusterDns[] = [];
let link: NodeLink | undefined;
let install: SystemInstall;
let indexerVolume: NodeVolume;
let admin: SvcClient;
/** The tenant the first test creates; the alert test writes into its indexer. */
let tenantId: string | undefined;

before(async () => {
  // One after the other: each node picks a Pod /24 no registered node uses.
  node = await startRealNode(cluster, { timeoutMs: 180_000 });
  nodeB = await startRealNode(cluster, { timeoutMs: 180_000 });
  // Each node its own CoreDNS: the kube-dns Service keeps DNS on the asking Pod's node.
  for (const n of [node, nodeB]) {
    dns.push(await startClusterDns({ kubeconfigPath: cluster.kubeconfigPath, node: n }));
  }
  link = await connectRealNodes(node, nodeB);
  await importIndexerImage(node);
  const onRealNode = {
    nodeSelector: { 'kubernetes.io/hostname': node.name },
    tolerations: [{ key: realNodeLabel, operator: 'Equal', value: 'true', effect: 'NoSchedule' }],
  };
  install = await installSystemOnRealNode({
    cluster,
    node,
    nodes: [node, nodeB],
    placeOn: nodeB,
    values: {
      tenants: {
        scheduling: {
          nodeSelector: {},
          tolerations: [],
          workloads: {
            // The adapter also waits for a label the test puts on A after the drain (below).
            'svc-adapter': {
              ...onRealNode,
              nodeSelector: { ...onRealNode.nodeSelector, [adapterGate]: slug },
            },
            'monitor-indexer': onRealNode,
          },
        },
      },
    },
  });
  // The indexer's claim (default class svc-test) gets a directory on the node its uid owns.
  indexerVolume = await createNodeVolume(cluster.kubeConfig, {
    node,
    namespace: tenantNamespace,
    claim: 'data-monitor-indexer-0',
    uid: 1000,
    gid: 1000,
    size: '50Gi',
    storageClassName: testStorageClass,
  });
  admin = await signInAsAdmin();
  console.log(
    `real nodes Ready after ${node.readyAfterMs} / ${nodeB.readyAfterMs} ms, CoreDNS after ` +
      `${dns.map((d) => d.readyAfterMs).join(' / ')} ms, svc-system Ready after ` +
      `${install.readyAfterMs} ms (${JSON.stringify(install.componentsReadyAfterMs)})`,
  );
});

after(async () => {
  await core.deleteNamespace({ name: tenantNamespace }).catch(() => undefined);
  await indexerVolume?.remove();
  await install?.uninstall();
  for (const d of dns) await d.stop();
  await link?.disconnect().catch(() => undefined);
  await nodeB?.stop();
  await node?.stop();
  console.log(`tenant test file took ${Math.round(performance.now() - started)} ms`);
});

/** The first platform admin, made as an operator does (`svc auth create-admin` in the API Pod). */
async function signInAsAdmin(): Promise<SvcClient> {
  const pods = await core.listNamespacedPod({
    namespace: install.namespace,
    labelSelector: 'app.kubernetes.io/component=api',
  });
  const pod = pods.items[0];
  const containerId = (pod?.status?.containerStatuses?.[0]?.containerID ?? '').replace(
    'containerd://',
    '',
  );
  const on = [node, nodeB].find((n) => n.name === pod?.spec?.nodeName);
  assert.ok(on, `the API Pod on ${pod?.spec?.nodeName}, not one of the test's nodes`);
  const email = 'admin@example.com';
  const { stdout } = await run('ctr', [
    '--address',
    on.containerdSocket,
    '--namespace',
    'k8s.io',
    'tasks',
    'exec',
    '--exec-id',
    `admin${process.pid}`,
    containerId,
    'svc',
    'auth',
    'create-admin',
    '--email',
    email,
    '--generate',
  ]);
  // "…; password (shown once; must be changed at next sign-in):" then the password.
  assert.match(stdout, /shown once/);
  const initial = stdout.trim().split('\n').at(-1) ?? '';
  const client = createSvcClient({
    baseUrl: install.apiUrl,
    headers: { origin: 'https://mssp.example.com' },
    fetch: loopbackFetch,
  });
  const login = await client.auth.login({ body: { email, password: initial } });
  assert.equal(login.status, 200, JSON.stringify(login.body));
  if (login.status === 200 && login.body.must_change) {
    const changed = await client.auth.changePassword({
      body: { current_password: initial, new_password: `rn-${randomBytes(12).toString('hex')}` },
    });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
  }
  return client;
}

async function tenantPod(workload: string): Promise<V1Pod | undefined> {
  const pods = await core.listNamespacedPod({ namespace: tenantNamespace });
  return pods.items.find((p) => p.metadata?.name?.startsWith(`${workload}-`));
}

/** svc's own Pods of the install (API, orchestrator, worker), those not terminating. */
async function svcPods(): Promise<V1Pod[]> {
  const pods = await core.listNamespacedPod({ namespace: install.namespace });
  return pods.items.filter(
    (p) => svcComponents.includes(component(p)) && p.metadata?.deletionTimestamp === undefined,
  );
}
const svcComponents = ['api', 'orchestrator', 'worker'];
const component = (pod: V1Pod) => pod.metadata?.labels?.['app.kubernetes.io/component'] ?? '';
const placement = (pods: V1Pod[]) => pods.map((p) => `${component(p)}@${p.spec?.nodeName}`).sort();

test("issue 31: a tenant created through the API on a two-node install, svc's node drained mid-provisioning: svc's Pods come back on the other node, the new orchestrator finishes, the adapter heartbeats, the tenant turns active", async () => {
  const diagnostics = async () =>
    `${await namespaceDiagnostics(core, [node, nodeB], tenantNamespace)}\n--- svc-system ---\n${await install.diagnostics()}`;
  const first = await svcPods();
  assert.deepEqual(
    placement(first),
    svcComponents.map((c) => `${c}@${nodeB.name}`),
  );
  const database = (
    await core.listNamespacedPod({
      namespace: install.namespace,
      labelSelector: 'app.kubernetes.io/component=database',
    })
  ).items;
  assert.deepEqual(
    database.map((p) => p.spec?.nodeName),
    [node.name],
    'the database on A, by its volume',
  );

  // The tenant's adapter cannot start before A carries the adapter gate, set after the drain,
  // so the package cannot be Ready before it: the drain lands mid-provisioning however fast
  // the machine is, while the indexer (the slow one) boots on A meanwhile.
  const created = await admin.mssp.createTenant({
    body: {
      slug,
      display_name: `Real node ${slug}`,
      branding: { app_name: 'Real SOC', primary_color: '#112233', secondary_color: '#abcdef' },
      llm: {
        provider: 'openai',
        base_url: 'https://llm.example.test/v1',
        model: 'gpt-x',
        api_key: `sk-${randomBytes(12).toString('hex')}`,
      },
    },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  if (created.status !== 201) return;
  const id = created.body.tenant.id;
  tenantId = id;
  const createdAt = performance.now();
  const getTenant = async () => {
    const res = await admin.mssp.getTenant({ params: { tenant_id: id } });
    if (res.status !== 200) return undefined;
    if (res.body.tenant.state === 'pending' && res.body.tenant.error_details) {
      throw new Error(`provisioning failed: ${JSON.stringify(res.body.tenant.error_details)}`);
    }
    return res;
  };
  const midway = await waitUntil(
    'the tenant provisioning (package installed, awaiting readiness)',
    async () => {
      const res = await getTenant();
      return res?.status === 200 && res.body.tenant.state === 'provisioning' ? res : undefined;
    },
    180_000,
  ).catch(async (error) => {
    throw new Error(`${(error as Error).message}\n${await diagnostics()}`);
  });
  if (midway.status !== 200) return;
  await core.readNamespace({ name: tenantNamespace });
  assert.ok(
    !midway.body.lifecycle.some((e) => e.step === 'package_ready'),
    'the package not Ready before the drain',
  );
  assert.notEqual(midway.body.tenant.state, 'active');
  console.log(`tenant provisioning ${Math.round(performance.now() - createdAt)} ms after creation`);

  const drainStarted = performance.now();
  // CoreDNS on B is a bare Pod (force); svc's Pods keep nothing in emptyDirs that matters.
  const drained = await drainNode(cluster.kubeConfig, nodeB.name, {
    force: true,
    deleteEmptyDirData: true,
    timeoutMs: 180_000,
  });
  const drainedAt = new Date();
  console.log(
    `B drained in ${drained.tookMs} ms (${drained.refusals} refusals): ${drained.evicted.join(', ')}`,
  );
  for (const pod of first) {
    assert.ok(
      drained.evicted.includes(`${install.namespace}/${pod.metadata?.name}`),
      `${pod.metadata?.name} evicted`,
    );
  }
  // No PodDisruptionBudget covers svc's one-replica Deployments (the chart has one only for an
  // edge proxy of two or more replicas): nothing refused.
  assert.equal(drained.refusals, 0);
  await core.patchNode(
    { name: node.name, body: { metadata: { labels: { [adapterGate]: slug } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );

  let detail: Awaited<ReturnType<SvcClient['mssp']['getTenant']>> | undefined;
  try {
    detail = await waitUntil(
      'the tenant active with a heartbeat from its adapter',
      async () => {
        const res = await getTenant();
        return res?.status === 200 && res.body.tenant.state === 'active' && res.body.adapter
          ? res
          : undefined;
      },
      600_000,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${await diagnostics()}`);
  }
  assert.equal(detail.status, 200);
  if (detail.status !== 200) return;
  assert.ok(detail.body.adapter, 'the adapter was heard from');
  console.log(
    `tenant active ${Math.round(performance.now() - createdAt)} ms after its creation, ` +
      `${Math.round(performance.now() - drainStarted)} ms after the drain began`,
  );
  // The replacements of all three on A (the worker is not needed for the tenant: checked after).
  const moved = await waitUntil(
    "svc's API, orchestrator and worker Ready on A",
    async () => {
      const pods = (await svcPods()).filter(ready);
      return placement(pods).join() === svcComponents.map((c) => `${c}@${node.name}`).join()
        ? pods
        : undefined;
    },
    300_000,
  ).catch(async (error) => {
    throw new Error(`${(error as Error).message}\n${await diagnostics()}`);
  });
  console.log(
    `svc's Pods Ready on A ${Math.round(performance.now() - drainStarted)} ms after the drain began`,
  );
  assert.ok(moved.every((p) => !first.some((f) => f.metadata?.uid === p.metadata?.uid)));

  // Recorded after the drain, when the orchestrator that started the provisioning was gone:
  // its replacement on A resumed the readiness wait.
  const readyStep = detail.body.lifecycle.find(
    (e) => e.kind === 'step' && e.step === 'package_ready',
  );
  assert.ok(readyStep, 'package_ready recorded');
  assert.ok(
    new Date(readyStep.occurred_at) > drainedAt,
    `package_ready at ${readyStep.occurred_at}, drain done at ${drainedAt.toISOString()}`,
  );
  assert.ok(new Date(detail.body.adapter.first_seen_at) > drainedAt, 'heartbeats after the drain');
  // Resumed, not redone: every step of the flow recorded once, none rolled back or failed.
  const steps = detail.body.lifecycle.filter((e) => e.kind === 'step').map((e) => e.step);
  assert.deepEqual(
    [...PROVISIONING_STEPS].map((step) => steps.filter((s) => s === step).length),
    PROVISIONING_STEPS.map(() => 1),
    steps.join(),
  );
  assert.ok(!steps.includes('rolled_back'), steps.join());
  assert.ok(!detail.body.lifecycle.some((e) => e.kind === 'error'), 'no step failed');

  for (const workload of ['svc-adapter', 'monitor-indexer']) {
    const pod = await tenantPod(workload);
    assert.ok(pod, `${workload} Pod in ${tenantNamespace}\n${await diagnostics()}`);
    assert.equal(pod.spec?.nodeName, node.name, workload);
    assert.ok(ready(pod), `${workload} Ready`);
  }
  // Everything else of the package stays on kwok: this machine has no image for it.
  const manager = await tenantPod('monitor-manager');
  assert.ok(manager, 'the manager Pod');
  assert.ok(![node.name, nodeB.name].includes(manager.spec?.nodeName ?? ''), 'manager on kwok');
});

test("issue 31: an alert written into the indexer Pod, as the manager's Filebeat writes it, reaches svc as an incident of the tenant", async () => {
  assert.ok(tenantId, 'the tenant of the previous test');
  const id = tenantId;
  let writtenAt = 0;
  // monitor-indexer is a headless Service: the writer dials the Pod, under the Service's name.
  const pod = await core.readNamespacedPod({
    name: 'monitor-indexer-0',
    namespace: tenantNamespace,
  });
  const forward = await node.forward(pod.status?.podIP ?? '', 9200);
  try {
    const secret = await core.readNamespacedSecret({
      name: INDEXER_TLS_SECRET.name,
      namespace: tenantNamespace,
    });
    const pem = (key: string) => Buffer.from(secret.data?.[key] ?? '', 'base64').toString();
    const k = INDEXER_TLS_SECRET.keys;
    const target: OpenSearchTarget = {
      url: `https://127.0.0.1:${forward.port}`,
      servername: `monitor-indexer.${tenantNamespace}.svc`,
      ca: pem(k.ca),
      cert: pem(k.admin),
      key: pem(k.adminKey),
    };
    // What the manager's Filebeat installs first (its template and alerts pipeline): the chart
    // installs only svc's own pipeline and template.
    await installWazuhTemplate(target);
    const alert = wazuhAlert(0, {
      start: new Date(),
      stepMs: 0,
      manager: 'monitor-manager',
      kind: 0,
      agent: 0,
    });
    const day = new Date().toISOString().slice(0, 10).replaceAll('-', '.');
    await indexAlerts(target, `wazuh-alerts-4.x-${day}`, [alert], { refresh: 'wait_for' });
    writtenAt = performance.now();
  } finally {
    await forward.close();
  }
  const incidents = await waitUntil(
    'an incident of the tenant from the alert',
    async () => {
      const res = await admin.mssp.tenantIncidents({ params: { tenant_id: id }, query: {} });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.status === 200 && res.body.items.length > 0 ? res.body.items : undefined;
    },
    180_000,
  ).catch(async (error) => {
    throw new Error(
      `${(error as Error).message}\n${await namespaceDiagnostics(core, node, tenantNamespace)}`,
    );
  });
  console.log(
    `the alert an incident ${Math.round(performance.now() - writtenAt)} ms after the write`,
  );
  assert.deepEqual(
    incidents.map((i) => [i.title, i.alert_count]),
    [['sshd: brute force trying to get access to the system. Non existent user.', 1]],
  );
});
