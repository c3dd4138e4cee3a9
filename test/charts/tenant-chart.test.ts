import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Compile } from 'typebox/compile';
import { parse, parseAllDocuments } from 'yaml';
import { TenantValues } from '../../contracts/tenant-values.ts';
import { sampleTenantValues } from '../fixtures/tenant-values.ts';

const chart = fileURLToPath(new URL('../../charts/svc-tenant', import.meta.url));
const SUBCHARTS = ['monitor', 'cases', 'analysis'] as const;
const NAMESPACE = 'tenant-acme';
const checkValues = Compile(TenantValues);
const scratch = await mkdtemp(join(tmpdir(), 'svc-tenant-chart-'));
after(() => rm(scratch, { recursive: true, force: true }));

type Json = Record<string, unknown>;
// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are walked loosely, like kubectl does
type Manifest = any;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function helm(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile('helm', args, { maxBuffer: 32 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

let files = 0;
/** Values go to helm as a file (JSON is YAML), never through --set, so types stay exact. */
async function valuesFile(values: unknown): Promise<string> {
  files += 1;
  const path = join(scratch, `values-${files}.json`);
  await writeFile(path, JSON.stringify(values));
  return path;
}

async function template(values: unknown, chartDir = chart): Promise<Run> {
  return helm(
    'template',
    'svc-tenant',
    chartDir,
    '--namespace',
    NAMESPACE,
    '-f',
    await valuesFile(values),
  );
}

async function render(values: unknown): Promise<Manifest[]> {
  const run = await template(values);
  assert.equal(run.code, 0, run.stderr);
  return parseAllDocuments(run.stdout)
    .map((doc) => doc.toJS())
    .filter((object) => object !== null);
}

const find = (objects: Manifest[], kind: string, name: string): Manifest => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(found, `${kind}/${name} is rendered`);
  return found;
};
const podSpecs = (objects: Manifest[]): Array<{ owner: string; spec: Manifest; labels: Json }> =>
  objects
    .filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet')
    .map((o) => ({
      owner: `${o.kind}/${o.metadata.name}`,
      spec: o.spec.template.spec,
      labels: o.spec.template.metadata.labels,
    }));

/** The sample with one change applied; `edit` may mutate the fresh copy it is given. */
function variant(edit: (values: Manifest) => void): Manifest {
  const values: Manifest = sampleTenantValues();
  edit(values);
  return values;
}

/**
 * The sample without one key. For TypeBox the key is deleted; for helm it is set to null, which
 * is how a values file removes a key that the chart's values.yaml defaults (a merely absent key
 * would silently take the default).
 */
function withoutKey(path: string, as: 'deleted' | 'null'): Manifest {
  return variant((values) => {
    const keys = path.split('.');
    const last = keys.pop() as string;
    let parent = values;
    for (const key of keys) parent = parent[key];
    if (as === 'null') parent[last] = null;
    else delete parent[last];
  });
}

// Independent renders start together: helm is the slow part of this file.
const [sample, external, edge, byTag, noPolicies, storage] = await Promise.all([
  render(sampleTenantValues()),
  render(
    variant((v) => {
      v.integrations.externalAnalyzerUrl = 'https://cortex.example.net:9443/api';
      v.analysis.enabled = false;
    }),
  ),
  render(
    variant((v) => {
      v.monitorIngress.mode = 'edge-proxy';
      v.monitorIngress.edgePorts = { events: 31514, enrollment: 31515 };
      v.monitorIngress.tls = { issuerRef: '', secretName: 'svc-enrollment-tls' };
      v.global.monitorTlsSecretName = 'svc-enrollment-tls';
    }),
  ),
  render(
    variant((v) => {
      v.adapter.image.digest = '';
    }),
  ),
  render(
    variant((v) => {
      v.networkPolicies.enabled = false;
      for (const block of [v.components.monitor, v.monitor]) block.dashboard.enabled = false;
    }),
  ),
  render(
    variant((v) => {
      v.global.storageClassName = 'fast-ssd';
    }),
  ),
]);

test('§9.5.1 helm lint --strict passes with the sample values', async () => {
  const run = await helm(
    'lint',
    '--strict',
    chart,
    '--namespace',
    NAMESPACE,
    '-f',
    await valuesFile(sampleTenantValues()),
  );
  assert.equal(run.code, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
});

test('§9.5.1 the sample values pass the TypeBox contract the schema is generated from', () => {
  assert.ok(
    checkValues.Check(sampleTenantValues()),
    JSON.stringify([...checkValues.Errors(sampleTenantValues())]),
  );
});

test('§9.5.1 render: the whole tenant data plane, every object in the release namespace', () => {
  const names = sample.map((o) => `${o.kind}/${o.metadata.name}`).sort();
  assert.deepEqual(names, [
    'ConfigMap/monitor-indexer-config',
    'ConfigMap/monitor-indexer-setup',
    'Deployment/analysis',
    'Deployment/cases',
    'Deployment/monitor-dashboard',
    'Deployment/svc-adapter',
    'LimitRange/svc-tenant-limits',
    'NetworkPolicy/allow-adapter-to-indexer',
    'NetworkPolicy/allow-dns',
    'NetworkPolicy/allow-install-namespace',
    'NetworkPolicy/allow-llm-egress',
    'NetworkPolicy/allow-monitor-agents',
    'NetworkPolicy/allow-same-namespace',
    'NetworkPolicy/default-deny',
    'NetworkPolicy/svc-adapter',
    'ResourceQuota/svc-tenant-quota',
    'Service/analysis',
    'Service/analysis-search',
    'Service/cases',
    'Service/cases-store',
    'Service/monitor',
    'Service/monitor-dashboard',
    'Service/monitor-indexer',
    'Service/monitor-manager',
    'ServiceAccount/svc-adapter',
    'StatefulSet/analysis-search',
    'StatefulSet/cases-store',
    'StatefulSet/monitor-indexer',
    'StatefulSet/monitor-manager',
  ]);
  for (const objects of [sample, external, edge, noPolicies]) {
    for (const o of objects) {
      assert.equal(o.metadata.namespace, NAMESPACE, `${o.kind}/${o.metadata.name} namespace`);
    }
  }
});

test('§2.5 every object and pod carries tenant-id, managed-by=svc, the namespace labels and the standard labels', () => {
  const values = sampleTenantValues();
  const expected = {
    ...values.namespaceLabels,
    'app.kubernetes.io/part-of': 'svc-tenant',
    'app.kubernetes.io/managed-by': 'Helm',
  };
  const labelled: Array<[string, Json]> = [
    ...sample.map((o): [string, Json] => [`${o.kind}/${o.metadata.name}`, o.metadata.labels]),
    ...podSpecs(sample).map(({ owner, labels }): [string, Json] => [`${owner} pods`, labels]),
    ...sample
      .filter((o) => o.kind === 'StatefulSet')
      .map((o): [string, Json] => [
        `${o.metadata.name} PVCs`,
        o.spec.volumeClaimTemplates[0].metadata.labels,
      ]),
  ];
  for (const [what, labels] of labelled) {
    for (const [key, value] of Object.entries(expected)) {
      assert.equal(labels?.[key], value, `${what}: label ${key}`);
    }
    assert.ok(labels['app.kubernetes.io/name'], `${what}: app.kubernetes.io/name`);
  }
  assert.equal(labelled.length, sample.length + 8 + 4);
});

test('§8 the ResourceQuota holds the tenant defaults (limits.cpu 8) and admits every component at once', () => {
  const quota = find(sample, 'ResourceQuota', 'svc-tenant-quota');
  assert.deepEqual(quota.spec.hard, {
    'requests.cpu': '3',
    'requests.memory': '8Gi',
    'limits.cpu': '8',
    'limits.memory': '16Gi',
    persistentvolumeclaims: '10',
    pods: '50',
  });
  const containers = podSpecs(sample).flatMap(({ spec }) => [
    ...(spec.initContainers ?? []),
    ...spec.containers,
  ]);
  const cpu = (q: string) => (q.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000);
  const mib = (q: string) => Number.parseFloat(q) * (q.endsWith('Gi') ? 1024 : 1);
  const total = (pick: (c: Manifest) => number) => containers.reduce((sum, c) => sum + pick(c), 0);
  // Spec §2.9 sizes: 2.15 CPU / 7.875Gi requested, 7.5 CPU / 15.75Gi limits, 4 PVCs, 8 pods;
  // plus the indexer's security-config sidecar (render.ts INDEXER_SIDECAR_RESOURCES): 10m /
  // 64Mi requested, 250m / 256Mi limits.
  assert.equal(
    total((c) => cpu(c.resources.requests.cpu)),
    2150 + 10,
  );
  assert.equal(
    total((c) => mib(c.resources.requests.memory)),
    7.875 * 1024 + 64,
  );
  assert.equal(
    total((c) => cpu(c.resources.limits.cpu)),
    7500 + 250,
  );
  assert.equal(
    total((c) => mib(c.resources.limits.memory)),
    15.75 * 1024 + 256,
  );
  assert.equal(sample.filter((o) => o.kind === 'StatefulSet').length, 4);
  const limitRange = find(sample, 'LimitRange', 'svc-tenant-limits');
  assert.deepEqual(limitRange.spec.limits[0].default, { cpu: '200m', memory: '256Mi' });
});

test('§2.9 the monitoring Service exposes 1514 and 1515: LoadBalancer by default, ClusterIP with edge ports in edge-proxy mode', () => {
  const lb = find(sample, 'Service', 'monitor');
  assert.equal(lb.spec.type, 'LoadBalancer');
  assert.deepEqual(
    lb.spec.ports.map((p: Manifest) => [p.name, p.port, p.protocol]),
    [
      ['events', 1514, 'TCP'],
      ['enrollment', 1515, 'TCP'],
    ],
  );
  assert.deepEqual(lb.spec.selector, {
    'app.kubernetes.io/name': 'monitor-manager',
    'app.kubernetes.io/instance': 'svc-tenant',
  });
  const manager = find(sample, 'StatefulSet', 'monitor-manager');
  assert.equal(manager.spec.template.metadata.labels['app.kubernetes.io/name'], 'monitor-manager');
  assert.deepEqual(
    manager.spec.template.spec.containers[0].ports
      .map((p: Manifest) => p.containerPort)
      .slice(0, 2),
    [1514, 1515],
  );

  const proxied = find(edge, 'Service', 'monitor');
  assert.equal(proxied.spec.type, 'ClusterIP');
  assert.equal(proxied.spec.ports.length, 2);
  assert.equal(proxied.metadata.annotations['svc/edge-port-events'], '31514');
  assert.equal(proxied.metadata.annotations['svc/edge-port-enrollment'], '31515');
  // The certificate is svc's (docs/enrollment.md): no annotation names a Secret or an issuer.
  for (const service of [proxied, lb]) {
    assert.deepEqual(
      Object.keys(service.metadata.annotations).filter((k) => k.startsWith('svc/enrollment-tls')),
      [],
    );
  }
  assert.equal(lb.metadata.annotations['svc/edge-port-events'], undefined);
});

test('§2.9 the enrollment certificate is mounted into the manager only when monitorIngress.tls.secretName is set, as authd’s own sslmanager.cert and .key', () => {
  const manager = (objects: Manifest[]) =>
    find(objects, 'StatefulSet', 'monitor-manager').spec.template.spec;
  const volumes = (objects: Manifest[]) =>
    manager(objects).volumes.map((v: Manifest) => v.secret?.secretName);
  assert.ok(volumes(edge).includes('svc-enrollment-tls'));
  assert.ok(!volumes(sample).includes('svc-enrollment-tls'));
  assert.deepEqual(volumes(sample), ['svc-bootstrap', 'svc-indexer-tls']);
  const volume = manager(edge).volumes.find((v: Manifest) => v.name === 'enrollment-tls');
  // The certificate and its key only: the CA beside them in the Secret is for agents.
  assert.deepEqual(
    volume.secret.items.map((i: Manifest) => i.key),
    ['sslmanager.cert', 'sslmanager.key'],
  );
  const mounts = manager(edge)
    .containers[0].volumeMounts.filter((m: Manifest) => m.name === 'enrollment-tls')
    .map((m: Manifest) => [m.mountPath, m.subPath, m.readOnly]);
  assert.deepEqual(mounts, [
    ['/wazuh-config-mount/etc/sslmanager.cert', 'sslmanager.cert', true],
    ['/wazuh-config-mount/etc/sslmanager.key', 'sslmanager.key', true],
  ]);
});

test('§2.9 with integrations.externalAnalyzerUrl set the analysis subchart is not rendered', () => {
  assert.equal(external.filter((o) => o.metadata.name.startsWith('analysis')).length, 0);
  assert.equal(sample.filter((o) => o.metadata.name.startsWith('analysis')).length, 4);
  const egress = find(external, 'NetworkPolicy', 'allow-external-analyzer');
  assert.equal(egress.metadata.annotations['svc/external-analyzer-host'], 'cortex.example.net');
  assert.deepEqual(egress.spec.egress[0].ports, [{ protocol: 'TCP', port: 9443 }]);
  assert.deepEqual(egress.spec.podSelector.matchLabels, {
    'app.kubernetes.io/name': 'cases-server',
  });
});

test('§9.3.1 the adapter image is pinned by digest when one is given, else by tag', () => {
  const image = (objects: Manifest[]) =>
    find(objects, 'Deployment', 'svc-adapter').spec.template.spec.containers[0].image;
  assert.equal(image(sample), `registry.example.com/svc/adapter@sha256:${'ab'.repeat(32)}`);
  assert.equal(image(byTag), 'registry.example.com/svc/adapter:0.1.0');
});

test('§2.9 the adapter: tenant id and API URL, its two Secrets, its own ServiceAccount without token', () => {
  const values = sampleTenantValues();
  const deployment = find(sample, 'Deployment', 'svc-adapter');
  const pod = deployment.spec.template.spec;
  const env = Object.fromEntries(pod.containers[0].env.map((e: Manifest) => [e.name, e.value]));
  assert.equal(env.SVC_TENANT_ID, values.tenant.id);
  assert.equal(env.SVC_API_URL, values.adapter.apiUrl);
  assert.deepEqual(pod.containers[0].resources, values.adapter.resources);
  assert.equal(pod.serviceAccountName, 'svc-adapter');
  assert.equal(find(sample, 'ServiceAccount', 'svc-adapter').automountServiceAccountToken, false);
  const secrets = Object.fromEntries(
    pod.volumes.filter((v: Manifest) => v.secret).map((v: Manifest) => [v.name, v.secret]),
  );
  assert.equal(secrets.bootstrap.secretName, 'svc-adapter-bootstrap');
  assert.equal(secrets.token.secretName, 'svc-adapter-token');
  assert.deepEqual(secrets.token.items, [{ key: 'token', path: 'token' }]);
});

test('§2.9 components take their resources, volume sizes, JVM heap and storage class from values', () => {
  const values = sampleTenantValues();
  const { monitor, cases, analysis } = values.components;
  const container = (kind: string, name: string) =>
    find(sample, kind, name).spec.template.spec.containers[0];
  assert.deepEqual(
    container('StatefulSet', 'monitor-manager').resources,
    monitor.manager.resources,
  );
  assert.deepEqual(
    container('StatefulSet', 'monitor-indexer').resources,
    monitor.indexer.resources,
  );
  assert.deepEqual(
    container('Deployment', 'monitor-dashboard').resources,
    monitor.dashboard.resources,
  );
  assert.deepEqual(container('Deployment', 'cases').resources, cases.resources);
  assert.deepEqual(container('StatefulSet', 'cases-store').resources, cases.store.resources);
  assert.deepEqual(container('Deployment', 'analysis').resources, analysis.resources);
  assert.deepEqual(
    container('StatefulSet', 'analysis-search').resources,
    analysis.search.resources,
  );
  const heap = container('StatefulSet', 'monitor-indexer').env.find(
    (e: Manifest) => e.name === 'OPENSEARCH_JAVA_OPTS',
  );
  assert.equal(heap.value, '-Xms1g -Xmx1g');

  const claims = (objects: Manifest[]): Record<string, Manifest> =>
    Object.fromEntries(
      objects
        .filter((o) => o.kind === 'StatefulSet')
        .map((o) => [o.metadata.name, o.spec.volumeClaimTemplates[0].spec]),
    );
  const sizes = Object.fromEntries(
    Object.entries(claims(sample)).map(([n, s]) => [n, s.resources.requests.storage]),
  );
  assert.deepEqual(sizes, {
    'analysis-search': '20Gi',
    'cases-store': '30Gi',
    'monitor-indexer': '50Gi',
    'monitor-manager': '20Gi',
  });
  for (const spec of Object.values(claims(sample))) assert.equal(spec.storageClassName, undefined);
  for (const spec of Object.values(claims(storage)))
    assert.equal(spec.storageClassName, 'fast-ssd');

  assert.equal(noPolicies.filter((o) => o.metadata.name === 'monitor-dashboard').length, 0);
});

test('§2.9 pods: readiness probes, declared resources, non-root where the image allows, credentials from svc-bootstrap', () => {
  const pods = podSpecs(sample);
  assert.equal(pods.length, 8);
  for (const { owner, spec } of pods) {
    assert.equal(spec.automountServiceAccountToken, false, `${owner} mounts no API token`);
    for (const c of spec.containers) {
      assert.ok(c.readinessProbe, `${owner}/${c.name} readinessProbe`);
      assert.ok(c.resources?.requests && c.resources?.limits, `${owner}/${c.name} resources`);
      assert.equal(c.securityContext.allowPrivilegeEscalation, false, `${owner}/${c.name}`);
      assert.match(
        c.image,
        /^[^:@]+(:[A-Za-z0-9._-]+|@sha256:[0-9a-f]{64})$/,
        `${owner} pinned image`,
      );
      assert.doesNotMatch(c.image, /:latest$/);
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref) {
          assert.equal(ref.name, 'svc-bootstrap', `${owner} ${e.name}`);
          assert.ok(
            [
              'monitor-bootstrap-password',
              'cases-admin-password',
              'analysis-admin-password',
              'store-password',
              'monitor-enrollment-secret',
            ].includes(ref.key),
            ref.key,
          );
        }
        if (e.name.endsWith('_FILE')) {
          // A file variable names a path, and that path lies in a mounted volume.
          const mounts = (c.volumeMounts ?? []).map((m: Manifest) => `${m.mountPath}/`);
          assert.ok(
            mounts.some((m: string) => e.value.startsWith(m)),
            `${owner} ${e.name} is a file in a mounted volume`,
          );
        } else {
          assert.ok(
            !(e.value ?? '').includes('password'),
            `${owner} ${e.name} holds no literal secret`,
          );
        }
      }
    }
    // The wazuh manager image starts as root and drops privileges itself (docs/charts-tenant.md).
    if (owner !== 'StatefulSet/monitor-manager')
      assert.equal(spec.securityContext.runAsNonRoot, true, owner);
  }
  for (const o of sample.filter((x) => x.kind === 'StatefulSet')) {
    assert.equal(o.spec.podManagementPolicy, 'Parallel');
    assert.deepEqual(o.spec.persistentVolumeClaimRetentionPolicy, {
      whenDeleted: 'Retain',
      whenScaled: 'Retain',
    });
  }
  for (const name of ['cases', 'analysis', 'monitor-dashboard']) {
    assert.equal(find(sample, 'Deployment', name).spec.strategy.type, 'Recreate', name);
  }
});

test('§2.9 network policies: default deny, same and install namespace but the adapter, DNS, agents on 1514/1515, LLM egress for the analysis server only', () => {
  const policy = (name: string) => find(sample, 'NetworkPolicy', name).spec;
  assert.deepEqual(policy('default-deny'), { podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
  const install = {
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'svc-system' } },
  };
  assert.deepEqual(policy('allow-install-namespace').ingress, [{ from: [install] }]);
  assert.deepEqual(policy('allow-install-namespace').egress, [{ to: [install] }]);
  // The adapter is neither selected nor a peer of the open policies (test/charts/tenant-adapter.test.ts).
  const notAdapter = {
    matchExpressions: [
      { key: 'app.kubernetes.io/name', operator: 'NotIn', values: ['svc-adapter'] },
    ],
  };
  for (const name of ['allow-same-namespace', 'allow-install-namespace'])
    assert.deepEqual(policy(name).podSelector, notAdapter, name);
  assert.deepEqual(policy('allow-same-namespace').ingress, [
    { from: [{ podSelector: notAdapter }] },
  ]);
  assert.deepEqual(policy('allow-same-namespace').egress, [{ to: [{ podSelector: notAdapter }] }]);
  assert.deepEqual(policy('allow-dns').egress[0].to, [
    { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } },
  ]);
  const agents = policy('allow-monitor-agents');
  assert.equal(agents.podSelector.matchLabels['app.kubernetes.io/name'], 'monitor-manager');
  assert.deepEqual(agents.ingress, [
    {
      ports: [
        { protocol: 'TCP', port: 1514 },
        { protocol: 'TCP', port: 1515 },
      ],
    },
  ]);
  const llm = find(sample, 'NetworkPolicy', 'allow-llm-egress');
  assert.equal(llm.metadata.annotations['svc/allowed-llm-hosts'], 'llm.example.com');
  assert.deepEqual(llm.spec.egress, [{ ports: [{ protocol: 'TCP', port: 443 }] }]);
  assert.deepEqual(llm.spec.podSelector, {
    matchLabels: { 'app.kubernetes.io/name': 'analysis-server' },
  });
  assert.equal(noPolicies.filter((o) => o.kind === 'NetworkPolicy').length, 0);
});

test('§2.9 values.yaml holds every default of the spec, and each subchart the same sizes', async () => {
  const defaults: Manifest = parse(await readFile(join(chart, 'values.yaml'), 'utf8'));
  const sample: Manifest = sampleTenantValues();
  assert.deepEqual(defaults.components, sample.components);
  assert.deepEqual(defaults.monitor, defaults.components.monitor);
  assert.deepEqual(defaults.cases, defaults.components.cases);
  assert.deepEqual(defaults.analysis, { ...defaults.components.analysis, enabled: true });
  assert.deepEqual(defaults.resourceQuota, sample.resourceQuota);
  assert.deepEqual(defaults.adapter.resources, sample.adapter.resources);
  assert.equal(defaults.networkPolicies.enabled, true);
  assert.equal(defaults.monitorIngress.mode, 'loadbalancer');
  assert.equal(defaults.integrations.externalAnalyzerUrl, '');
  for (const name of SUBCHARTS) {
    const own: Manifest = parse(await readFile(join(chart, 'charts', name, 'values.yaml'), 'utf8'));
    assert.deepEqual(own, defaults[name], `charts/${name}/values.yaml`);
  }
});

const IDENTITY = [
  'tenant.id',
  'tenant.slug',
  'tenant.msspId',
  'tenant.installId',
  'tenant.displayName',
  'adapter.apiUrl',
  'adapter.image.repository',
  'adapter.image.tag',
];

test('§2.9 identity fields have no default: the chart refuses to render without them', async () => {
  const run = await helm('template', 'svc-tenant', chart, '--namespace', NAMESPACE);
  assert.notEqual(run.code, 0);
  for (const path of IDENTITY) {
    const [parent, key] = splitPath(path);
    assert.match(run.stderr, new RegExp(`at '${parent}/${key}'`), path);
  }
});

function splitPath(path: string): [string, string] {
  const keys = path.split('.');
  const key = keys.pop() as string;
  return [keys.length ? `/${keys.join('/')}` : '', key];
}

test('§2.9 schema: each required key missing is refused by helm and by the TypeBox contract', async () => {
  const schema: Manifest = JSON.parse(await readFile(join(chart, 'values.schema.json'), 'utf8'));
  assert.deepEqual([...schema.required].sort(), Object.keys(sampleTenantValues()).sort());
  // A subchart's block is special: Helm refills a removed one from the subchart's values.yaml,
  // so the schema never sees it missing; the guard test below covers that case.
  const paths = [...schema.required, ...IDENTITY].filter(
    (p) => !(SUBCHARTS as readonly string[]).includes(p),
  );
  const runs = await Promise.all(paths.map((path) => template(withoutKey(path, 'null'))));
  paths.forEach((path, i) => {
    const run = runs[i] as Run;
    const [parent, key] = splitPath(path);
    assert.notEqual(run.code, 0, `${path} missing must fail`);
    assert.match(run.stderr, new RegExp(`at '${parent}': missing propert(y|ies) .*'${key}'`), path);
  });
  for (const path of [...schema.required, ...IDENTITY]) {
    assert.equal(checkValues.Check(withoutKey(path, 'deleted')), false, `TypeBox: ${path} missing`);
  }
});

test('§2.9 guard: a removed subchart block refilled with the subchart defaults cannot hide a sized component', async () => {
  const values = SUBCHARTS.map((name) =>
    variant((v) => {
      v[name] = null;
      const persistence =
        name === 'monitor'
          ? v.components.monitor.indexer.persistence
          : (v.components[name].search?.persistence ?? v.components[name].store.persistence);
      persistence.size = '99Gi';
    }),
  );
  const runs = await Promise.all(values.map((v) => template(v)));
  SUBCHARTS.forEach((name, i) => {
    const run = runs[i] as Run;
    assert.notEqual(run.code, 0, name);
    assert.match(
      run.stderr,
      new RegExp(`${name}( \\(without enabled\\))? must equal components\\.${name}`),
      name,
    );
  });
});

const BAD: Array<[string, (v: Manifest) => void, RegExp]> = [
  [
    'unknown top-level key',
    (v) => {
      v.extra = true;
    },
    /at '': additional properties 'extra' not allowed/,
  ],
  [
    'unknown nested key',
    (v) => {
      v.tenant.nickname = 'x';
    },
    /at '\/tenant': additional properties 'nickname' not allowed/,
  ],
  [
    'unknown key in a subchart block',
    (v) => {
      v.monitor.image = 'x';
    },
    /at '\/monitor': additional properties 'image' not allowed/,
  ],
  [
    'bad hex colour',
    (v) => {
      v.branding.primaryColor = '#12345g';
    },
    /at '\/branding\/primaryColor'/,
  ],
  [
    'colour name instead of hex',
    (v) => {
      v.branding.secondaryColor = 'red';
    },
    /at '\/branding\/secondaryColor'/,
  ],
  [
    'slug with capitals',
    (v) => {
      v.tenant.slug = 'Acme';
    },
    /at '\/tenant\/slug'/,
  ],
  [
    'slug with a leading dash',
    (v) => {
      v.tenant.slug = '-acme';
    },
    /at '\/tenant\/slug'/,
  ],
  [
    'tenant id not a uuid',
    (v) => {
      v.tenant.id = 'acme';
    },
    /at '\/tenant\/id'/,
  ],
  [
    'pods as a string',
    (v) => {
      v.resourceQuota.pods = '50';
    },
    /at '\/resourceQuota\/pods': got string, want integer/,
  ],
  [
    'boolean as a string',
    (v) => {
      v.networkPolicies.enabled = 'yes';
    },
    /at '\/networkPolicies\/enabled': got string, want boolean/,
  ],
  [
    'quantity not a quantity',
    (v) => {
      v.components.cases.resources.limits.cpu = 'lots';
    },
    /at '\/components\/cases\/resources\/limits\/cpu'/,
  ],
  [
    'unknown ingress mode',
    (v) => {
      v.monitorIngress.mode = 'nodeport';
    },
    /at '\/monitorIngress\/mode'/,
  ],
  [
    'digest not sha256',
    (v) => {
      v.adapter.image.digest = 'md5:abc';
    },
    /at '\/adapter\/image\/digest'/,
  ],
  [
    'intel enabled',
    (v) => {
      v.components.intel.enabled = true;
    },
    /at '\/components\/intel\/enabled'/,
  ],
  [
    'llm base URL over http',
    (v) => {
      v.llm.baseUrl = 'http://llm.example.com';
    },
    /at '\/llm\/baseUrl'/,
  ],
];

test('§2.9 schema: wrong types, bad colours, bad slugs and unknown keys are refused by helm and by TypeBox', async () => {
  const cases = BAD.map(([what, edit, message]) => ({ what, values: variant(edit), message }));
  const runs = await Promise.all(cases.map(({ values }) => template(values)));
  cases.forEach(({ what, values, message }, i) => {
    const run = runs[i] as Run;
    assert.notEqual(run.code, 0, what);
    assert.match(run.stderr, /values don't meet the specifications of the schema/, what);
    assert.match(run.stderr, message, what);
    assert.equal(checkValues.Check(values), false, `TypeBox: ${what}`);
  });
});

const DRIFT: Array<[string, (v: Manifest) => void, RegExp]> = [
  [
    'monitor differs from components.monitor',
    (v) => {
      v.monitor.indexer.jvm.heap = '2g';
    },
    /monitor must equal components\.monitor/,
  ],
  [
    'cases differs from components.cases',
    (v) => {
      v.cases.store.persistence.size = '1Gi';
    },
    /cases must equal components\.cases/,
  ],
  [
    'analysis differs from components.analysis',
    (v) => {
      v.analysis.analyzers = ['Foo_1_0'];
    },
    /analysis \(without enabled\) must equal components\.analysis/,
  ],
  [
    'analysis enabled with an external analyzer',
    (v) => {
      v.integrations.externalAnalyzerUrl = 'https://cortex.example.net';
    },
    /analysis\.enabled must be false/,
  ],
  [
    'analysis disabled without an external analyzer',
    (v) => {
      v.analysis.enabled = false;
    },
    /analysis\.enabled must be true/,
  ],
  [
    'global.labels differ from namespaceLabels',
    (v) => {
      v.global.labels.tenant = 'false';
    },
    /global\.labels must equal namespaceLabels/,
  ],
  [
    'namespaceLabels name another tenant',
    (v) => {
      v.namespaceLabels['tenant-id'] = '00000000-0000-4000-8000-000000000000';
      v.global.labels = { ...v.namespaceLabels };
    },
    /namespaceLabels\.tenant-id must be/,
  ],
  [
    'enrollment certificate not passed to the subchart',
    (v) => {
      v.monitorIngress.tls.secretName = 'x-tls';
    },
    /global\.monitorTlsSecretName must equal/,
  ],
  [
    'an external issuer for the enrollment certificate, which svc issues itself',
    (v) => {
      v.monitorIngress.tls.issuerRef = 'letsencrypt';
    },
    /monitorIngress\.tls\.issuerRef must be empty/,
  ],
  [
    'edge-proxy without its port pair',
    (v) => {
      v.monitorIngress.mode = 'edge-proxy';
    },
    /edgePorts needs two distinct non-zero ports/,
  ],
];

test('§2.9 guard: the chart refuses subchart copies that drift from their source, which the schema cannot see', async () => {
  const cases = DRIFT.map(([what, edit, message]) => ({ what, values: variant(edit), message }));
  const runs = await Promise.all(cases.map(({ values }) => template(values)));
  cases.forEach(({ what, values, message }, i) => {
    const run = runs[i] as Run;
    assert.notEqual(run.code, 0, what);
    assert.match(run.stderr, message, what);
    assert.equal(checkValues.Check(values), true, `TypeBox alone accepts: ${what}`);
  });
});

/**
 * Spec §9.3: the content digest of a vendored subchart. sha256 over every file, in byte order
 * of the relative path, each as `<path> NUL <size> NUL <bytes>`; docs/charts-tenant.md has the
 * same thing as a shell pipeline.
 */
async function directoryDigest(dir: string): Promise<string> {
  const paths: string[] = [];
  const walk = async (relative: string) => {
    for (const entry of await readdir(join(dir, relative), { withFileTypes: true })) {
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) paths.push(path);
      else throw new Error(`${path}: only regular files and directories may be vendored`);
    }
  };
  await walk('');
  paths.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const hash = createHash('sha256');
  for (const path of paths) {
    const bytes = await readFile(join(dir, path));
    hash.update(`${path}\0${bytes.length}\0`);
    hash.update(bytes);
  }
  return hash.digest('hex');
}

async function recordedDigests(): Promise<Record<string, string>> {
  const text = await readFile(join(chart, 'subcharts.sha256'), 'utf8');
  const lines = text.split('\n').filter((line) => line.trim() && !line.startsWith('#'));
  return Object.fromEntries(
    lines.map((line) => {
      const match = /^([0-9a-f]{64}) {2}([a-z0-9-]+)$/.exec(line);
      assert.ok(match, `subcharts.sha256 line: ${line}`);
      return [match[2], match[1]];
    }),
  );
}

test('§9.5.3 the recorded digests match the vendored subchart directories', async () => {
  const recorded = await recordedDigests();
  const actual = Object.fromEntries(
    await Promise.all(
      SUBCHARTS.map(async (name) => [name, await directoryDigest(join(chart, 'charts', name))]),
    ),
  );
  const expectedFile = SUBCHARTS.map((name) => `${actual[name]}  ${name}`).join('\n');
  assert.deepEqual(
    recorded,
    actual,
    `subchart content drifted; if intended, bump its -svc-vN version and record:\n${expectedFile}`,
  );
});

test('§9.5.3 a changed file in a vendored subchart changes its digest, so the check fails on drift', async () => {
  const copy = join(scratch, 'drift');
  await cp(chart, copy, { recursive: true });
  const recorded = await recordedDigests();
  const before = await directoryDigest(join(copy, 'charts', 'monitor'));
  assert.equal(before, recorded.monitor);
  const helpers = join(copy, 'charts', 'monitor', 'templates', '_helpers.tpl');
  await writeFile(
    helpers,
    (await readFile(helpers, 'utf8')).replace('wazuh-manager:4.9.2', 'wazuh-manager:4.9.3'),
  );
  assert.notEqual(await directoryDigest(join(copy, 'charts', 'monitor')), recorded.monitor);
  await writeFile(join(copy, 'charts', 'cases', 'templates', 'extra.yaml'), '');
  assert.notEqual(await directoryDigest(join(copy, 'charts', 'cases')), recorded.cases);
  assert.equal(await directoryDigest(join(copy, 'charts', 'analysis')), recorded.analysis);
});

test('§9.3.2 / §9.5.3 Chart.lock, Chart.yaml and the subcharts agree on -svc-vN versions of local, unpacked dependencies', async () => {
  const chartYaml: Manifest = parse(await readFile(join(chart, 'Chart.yaml'), 'utf8'));
  const lock: Manifest = parse(await readFile(join(chart, 'Chart.lock'), 'utf8'));
  assert.deepEqual(
    chartYaml.dependencies.map((d: Manifest) => d.name),
    [...SUBCHARTS],
  );
  for (const name of SUBCHARTS) {
    const declared = chartYaml.dependencies.find((d: Manifest) => d.name === name);
    const locked = lock.dependencies.find((d: Manifest) => d.name === name);
    const own: Manifest = parse(await readFile(join(chart, 'charts', name, 'Chart.yaml'), 'utf8'));
    assert.equal(declared.repository, `file://charts/${name}`);
    assert.equal(locked.repository, declared.repository);
    assert.equal(locked.version, declared.version, `${name}: Chart.lock`);
    assert.equal(own.version, declared.version, `${name}: charts/${name}/Chart.yaml`);
    assert.match(declared.version, /^\d+\.\d+\.\d+-svc-v\d+$/);
  }
  assert.equal(
    chartYaml.dependencies.find((d: Manifest) => d.name === 'analysis').condition,
    'analysis.enabled',
  );
  assert.equal(chartYaml.version, '0.1.0');
  const archives = (await readdir(join(chart, 'charts'))).filter((f) => f.endsWith('.tgz'));
  assert.deepEqual(archives, [], 'only the unpacked directories are vendored');
  for (const name of SUBCHARTS) assert.ok((await lstat(join(chart, 'charts', name))).isDirectory());
  const list = await helm('dependency', 'list', chart);
  assert.equal(list.code, 0, list.stderr);
  for (const name of SUBCHARTS)
    assert.match(
      list.stdout,
      new RegExp(`^${name}\\s+\\S+-svc-v\\d+\\s+file://charts/${name}\\s+unpacked\\s*$`, 'm'),
    );
});
