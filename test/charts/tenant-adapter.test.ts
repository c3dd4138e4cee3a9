import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { AppsV1Api, CoreV1Api, NetworkingV1Api } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { readAdapterSettings } from '../../src/adapter/settings.ts';
import { INDEXER_TLS_SECRET } from '../../src/orchestrator/indexer-pki.ts';
import { ADAPTER_INDEXER_SECRET } from '../../src/orchestrator/indexer-security.ts';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { sampleTenantValues } from '../fixtures/tenant-values.ts';
import { getTestCluster } from '../support/cluster.ts';
import {
  assertModelled,
  connects,
  type Endpoint,
  isolating,
  type NetworkPolicy,
} from '../support/network-policies.ts';

// The tenant chart's adapter side (issue 12): `svc adapter` from svc's own image, reading the
// monitor subchart's indexer as its own read-only user over verified TLS, fenced in by NetworkPolicies
// that let it reach only the indexer, svc's API port and DNS. docs/charts-tenant.md "Adapter".

const chart = fileURLToPath(new URL('../../charts/svc-tenant', import.meta.url));
const NAMESPACE = 'tenant-acme';
const scratch = await mkdtemp(join(tmpdir(), 'svc-tenant-adapter-'));
after(() => rm(scratch, { recursive: true, force: true }));

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are walked loosely, like kubectl does
type Manifest = any;

function run(
  command: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { maxBuffer: 32 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

let files = 0;
async function render(values: unknown, namespace = NAMESPACE): Promise<Manifest[]> {
  files += 1;
  const path = join(scratch, `values-${files}.json`);
  await writeFile(path, JSON.stringify(values));
  const { code, stdout, stderr } = await run('helm', [
    'template',
    'svc-tenant',
    chart,
    '--namespace',
    namespace,
    '-f',
    path,
  ]);
  assert.equal(code, 0, stderr);
  return parseAllDocuments(stdout)
    .map((doc) => doc.toJS())
    .filter((object) => object !== null);
}

const find = (objects: Manifest[], kind: string, name: string): Manifest => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(found, `${kind}/${name} is rendered`);
  return found;
};
const policiesOf = (objects: Manifest[]): NetworkPolicy[] =>
  objects.filter((o) => o.kind === 'NetworkPolicy');

function variant(edit: (values: Manifest) => void): Manifest {
  const values: Manifest = sampleTenantValues();
  edit(values);
  return values;
}

const [sample, httpsApi, portedApi] = await Promise.all([
  render(sampleTenantValues()),
  render(variant((v) => (v.adapter.apiUrl = 'https://svc-api.svc-system.svc'))),
  render(variant((v) => (v.adapter.apiUrl = 'http://svc-api.svc-system.svc:9443/base'))),
]);
const adapterPod = find(sample, 'Deployment', 'svc-adapter').spec.template;
const adapter = adapterPod.spec.containers[0];
const env: Record<string, string> = Object.fromEntries(
  adapter.env.map((e: Manifest) => [e.name, e.value]),
);

/** A pod of this release, labelled exactly as its rendered template. */
function pod(kind: string, name: string, objects = sample): Endpoint {
  return { namespace: NAMESPACE, labels: find(objects, kind, name).spec.template.metadata.labels };
}

test('§1.2 the adapter runs svc’s own image as `svc adapter`, under the uid svc-system runs it as', () => {
  const values = sampleTenantValues();
  assert.deepEqual(adapter.command, ['svc', 'adapter']);
  assert.equal(adapter.args, undefined);
  assert.equal(adapter.image, `${values.adapter.image.repository}@${values.adapter.image.digest}`);
  assert.equal(adapterPod.spec.securityContext.runAsUser, 10001);
  assert.equal(adapter.securityContext.readOnlyRootFilesystem, true);
});

test('§1.2 the adapter’s environment: API, tenant, bootstrap and token files, the indexer of its own namespace, the probe port', () => {
  const values = sampleTenantValues();
  assert.deepEqual(env, {
    SVC_TENANT_ID: values.tenant.id,
    SVC_API_URL: values.adapter.apiUrl,
    SVC_BOOTSTRAP_DIR: '/var/run/svc/bootstrap',
    SVC_TOKEN_FILE: '/var/run/svc/token/token',
    SVC_INDEXER_URL: `https://monitor-indexer.${NAMESPACE}.svc:9200`,
    SVC_INDEXER_INDEX: 'wazuh-alerts-*',
    SVC_INDEXER_USERNAME_FILE: '/var/run/svc/indexer/username',
    SVC_INDEXER_PASSWORD_FILE: '/var/run/svc/indexer/password',
    SVC_INDEXER_CA_FILE: '/var/run/svc/indexer-ca/root-ca.pem',
    SVC_ADAPTER_PORT: '8080',
    SVC_LOG_LEVEL: 'info',
  });
  // Every value is plain: no credential travels through the environment.
  for (const e of adapter.env) assert.equal(e.valueFrom, undefined, e.name);
  // The URL names the monitor subchart's indexer Service, its port and the pods it selects.
  const service = find(sample, 'Service', 'monitor-indexer');
  const url = new URL(env.SVC_INDEXER_URL as string);
  assert.equal(url.hostname, `${service.metadata.name}.${service.metadata.namespace}.svc`);
  assert.ok(service.spec.ports.some((p: Manifest) => p.port === Number(url.port)));
  const indexerPods = pod('StatefulSet', 'monitor-indexer').labels;
  for (const [k, v] of Object.entries(service.spec.selector)) assert.equal(indexerPods[k], v, k);
  // The readiness probe asks the port the adapter is told to serve on.
  const health = adapter.ports.find(
    (p: Manifest) => p.name === adapter.readinessProbe.httpGet.port,
  );
  assert.equal(String(health.containerPort), env.SVC_ADAPTER_PORT);
});

test('§1.2 the indexer login is the adapter’s own read-only user, and the indexer CA is the only key of svc-indexer-tls it mounts, all by Secret reference', () => {
  const volume = adapterPod.spec.volumes.find((v: Manifest) => v.name === 'indexer');
  // Exactly this, so not `optional`: svc writes the Secret before installing.
  assert.equal(volume.secret.secretName, ADAPTER_INDEXER_SECRET.name);
  assert.equal(volume.secret.optional, undefined);
  assert.deepEqual(volume.secret.items, [
    { key: ADAPTER_INDEXER_SECRET.keys.username, path: 'username' },
    { key: ADAPTER_INDEXER_SECRET.keys.password, path: 'password' },
  ]);
  const mount = adapter.volumeMounts.find((m: Manifest) => m.name === 'indexer');
  assert.equal(mount.readOnly, true);
  assert.equal(mount.subPath, undefined);
  assert.equal(env.SVC_INDEXER_USERNAME_FILE, `${mount.mountPath}/username`);
  assert.equal(env.SVC_INDEXER_PASSWORD_FILE, `${mount.mountPath}/password`);

  const ca = adapterPod.spec.volumes.find((v: Manifest) => v.name === 'indexer-ca');
  assert.deepEqual(ca.secret.items, [{ key: INDEXER_TLS_SECRET.keys.ca, path: 'root-ca.pem' }]);
  assert.equal(ca.secret.secretName, INDEXER_TLS_SECRET.name);
  assert.equal(ca.secret.optional, undefined, 'required: svc writes it before installing');
  const caMount = adapter.volumeMounts.find((m: Manifest) => m.name === 'indexer-ca');
  assert.equal(caMount.readOnly, true);
  assert.equal(caMount.subPath, undefined, 'the file follows a re-issued Secret');
  assert.equal(env.SVC_INDEXER_CA_FILE, `${caMount.mountPath}/root-ca.pem`);

  // No other volume of the adapter names the indexer's key material or the admin password.
  const secretNames = JSON.stringify(adapterPod.spec.volumes);
  assert.doesNotMatch(secretNames, /monitor-bootstrap-password|indexer-key\.pem|admin-key\.pem/);
  assert.equal(adapterPod.metadata.annotations?.['svc/indexer-username'], undefined);
});

test('§1.2 `svc adapter` accepts the rendered environment once the mounted files are where the chart puts them', async () => {
  // The pod's mounts, laid out under a scratch root: same relative paths, same file names.
  const root = join(scratch, 'pod');
  const moved = (path: string) => join(root, path);
  const contents: Record<string, string> = {
    [env.SVC_INDEXER_USERNAME_FILE as string]: 'svc-adapter',
    [env.SVC_INDEXER_PASSWORD_FILE as string]: 'from-svc-adapter-indexer',
    [env.SVC_INDEXER_CA_FILE as string]: 'a PEM bundle',
    [join(env.SVC_BOOTSTRAP_DIR as string, 'credential')]: 'c',
  };
  for (const [path, text] of Object.entries(contents)) {
    await mkdir(dirname(moved(path)), { recursive: true });
    await writeFile(moved(path), text);
  }
  const fileVars = [
    'SVC_BOOTSTRAP_DIR',
    'SVC_TOKEN_FILE',
    'SVC_INDEXER_USERNAME_FILE',
    'SVC_INDEXER_PASSWORD_FILE',
    'SVC_INDEXER_CA_FILE',
  ];
  const podEnv = Object.fromEntries(
    Object.entries(env).map(([k, v]) => [k, fileVars.includes(k) ? moved(v) : v]),
  );
  const settings = readAdapterSettings(podEnv);
  assert.equal(settings.indexer.url, env.SVC_INDEXER_URL);
  assert.equal(settings.indexer.index, 'wazuh-alerts-*');
  assert.equal(settings.indexer.ca, 'a PEM bundle', 'the adapter trusts the mounted CA');
  assert.equal(settings.port, 8080);
  assert.equal(settings.apiUrl, env.SVC_API_URL);
  assert.equal(settings.tenantId, env.SVC_TENANT_ID);
});

test('§1.2 the adapter’s policies allow exactly: egress to the indexer on 9200, to the install namespace on the API port; DNS; no ingress', () => {
  const policies = policiesOf(sample);
  const self = pod('Deployment', 'svc-adapter');
  const egress = isolating(policies, self, 'Egress').flatMap((p) =>
    (p.spec.egress ?? []).map((rule) => ({ policy: p.metadata.name, ...rule })),
  );
  const installNamespace = { 'kubernetes.io/metadata.name': 'svc-system' };
  assert.deepEqual(
    egress.sort((a, b) => a.policy.localeCompare(b.policy)),
    [
      {
        policy: 'allow-dns',
        to: [
          { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } },
        ],
        ports: [
          { protocol: 'UDP', port: 53 },
          { protocol: 'TCP', port: 53 },
        ],
      },
      {
        policy: 'svc-adapter',
        to: [
          {
            podSelector: {
              matchLabels: {
                'app.kubernetes.io/name': 'monitor-indexer',
                'app.kubernetes.io/instance': 'svc-tenant',
              },
            },
          },
        ],
        ports: [{ protocol: 'TCP', port: 9200 }],
      },
      {
        policy: 'svc-adapter',
        to: [{ namespaceSelector: { matchLabels: installNamespace } }],
        ports: [{ protocol: 'TCP', port: 8080 }],
      },
    ],
  );
  const ingress = isolating(policies, self, 'Ingress');
  assert.deepEqual(ingress.map((p) => p.metadata.name).sort(), ['default-deny', 'svc-adapter']);
  assert.deepEqual(
    ingress.flatMap((p) => p.spec.ingress ?? []),
    [],
  );
});

const outside: Endpoint = { namespace: undefined, labels: {} };
const api: Endpoint = {
  namespace: 'svc-system',
  labels: { 'app.kubernetes.io/name': 'svc', 'app.kubernetes.io/component': 'api' },
};
const dns: Endpoint = { namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } };
const otherTenant: Endpoint = { namespace: 'tenant-other', labels: {} };

test('§1.2 flows: the adapter reaches the indexer, svc’s API and DNS only, and nothing reaches it', () => {
  const policies = policiesOf(sample);
  assertModelled(policies);
  const self = pod('Deployment', 'svc-adapter');
  const indexer = pod('StatefulSet', 'monitor-indexer');
  const allowed: Array<[string, Endpoint, number, ('TCP' | 'UDP')?]> = [
    ['indexer 9200', indexer, 9200],
    ['API 8080', api, 8080],
    ['DNS udp', dns, 53, 'UDP'],
    ['DNS tcp', dns, 53, 'TCP'],
  ];
  for (const [what, to, port, protocol] of allowed)
    assert.equal(connects(policies, self, to, port, protocol), true, `adapter -> ${what}`);
  const denied: Array<[string, Endpoint, number]> = [
    ['indexer transport 9300', indexer, 9300],
    ['manager API 55000', pod('StatefulSet', 'monitor-manager'), 55000],
    ['manager events 1514', pod('StatefulSet', 'monitor-manager'), 1514],
    ['dashboard', pod('Deployment', 'monitor-dashboard'), 5601],
    ['cases', pod('Deployment', 'cases'), 9000],
    ['cases store', pod('StatefulSet', 'cases-store'), 9042],
    ['analysis', pod('Deployment', 'analysis'), 9001],
    ['analysis search', pod('StatefulSet', 'analysis-search'), 9200],
    ['install namespace, not the API port', api, 5432],
    ['another tenant', otherTenant, 8080],
    ['the internet (LLM)', outside, 443],
    ['kube-system, not DNS', dns, 443],
  ];
  for (const [what, to, port] of denied)
    assert.equal(connects(policies, self, to, port), false, `adapter -> ${what}`);
  const callers: Array<[string, Endpoint]> = [
    ['indexer', indexer],
    ['manager', pod('StatefulSet', 'monitor-manager')],
    ['cases', pod('Deployment', 'cases')],
    ['install namespace', api],
    ['the internet', outside],
  ];
  for (const [what, from] of callers)
    assert.equal(connects(policies, from, self, 8080), false, `${what} -> adapter`);
});

test('§2.9 flows: the other components keep theirs (same namespace, install namespace, agents, LLM)', () => {
  const policies = policiesOf(sample);
  const manager = pod('StatefulSet', 'monitor-manager');
  const indexer = pod('StatefulSet', 'monitor-indexer');
  const kept: Array<[string, Endpoint, Endpoint, number]> = [
    ['manager -> indexer', manager, indexer, 9200],
    ['dashboard -> indexer', pod('Deployment', 'monitor-dashboard'), indexer, 9200],
    ['dashboard -> manager API', pod('Deployment', 'monitor-dashboard'), manager, 55000],
    ['cases -> cases store', pod('Deployment', 'cases'), pod('StatefulSet', 'cases-store'), 9042],
    ['cases -> analysis', pod('Deployment', 'cases'), pod('Deployment', 'analysis'), 9001],
    [
      'analysis -> search',
      pod('Deployment', 'analysis'),
      pod('StatefulSet', 'analysis-search'),
      9200,
    ],
    ['install namespace -> dashboard', api, pod('Deployment', 'monitor-dashboard'), 5601],
    ['cases -> install namespace', pod('Deployment', 'cases'), api, 8080],
    ['agents -> manager events', outside, manager, 1514],
    ['agents -> manager enrollment', outside, manager, 1515],
    ['analysis -> LLM', pod('Deployment', 'analysis'), outside, 443],
    ['cases -> DNS', pod('Deployment', 'cases'), dns, 53],
  ];
  for (const [what, from, to, port] of kept)
    assert.equal(connects(policies, from, to, port), true, what);
  assert.equal(connects(policies, outside, indexer, 9200), false, 'the internet -> indexer');
  assert.equal(connects(policies, otherTenant, indexer, 9200), false, 'another tenant -> indexer');
});

test('§1.2 the flow checks can fail: with the adapter back in allow-same-namespace, it reaches the manager', () => {
  const policies = structuredClone(policiesOf(sample));
  const open = policies.find((p) => p.metadata.name === 'allow-same-namespace') as NetworkPolicy;
  open.spec.podSelector = {};
  const self = pod('Deployment', 'svc-adapter');
  // One end alone still holds: the manager admits no adapter while the peers exclude it.
  assert.equal(connects(policies, self, pod('StatefulSet', 'monitor-manager'), 55000), false);
  for (const rule of [...(open.spec.ingress ?? []), ...(open.spec.egress ?? [])])
    for (const peer of [...(rule.from ?? []), ...(rule.to ?? [])]) peer.podSelector = {};
  assert.equal(connects(policies, self, pod('StatefulSet', 'monitor-manager'), 55000), true);
});

test('§1.2 the API port the adapter may reach follows adapter.apiUrl (80/443 by scheme when absent)', () => {
  const apiPort = (objects: Manifest[]) =>
    find(objects, 'NetworkPolicy', 'svc-adapter').spec.egress[1].ports[0].port;
  assert.equal(apiPort(sample), 8080);
  assert.equal(apiPort(httpsApi), 443);
  assert.equal(apiPort(portedApi), 9443);
  assert.equal(
    connects(policiesOf(httpsApi), pod('Deployment', 'svc-adapter', httpsApi), api, 8080),
    false,
  );
});

test('§9.5.1 helm installs the package into the kube-apiserver, which stores the adapter’s policies and pod spec as rendered', {
  timeout: 120_000,
}, async () => {
  const cluster = getTestCluster();
  const namespace = await createTestNamespace(cluster, 'chart-adapter');
  after(() =>
    cluster.kubeConfig
      .makeApiClient(CoreV1Api)
      .deleteNamespace({ name: namespace })
      .then(() => undefined),
  );
  const path = join(scratch, 'install.json');
  await writeFile(path, JSON.stringify(sampleTenantValues()));
  // As svc installs it (src/cluster): helm itself sends the objects, no client re-serializes them.
  const install = await run('helm', [
    'install',
    'svc-tenant',
    chart,
    '--namespace',
    namespace,
    '-f',
    path,
    '--kubeconfig',
    cluster.kubeconfigPath,
  ]);
  assert.equal(install.code, 0, install.stderr);
  const objects = await render(sampleTenantValues(), namespace);

  const networking = cluster.kubeConfig.makeApiClient(NetworkingV1Api);
  const stored = await networking.listNamespacedNetworkPolicy({ namespace });
  assert.deepEqual(
    stored.items.map((p) => p.metadata?.name).sort(),
    policiesOf(objects)
      .map((p) => p.metadata.name)
      .sort(),
  );
  for (const policy of stored.items) {
    const name = policy.metadata?.name as string;
    const rendered = find(objects, 'NetworkPolicy', name);
    // The client's model names `from` as `_from`; an empty rule list comes back absent.
    const rules = (list: Manifest[] | undefined, side: 'from' | 'to') =>
      (list ?? []).map((r) => ({ peers: r[side] ?? r[`_${side}`], ports: r.ports }));
    const back = JSON.parse(JSON.stringify(policy.spec));
    assert.deepEqual(back.podSelector, rendered.spec.podSelector, name);
    assert.deepEqual(back.policyTypes, rendered.spec.policyTypes, name);
    assert.deepEqual(rules(back.ingress, 'from'), rules(rendered.spec.ingress, 'from'), name);
    assert.deepEqual(rules(back.egress, 'to'), rules(rendered.spec.egress, 'to'), name);
  }
  const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
  const deployment = await apps.readNamespacedDeployment({ name: 'svc-adapter', namespace });
  const spec = deployment.spec?.template.spec;
  assert.deepEqual(spec?.containers[0]?.command, ['svc', 'adapter']);
  const volume = spec?.volumes?.find((v) => v.name === 'indexer');
  assert.equal(volume?.secret?.secretName, ADAPTER_INDEXER_SECRET.name);
  assert.equal(volume?.secret?.defaultMode, 0o440, 'the octal mode reached the API as such');
  const ca = spec?.volumes?.find((v) => v.name === 'indexer-ca');
  assert.equal(ca?.secret?.secretName, INDEXER_TLS_SECRET.name);
  assert.deepEqual(
    ca?.secret?.items?.map(({ key, path }) => ({ key, path })),
    [{ key: 'root-ca.pem', path: 'root-ca.pem' }],
  );
});
