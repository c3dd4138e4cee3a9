// Issue 31: a tenant created through svc's API on a system chart installed on a real node.
// tenants.scheduling places the tenant's adapter (svc's image) and indexer (the OpenSearch test
// image under the chart's indexer name) on the real node; the images this machine cannot build
// (Wazuh manager and dashboard, TheHive, Cortex) stay on kwok. The adapter Pod trades its
// bootstrap credential, heartbeats, and the tenant becomes active; an alert written into the
// indexer Pod as the manager's Filebeat writes it reaches svc as the tenant's incident.
// docs/test-cluster.md "svc's system chart on the real node". About 7 min on a loaded machine.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { loopbackFetch } from '../../scripts/demo/loopback-fetch.ts';
import { INDEXER_TLS_SECRET } from '../../src/orchestrator/indexer-pki.ts';
import { importIndexerImage } from '../../testcluster/images/indexer-image.ts';
import { realNodeLabel } from '../../testcluster/node/configs.ts';
import { type ClusterDns, startClusterDns } from '../../testcluster/node/dns.ts';
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

let node: RealNode;
let dns: ClusterDns;
let install: SystemInstall;
let indexerVolume: NodeVolume;
let admin: SvcClient;
/** The tenant the first test creates; the alert test writes into its indexer. */
let tenantId: string | undefined;

before(async () => {
  node = await startRealNode(cluster, { timeoutMs: 180_000 });
  dns = await startClusterDns({ kubeconfigPath: cluster.kubeconfigPath, node });
  await importIndexerImage(node);
  const onRealNode = {
    nodeSelector: { 'kubernetes.io/hostname': node.name },
    tolerations: [{ key: realNodeLabel, operator: 'Equal', value: 'true', effect: 'NoSchedule' }],
  };
  install = await installSystemOnRealNode({
    cluster,
    node,
    values: {
      tenants: {
        scheduling: {
          nodeSelector: {},
          tolerations: [],
          workloads: { 'svc-adapter': onRealNode, 'monitor-indexer': onRealNode },
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
    `real node Ready after ${node.readyAfterMs} ms, CoreDNS after ${dns.readyAfterMs} ms, ` +
      `svc-system Ready after ${install.readyAfterMs} ms`,
  );
});

after(async () => {
  await core.deleteNamespace({ name: tenantNamespace }).catch(() => undefined);
  await indexerVolume?.remove();
  await install?.uninstall();
  await dns?.stop();
  await node?.stop();
  console.log(`tenant test file took ${Math.round(performance.now() - started)} ms`);
});

/** The first platform admin, made as an operator does (`svc auth create-admin` in the API Pod). */
async function signInAsAdmin(): Promise<SvcClient> {
  const pods = await core.listNamespacedPod({
    namespace: install.namespace,
    labelSelector: 'app.kubernetes.io/component=api',
  });
  const containerId = (pods.items[0]?.status?.containerStatuses?.[0]?.containerID ?? '').replace(
    'containerd://',
    '',
  );
  const email = 'admin@example.com';
  const { stdout } = await run('ctr', [
    '--address',
    node.containerdSocket,
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

test('issue 31: a tenant created through the API on a real-node install: adapter and indexer on the real node, the adapter heartbeats, the tenant turns active', async () => {
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
  const diagnostics = async () =>
    `${await namespaceDiagnostics(core, node, tenantNamespace)}\n--- svc-system ---\n${await install.diagnostics()}`;
  let detail: Awaited<ReturnType<SvcClient['mssp']['getTenant']>> | undefined;
  try {
    detail = await waitUntil(
      'the tenant active with a heartbeat from its adapter',
      async () => {
        const res = await admin.mssp.getTenant({ params: { tenant_id: id } });
        if (res.status !== 200) return undefined;
        if (res.body.tenant.state === 'pending' && res.body.tenant.error_details) {
          throw new Error(`provisioning failed: ${JSON.stringify(res.body.tenant.error_details)}`);
        }
        return res.body.tenant.state === 'active' && res.body.adapter ? res : undefined;
      },
      600_000,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${await diagnostics()}`);
  }
  assert.equal(detail.status, 200);
  if (detail.status !== 200) return;
  assert.ok(detail.body.adapter, 'the adapter was heard from');
  console.log(`tenant active ${Math.round(performance.now() - createdAt)} ms after its creation`);

  for (const workload of ['svc-adapter', 'monitor-indexer']) {
    const pod = await tenantPod(workload);
    assert.ok(pod, `${workload} Pod in ${tenantNamespace}\n${await diagnostics()}`);
    assert.equal(pod.spec?.nodeName, node.name, workload);
    assert.ok(ready(pod), `${workload} Ready`);
  }
  // Everything else of the package stays on kwok: this machine has no image for it.
  const manager = await tenantPod('monitor-manager');
  assert.ok(manager, 'the manager Pod');
  assert.notEqual(manager.spec?.nodeName, node.name);
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
