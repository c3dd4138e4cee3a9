// Issue 31: a tenant's indexer Pod on the real node, as the tenant chart runs it. The monitor
// subchart's indexer objects (helm template of charts/svc-tenant for values svc renders) and the
// Secrets svc's orchestrator code writes for them (svc-bootstrap's admin password, the indexer
// PKI and users) go into a fresh namespace; the StatefulSet's Pod runs the OpenSearch test image
// under the chart's image name (testcluster/images/indexer-image.ts), Ready by the chart's own
// probes, the security-config sidecar included. Then the adapter's read-only login (the Secret
// svc gives the adapter) searches the alert indices over HTTPS verified by the tenant's CA, from
// the node's network namespace, and is refused everything else.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  CoreV1Api,
  type KubernetesObject,
  KubernetesObjectApi,
  type V1Pod,
} from '@kubernetes/client-node';
import { parse, parseAllDocuments } from 'yaml';
import { createNamespaceStore } from '../../src/cluster/namespaces.ts';
import { ensureIndexerPki, INDEXER_TLS_SECRET } from '../../src/orchestrator/indexer-pki.ts';
import {
  ADAPTER_INDEXER_SECRET,
  ALERT_INDEX_PATTERN,
  ensureIndexerUsers,
} from '../../src/orchestrator/indexer-security.ts';
import { COMPONENT_BOOTSTRAP_SECRET, renderTenantValues } from '../../src/orchestrator/render.ts';
import { createTestNamespace } from '../../testcluster/harness.ts';
import {
  type ImportedIndexerImage,
  importIndexerImage,
} from '../../testcluster/images/indexer-image.ts';
import { realNodeLabel } from '../../testcluster/node/configs.ts';
import { type RealNode, startRealNode } from '../../testcluster/node/real-node.ts';
import {
  createNodeVolume,
  type NodeVolume,
  realNodeStorageClass,
} from '../../testcluster/node/volumes.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';

const run = promisify(execFile);
const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const objectsApi = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
const tenantChart = fileURLToPath(new URL('../../charts/svc-tenant', import.meta.url));
const started = performance.now();
const TENANT_ID = '5b7e0c1d-2f3a-4b5c-8d9e-0a1b2c3d4e5f';
const POD = 'monitor-indexer-0';
const INDEX = 'wazuh-alerts-4.x-2026.11.28';

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are walked loosely, like kubectl does
type Manifest = any;

/** Where the indexer runs: only the real node, whose taint it tolerates. */
function onRealNode() {
  return {
    nodeSelector: { 'kubernetes.io/hostname': node.name },
    tolerations: [
      {
        key: realNodeLabel,
        operator: 'Equal' as const,
        value: 'true',
        effect: 'NoSchedule' as const,
      },
    ],
  };
}

let node: RealNode;
let image: ImportedIndexerImage;
let namespace = '';
let scratch = '';
let volume: NodeVolume | undefined;
let pod: V1Pod;
/** Files curl reads (it runs in the node's network namespace, on the host's filesystem). */
const files = { ca: '', adminCert: '', adminKey: '' };
let adapterLogin: { username: string; password: string };
let adminLogin: { username: string; password: string };

/**
 * The values svc renders for a tenant (src/orchestrator/render.ts), over the chart's defaults:
 * the indexer placed on the real node (whose taint it tolerates) by the tenant package's
 * `scheduling` (system chart `tenants.scheduling`), everything else left unplaced.
 */
async function tenantValues() {
  const chartDefaults = parse(await readFile(join(tenantChart, 'values.yaml'), 'utf8'));
  return renderTenantValues({
    tenant: { id: TENANT_ID, slug: 'realnode', displayName: 'Real node tenant' },
    config: { slug: 'realnode', display_name: 'Real node tenant' } as never,
    install: {
      msspId: TENANT_ID,
      installId: TENANT_ID,
      namespace: 'svc-system',
      serviceAccount: 'svc',
    },
    settings: {
      adapterImage: { repository: 'localhost/svc', tag: '0.0.0', digest: '' },
      apiUrl: 'http://svc.svc-system.svc:8080',
      storageClassName: realNodeStorageClass,
      scheduling: {
        nodeSelector: {},
        tolerations: [],
        workloads: { 'monitor-indexer': onRealNode() },
      },
      defaultLlm: { provider: 'openai', baseUrl: 'https://llm.example.test/v1', model: 'm' },
    },
    chartDefaults,
    hasLlmKey: false,
  });
}

/** The monitor subchart's indexer objects, as `helm template` renders them for `values`. */
async function renderIndexer(values: unknown): Promise<Manifest[]> {
  const valuesFile = join(scratch, 'values.json');
  await writeFile(valuesFile, JSON.stringify(values));
  const { stdout } = await run(
    'helm',
    [
      'template',
      'svc-tenant',
      tenantChart,
      '--namespace',
      namespace,
      '-f',
      valuesFile,
      '--show-only',
      'charts/monitor/templates/indexer.yaml',
    ],
    { maxBuffer: 32 * 2 ** 20 },
  );
  return parseAllDocuments(stdout)
    .map((d) => d.toJS())
    .filter(Boolean);
}

/** The kubelet's and containerd's log tails and the indexer Pod's container logs. */
async function diagnostics(): Promise<string> {
  const tails = await Promise.all(['kubelet', 'containerd'].map((c) => node.logTail(c, 20)));
  const root = join(node.dir, 'pod-logs');
  const logs = (await readdir(root, { recursive: true }).catch(() => [] as string[])).filter(
    (f) => f.includes('monitor-indexer') && f.endsWith('.log'),
  );
  for (const file of logs) {
    const text = await readFile(join(root, file), 'utf8').catch(() => '');
    tails.push(`--- ${file} ---\n${text.trimEnd().split('\n').slice(-30).join('\n')}`);
  }
  const events = await core
    .listNamespacedEvent({ namespace })
    .then((list) => list.items.map((e) => `${e.involvedObject.name} ${e.reason}: ${e.message}`))
    .catch(() => []);
  return `${tails.join('\n')}\n--- events ---\n${events.join('\n')}`;
}

async function waitOnNode<T>(what: string, check: () => Promise<T | undefined>, ms: number) {
  try {
    return await waitUntil(what, check, ms);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${await diagnostics()}`);
  }
}

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'svc-realnode-indexer-'));
  node = await startRealNode(cluster, { timeoutMs: 180_000 });
  const importStarted = performance.now();
  image = await importIndexerImage(node);
  console.log(
    `real node Ready after ${node.readyAfterMs} ms; indexer image ${image.ref} imported in ` +
      `${Math.round(performance.now() - importStarted)} ms`,
  );
  namespace = await createTestNamespace(cluster, 'tenant-indexer');

  // The Secrets svc writes before installing (src/orchestrator/bootstrap-secrets.ts): the admin
  // password copied into svc-bootstrap, then the indexer's PKI and users from it.
  const store = createNamespaceStore(cluster.kubeConfig);
  const labels = { 'managed-by': 'svc', 'tenant-id': TENANT_ID };
  const adminPassword = randomBytes(24).toString('base64url');
  adminLogin = { username: 'admin', password: adminPassword };
  await store.putSecret(
    namespace,
    COMPONENT_BOOTSTRAP_SECRET,
    { 'monitor-bootstrap-password': adminPassword },
    labels,
  );
  await ensureIndexerPki(store, namespace, labels, new Date());
  await ensureIndexerUsers(store, namespace, adminPassword, labels);
  const tls = await store.readSecret(namespace, INDEXER_TLS_SECRET.name);
  const login = await store.readSecret(namespace, ADAPTER_INDEXER_SECRET.name);
  assert.ok(tls && login, 'svc wrote the indexer Secrets');
  adapterLogin = {
    username: login[ADAPTER_INDEXER_SECRET.keys.username] ?? '',
    password: login[ADAPTER_INDEXER_SECRET.keys.password] ?? '',
  };
  const k = INDEXER_TLS_SECRET.keys;
  files.ca = join(scratch, 'root-ca.pem');
  files.adminCert = join(scratch, 'admin.pem');
  files.adminKey = join(scratch, 'admin-key.pem');
  await writeFile(files.ca, tls[k.ca] ?? '');
  await writeFile(files.adminCert, tls[k.admin] ?? '');
  await writeFile(files.adminKey, tls[k.adminKey] ?? '', { mode: 0o600 });

  const values = await tenantValues();
  const objects = await renderIndexer(values);
  const statefulSet = objects.find((o) => o.kind === 'StatefulSet');
  assert.equal(statefulSet?.metadata.name, 'monitor-indexer');
  // The chart itself places the Pod, from the tenant's scheduling values.
  const placed = statefulSet.spec.template.spec;
  assert.deepEqual(
    { nodeSelector: placed.nodeSelector, tolerations: placed.tolerations },
    onRealNode(),
  );

  // Its data volume: a directory under the node's own, owned by the chart's uid (fsGroup does
  // not apply to it), pre-bound to the StatefulSet's claim (testcluster/node/volumes.ts).
  const claim = statefulSet.spec.volumeClaimTemplates[0];
  volume = await createNodeVolume(cluster.kubeConfig, {
    node,
    namespace,
    claim: `${claim.metadata.name}-${POD}`,
    uid: 1000,
    gid: 1000,
    size: claim.spec.resources.requests.storage,
  });
  for (const object of objects) await objectsApi.create(object as KubernetesObject);

  // When each container turned ready: the JVM's port (the indexer's probe), then the
  // sidecar's upload of svc's files (its probe), which makes the Pod Ready.
  const podStarted = performance.now();
  const readyAt: Record<string, number> = {};
  pod = await waitOnNode(
    `Pod ${POD} Ready by the chart's probes`,
    async () => {
      const current = await core.readNamespacedPod({ name: POD, namespace }).catch(() => undefined);
      for (const c of current?.status?.containerStatuses ?? []) {
        if (c.ready) readyAt[c.name] ??= Math.round(performance.now() - podStarted);
      }
      const ready = current?.status?.conditions?.some(
        (c) => c.type === 'Ready' && c.status === 'True',
      );
      return ready ? current : undefined;
    },
    420_000,
  );
  console.log(
    `indexer Pod Ready ${Math.round(performance.now() - podStarted)} ms after apply ` +
      `(containers ready after: ${JSON.stringify(readyAt)})`,
  );
  const sidecarLog = await core.readNamespacedPodLog({
    name: POD,
    namespace,
    container: 'security-config',
  });
  console.log(`security-config log:\n${sidecarLog.trimEnd()}`);
});

after(async () => {
  try {
    if (namespace) await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    await volume?.remove();
  } finally {
    // Whatever failed above, the node goes: its daemons would outlive this process.
    await node?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
    console.log(`indexer test file took ${Math.round(performance.now() - started)} ms`);
  }
});

interface Answer {
  status: number;
  body: string;
}

/**
 * An HTTPS request to the indexer from the node's network namespace, under the name the adapter
 * uses (SVC_INDEXER_URL: monitor-indexer.<namespace>.svc, which the headless Service resolves
 * to the Pod's address), verifying the node against the tenant's CA.
 */
async function indexer(
  method: string,
  path: string,
  auth: { basic: { username: string; password: string } } | { admin: true },
  body?: unknown,
): Promise<Answer> {
  const host = `monitor-indexer.${namespace}.svc`;
  const args = ['-sS', '--max-time', '30', '-o', '-', '-w', '\n%{http_code}', '-X', method];
  args.push('--cacert', files.ca, '--resolve', `${host}:9200:${pod.status?.podIP}`);
  if ('admin' in auth) args.push('--cert', files.adminCert, '--key', files.adminKey);
  else args.push('--user', `${auth.basic.username}:${auth.basic.password}`);
  if (body !== undefined) {
    args.push('-H', 'content-type: application/json', '--data-binary', JSON.stringify(body));
  }
  const { stdout } = await node.inNode('curl', [...args, `https://${host}:9200${path}`]);
  const lines = stdout.trimEnd().split('\n');
  return { status: Number(lines.at(-1)), body: lines.slice(0, -1).join('\n') };
}

test("issue 31: the tenant chart's indexer Pod runs on the real node under the chart's image name, Ready by its own probes, never pulled", async () => {
  assert.equal(pod.spec?.nodeName, node.name);
  const containers = pod.spec?.containers ?? [];
  assert.deepEqual(
    containers.map((c) => [c.name, c.image]),
    [
      ['indexer', image.chartImage],
      ['security-config', image.chartImage],
    ],
  );
  assert.equal(image.chartImage, 'wazuh/wazuh-indexer:4.9.2');
  for (const status of pod.status?.containerStatuses ?? []) {
    assert.equal(status.ready, true, status.name);
    assert.equal(status.image, image.ref, status.name);
  }
  // The kubelet found the image present for both containers and pulled nothing.
  const events = (
    await core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.name=${POD}`,
    })
  ).items;
  const present = events.filter(
    (e) => e.reason === 'Pulled' && /already present on machine/.test(e.message ?? ''),
  );
  assert.equal(present.length, 2, events.map((e) => `${e.reason}: ${e.message}`).join('\n'));
  assert.deepEqual(
    events.filter((e) => e.reason === 'Pulling' || e.reason === 'Failed'),
    [],
  );
  // The indexer's JVM runs as the chart's uid with no capabilities (found through containerd).
  const id = (pod.status?.containerStatuses ?? [])
    .find((c) => c.name === 'indexer')
    ?.containerID?.replace('containerd://', '');
  const { stdout } = await run('ctr', [
    '--address',
    node.containerdSocket,
    '--namespace',
    'k8s.io',
    'tasks',
    'ls',
  ]);
  const pid = stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .find((words) => words[0] === id)?.[1];
  assert.ok(pid, `task ${id} in\n${stdout}`);
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  assert.match(status, /^Uid:\s+1000\s+1000\s+1000\s+1000$/m);
  assert.match(status, /^CapEff:\s+0+$/m);
  assert.match(
    await readFile(`/proc/${pid}/cmdline`, 'utf8'),
    /org\.opensearch\.bootstrap\.OpenSearch/,
  );
});

test('issue 31: the adapter’s read-only login searches wazuh-alerts-* over HTTPS verified by the tenant CA, and the sidecar’s ingest pipeline stamped the alert', async () => {
  // An alert written as the manager's Filebeat writes it (the admin certificate stands in for
  // its admin login); the alert template the sidecar installed names svc's pipeline.
  const alert = {
    '@timestamp': '2026-11-28T10:00:00.000Z',
    id: '1764324000.1',
    rule: { id: '5710', level: 5, description: 'sshd: attempt to login using a non-existent user' },
    agent: { id: '001', name: 'web-1' },
  };
  const written = await indexer(
    'PUT',
    `/${INDEX}/_doc/alert-1?refresh=true`,
    { admin: true },
    alert,
  );
  assert.equal(written.status, 201, written.body);

  const search = await indexer(
    'POST',
    `/${ALERT_INDEX_PATTERN}/_search`,
    { basic: adapterLogin },
    { query: { match_all: {} } },
  );
  assert.equal(search.status, 200, search.body);
  const hits = (
    JSON.parse(search.body) as {
      hits: { hits: { _index: string; _source: Record<string, unknown> }[] };
    }
  ).hits.hits;
  assert.equal(hits.length, 1);
  const [hit] = hits;
  assert.ok(hit);
  assert.equal(hit._index, INDEX);
  assert.deepEqual(hit._source.rule, alert.rule);
  // svc_ingested_at: the chart's pipeline, applied by the sidecar as the index's final pipeline.
  assert.match(String(hit._source.svc_ingested_at), /^\d{4}-\d\d-\d\dT/);
});

test('issue 31: a wrong password gets 401, and the read-only login is refused writes and the admin APIs', async () => {
  const wrong = await indexer(
    'POST',
    `/${ALERT_INDEX_PATTERN}/_search`,
    { basic: { username: adapterLogin.username, password: `${adapterLogin.password}x` } },
    { query: { match_all: {} } },
  );
  assert.equal(wrong.status, 401, wrong.body);
  const refused = [
    ['PUT', `/${INDEX}/_doc/forged`, { rule: { id: '1' } }],
    ['DELETE', `/${INDEX}`, undefined],
    ['GET', '/_cluster/settings', undefined],
    ['GET', '/_plugins/_security/api/internalusers', undefined],
    ['POST', '/.opendistro_security/_search', { query: { match_all: {} } }],
    ['POST', '/other-index/_search', { query: { match_all: {} } }],
  ] as const;
  for (const [method, path, body] of refused) {
    const answer = await indexer(method, path, { basic: adapterLogin }, body);
    assert.equal(answer.status, 403, `${method} ${path}: ${answer.status} ${answer.body}`);
  }
  // The admin may, by certificate and by the password svc-bootstrap holds (the manager's and
  // the dashboard's login): the same security API answers both, listing svc's users only.
  for (const auth of [{ admin: true } as const, { basic: adminLogin }]) {
    const users = await indexer('GET', '/_plugins/_security/api/internalusers', auth);
    assert.equal(users.status, 200, users.body);
    assert.deepEqual(
      Object.keys(JSON.parse(users.body) as object).sort(),
      ['admin', 'kibanaserver', ADAPTER_INDEXER_SECRET.username].sort(),
    );
  }
});
