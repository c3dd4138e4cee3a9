import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import {
  ApiException,
  AuthorizationV1Api,
  CoreV1Api,
  type KubernetesObject,
  KubernetesObjectApi,
  type V1ClusterRole,
  type V1ConfigMap,
  type V1Container,
  type V1Deployment,
  type V1Ingress,
  type V1NetworkPolicy,
  type V1NetworkPolicyPeer,
  type V1Secret,
  type V1Service,
  type V1StatefulSet,
} from '@kubernetes/client-node';
import { Compile } from 'typebox/compile';
import { parse, parseAllDocuments } from 'yaml';
import { SystemValues } from '../../contracts/system-values.ts';
import { svcVersion } from '../../src/assets/index.ts';
import { SETTINGS } from '../../src/config/index.ts';
import { readOrchestrator } from '../../src/config/orchestrator.ts';
import { readOutbound } from '../../src/config/outbound.ts';
import { readWorker } from '../../src/config/worker.ts';
import { createTestNamespace } from '../../testcluster/harness.ts';
import {
  helmWithValues,
  mergeValues,
  renderSystemChart,
  sampleValues,
  systemChart,
  type Values,
} from '../policies/system-chart.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';
import { loopbackCertificate } from '../support/loopback-tls.ts';

const run = promisify(execFile);
const cluster = getTestCluster();
const helm = join(cluster.binDir, 'helm');
const ns = 'svc-system';
const sample = sampleValues(ns);
const repoRoot = join(import.meta.dirname, '..', '..');

const render = (overrides: Values = {}, namespace = ns) =>
  renderSystemChart(helm, namespace, mergeValues(sampleValues(namespace), overrides));

function find<T extends KubernetesObject>(objects: KubernetesObject[], kind: string, name: string) {
  const found = objects.find((o) => o.kind === kind && o.metadata?.name === name);
  assert.ok(found, `rendered ${kind} ${name}`);
  return found as T;
}

function container(objects: KubernetesObject[], kind: string, name: string): V1Container {
  const workload = find<V1Deployment | V1StatefulSet>(objects, kind, name);
  const first = workload.spec?.template.spec?.containers[0];
  assert.ok(first, `${kind} ${name} has a container`);
  return first;
}

function env(c: V1Container): Record<string, string | undefined> {
  return Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
}

const chartValues = parse(await readFile(join(systemChart, 'values.yaml'), 'utf8')) as Values;
const checkValues = Compile(SystemValues);

test('§9.5.1 helm lint --strict passes for the system chart with sample values', async () => {
  const out = await helmWithValues(
    helm,
    ['lint', '--strict', systemChart, '--namespace', ns],
    sample,
  );
  assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
});

test('§9.1 the chart version equals package.json and has a compatibility-list entry', async () => {
  const chart = parse(await readFile(join(systemChart, 'Chart.yaml'), 'utf8')) as {
    version: string;
  };
  const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as {
    version: string;
  };
  assert.equal(chart.version, pkg.version);
  const compat = parse(
    await readFile(join(repoRoot, 'sql', 'chart-compatibility.yaml'), 'utf8'),
  ) as Array<{ system: string }>;
  assert.ok(compat.some((entry) => String(entry.system) === chart.version));
});

/** The object of every `default` in a schema, nested as the values are. */
function schemaDefaults(schema: unknown): unknown {
  const node = schema as { default?: unknown; properties?: Record<string, unknown> };
  if (node.default !== undefined) return node.default;
  if (node.properties === undefined) return undefined;
  const out: Values = {};
  for (const [key, child] of Object.entries(node.properties)) {
    const value = schemaDefaults(child);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

test('§2.9 values.yaml holds exactly the defaults of the TypeBox schema', () => {
  // The keys without a default are the ones an operator must write (sampleValues).
  assert.deepEqual(chartValues, schemaDefaults(SystemValues));
  assert.equal(checkValues.Check(mergeValues(chartValues, sample)), true);
});

test('§2.9 resources of the API, orchestrator and database are the spec defaults', async () => {
  const objects = await render();
  assert.deepEqual(container(objects, 'Deployment', 'svc-api').resources, {
    requests: { cpu: '500m', memory: '512Mi' },
    limits: { cpu: '2', memory: '2Gi' },
  });
  assert.deepEqual(container(objects, 'Deployment', 'svc-orchestrator').resources, {
    requests: { cpu: '500m', memory: '1Gi' },
    limits: { cpu: '2', memory: '4Gi' },
  });
  assert.deepEqual(container(objects, 'StatefulSet', 'svc-postgres').resources, {
    requests: { cpu: '250m', memory: '512Mi' },
    limits: { cpu: '2', memory: '2Gi' },
  });
  const postgres = find<V1StatefulSet>(objects, 'StatefulSet', 'svc-postgres');
  const claim = postgres.spec?.volumeClaimTemplates?.[0]?.spec;
  assert.equal(claim?.resources?.requests?.storage, '20Gi');
  assert.equal(claim?.storageClassName, undefined, 'empty storageClassName: cluster default');
  const sized = await render({ database: { storage: { size: '50Gi', storageClassName: 'fast' } } });
  const sizedClaim = find<V1StatefulSet>(sized, 'StatefulSet', 'svc-postgres').spec
    ?.volumeClaimTemplates?.[0]?.spec;
  assert.equal(sizedClaim?.resources?.requests?.storage, '50Gi');
  assert.equal(sizedClaim?.storageClassName, 'fast');
});

test('issue 33 the in-chart database allows 200 connections by default (the image allows 100, under what 3 API, 2 orchestrator and 2 worker replicas open); database.maxConnections sets it', async () => {
  const args = (objects: KubernetesObject[]) =>
    container(objects, 'StatefulSet', 'svc-postgres').args;
  assert.deepEqual(args(await render()), ['postgres', '-c', 'max_connections=200']);
  assert.deepEqual(args(await render({ database: { maxConnections: 400 } })), [
    'postgres',
    '-c',
    'max_connections=400',
  ]);
  await assert.rejects(render({ database: { maxConnections: 10 } }), /maxConnections/);
  await assert.rejects(render({ database: { maxConnections: '300; drop' } }), /maxConnections/);
});

test('§2.9 API and orchestrator run svc serve with probes; the orchestrator loop only in one', async () => {
  const objects = await render();
  const api = container(objects, 'Deployment', 'svc-api');
  const orchestrator = container(objects, 'Deployment', 'svc-orchestrator');
  for (const c of [api, orchestrator]) {
    assert.equal(c.image, `registry.example.com/svc/svc:${svcVersion()}`);
    assert.equal(c.imagePullPolicy, 'IfNotPresent');
    assert.deepEqual(c.command, ['svc', 'serve']);
    assert.equal(c.readinessProbe?.httpGet?.path, '/healthz');
    assert.ok(c.livenessProbe?.tcpSocket, 'liveness does not depend on the database');
    assert.ok(c.startupProbe, 'startup probe covers migrations');
  }
  assert.equal(env(api).SVC_ORCHESTRATOR, 'off');
  assert.equal(env(orchestrator).SVC_ORCHESTRATOR, 'on');
  // The worker Deployment (enabled by default) runs the jobs; the serve pods do not.
  assert.equal(env(api).SVC_WORKER, 'off');
  assert.equal(env(orchestrator).SVC_WORKER, 'off');
  const postgres = container(objects, 'StatefulSet', 'svc-postgres');
  assert.deepEqual(postgres.readinessProbe?.exec?.command?.slice(0, 1), ['pg_isready']);
  assert.ok(postgres.livenessProbe);
  const tagged = await render({
    image: { tag: 'latest', pullPolicy: 'Always' },
    api: { replicas: 3 },
  });
  assert.equal(
    container(tagged, 'Deployment', 'svc-api').image,
    'registry.example.com/svc/svc:latest',
  );
  assert.equal(find<V1Deployment>(tagged, 'Deployment', 'svc-api').spec?.replicas, 3);
  assert.equal(find<V1Deployment>(tagged, 'Deployment', 'svc-orchestrator').spec?.replicas, 1);
});

test('issue 13 the worker Deployment runs svc worker with the API’s image, env, secrets and hardening; replicas and concurrency from values; none when disabled', async () => {
  const objects = await render();
  const deployment = find<V1Deployment>(objects, 'Deployment', 'svc-worker');
  const api = find<V1Deployment>(objects, 'Deployment', 'svc-api');
  const worker = container(objects, 'Deployment', 'svc-worker');
  assert.deepEqual(worker.command, ['svc', 'worker']);
  assert.equal(worker.image, container(objects, 'Deployment', 'svc-api').image);
  assert.equal(deployment.spec?.replicas, 1);
  assert.deepEqual(deployment.spec?.selector.matchLabels, {
    'app.kubernetes.io/name': 'svc',
    'app.kubernetes.io/instance': 'svc',
    'app.kubernetes.io/component': 'worker',
  });
  assert.deepEqual(worker.resources, {
    requests: { cpu: '250m', memory: '512Mi' },
    limits: { cpu: '1', memory: '1Gi' },
  });
  // The API's environment, without the orchestrator switch, plus the concurrency.
  const apiEnv = container(objects, 'Deployment', 'svc-api').env ?? [];
  const expected = apiEnv.filter((e) => e.name !== 'SVC_ORCHESTRATOR' && e.name !== 'SVC_WORKER');
  assert.deepEqual(
    [...(worker.env ?? [])].sort((a, b) => a.name.localeCompare(b.name)),
    [...expected, { name: 'SVC_WORKER_CONCURRENCY', value: '4' }].sort((a, b) =>
      a.name.localeCompare(b.name),
    ),
  );
  const podOf = (d: V1Deployment) => d.spec?.template.spec;
  assert.deepEqual(podOf(deployment)?.securityContext, podOf(api)?.securityContext);
  assert.deepEqual(
    worker.securityContext,
    container(objects, 'Deployment', 'svc-api').securityContext,
  );
  assert.deepEqual(podOf(deployment)?.volumes, podOf(api)?.volumes);
  assert.deepEqual(worker.volumeMounts, container(objects, 'Deployment', 'svc-api').volumeMounts);
  assert.equal(podOf(deployment)?.serviceAccountName, 'svc');
  // Its probes' port and its metrics (issue 15); no Service.
  assert.deepEqual(worker.ports, [
    { name: 'http', containerPort: 8080 },
    { name: 'metrics', containerPort: 9464 },
  ]);
  // Issue 31: probes the worker itself answers (src/cli/worker.ts).
  assert.equal(worker.readinessProbe?.httpGet?.path, '/readyz');
  assert.equal(worker.livenessProbe?.httpGet?.path, '/healthz');
  assert.equal(worker.startupProbe?.tcpSocket?.port, 'http');

  const scaled = await render({
    worker: { replicas: 3, concurrency: 16 },
    resources: {
      worker: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '2', memory: '2Gi' } },
    },
  });
  assert.equal(find<V1Deployment>(scaled, 'Deployment', 'svc-worker').spec?.replicas, 3);
  const scaledWorker = container(scaled, 'Deployment', 'svc-worker');
  assert.equal(env(scaledWorker).SVC_WORKER_CONCURRENCY, '16');
  assert.equal(scaledWorker.resources?.limits?.memory, '2Gi');

  const disabled = await render({ worker: { enabled: false } });
  assert.equal(
    disabled.filter((o) => o.metadata?.name === 'svc-worker').length,
    0,
    'neither Deployment nor NetworkPolicy',
  );
  assert.ok(disabled.some((o) => o.kind === 'Deployment' && o.metadata?.name === 'svc-api'));
  // Without the worker Deployment, the serve pods run the jobs.
  assert.equal(env(container(disabled, 'Deployment', 'svc-api')).SVC_WORKER, 'on');
  // The schema bounds concurrency.
  await assert.rejects(render({ worker: { concurrency: 0 } }), /concurrency/);
});

test('§2.9 values reach svc serve as the environment variables src/config reads', async () => {
  const objects = await render({
    auth: { mode: 'proxy' },
    oidc: {
      trustedHeaderUser: 'X-Auth-User',
      trustedHeaderEmail: 'X-Auth-Email',
      trustedHeaderGroups: 'X-Auth-Groups',
      trustedProxyCIDRs: ['10.0.0.0/8', '192.168.1.0/24'],
    },
    defaults: { llm: { provider: 'openai', baseUrl: 'https://llm.example.com/v1', model: 'm' } },
  });
  const api = container(objects, 'Deployment', 'svc-api');
  const vars = env(api);
  assert.deepEqual(
    {
      mode: vars.SVC_AUTH_MODE,
      user: vars.SVC_TRUSTED_HEADER_USER,
      email: vars.SVC_TRUSTED_HEADER_EMAIL,
      groups: vars.SVC_TRUSTED_HEADER_GROUPS,
      cidrs: vars.SVC_TRUSTED_PROXY_CIDRS,
      namespace: vars.SVC_INSTALL_NAMESPACE,
      mssp: vars.SVC_MSSP_HOSTNAME,
      customer: vars.SVC_CUSTOMER_HOSTNAME,
      msspId: vars.SVC_MSSP_ID,
      installId: vars.SVC_INSTALL_ID,
      llm: vars.SVC_LLM_BASE_URL,
      host: vars.SVC_HOST,
    },
    {
      mode: 'proxy',
      user: 'X-Auth-User',
      email: 'X-Auth-Email',
      groups: 'X-Auth-Groups',
      cidrs: '10.0.0.0/8,192.168.1.0/24',
      namespace: ns,
      mssp: 'mssp.example.com',
      customer: '*.customers.example.com',
      msspId: '3f2a1c4e-5b6d-4e7f-8a9b-0c1d2e3f4a5b',
      installId: '9b1c2d3e-4f5a-4b6c-8d7e-8f9a0b1c2d3e',
      llm: 'https://llm.example.com/v1',
      host: '0.0.0.0',
    },
  );
  // svc's ServiceAccount, the subject of its per-tenant RoleBinding, in both containers.
  const renamed = await render({ serviceAccount: { name: 'svc-cp' } });
  for (const name of ['svc-api', 'svc-orchestrator']) {
    assert.equal(env(container(objects, 'Deployment', name)).SVC_SERVICE_ACCOUNT, 'svc', name);
    assert.equal(env(container(renamed, 'Deployment', name)).SVC_SERVICE_ACCOUNT, 'svc-cp', name);
  }
  // Every SVC_* variable the chart sets is one svc reads: a rename in src/config fails here.
  const unknown = (api.env ?? [])
    .map((e) => e.name)
    .filter((name) => name.startsWith('SVC_') && !(name in SETTINGS));
  assert.deepEqual(unknown, []);
});

test('outbound: allowed hosts and CIDRs, a CA bundle and LLM prices reach the api, orchestrator and worker as the environment svc reads; by default none of it', async () => {
  const { cert } = await loopbackCertificate();
  const prices = { 'corp-model': { input_per_mtok: 2.5, output_per_mtok: 10 } };
  const values = {
    outbound: {
      allowHosts: ['llm.corp.internal', '*.siem.corp'],
      allowCIDRs: ['10.20.0.0/16', 'fd00:20::/64'],
      caBundle: cert,
    },
    defaults: { llm: { prices } },
  };
  const objects = await render(values);
  const configMap = find<V1ConfigMap>(objects, 'ConfigMap', 'svc-outbound-ca');
  assert.equal(configMap.data?.['ca.pem']?.trim(), cert.trim());
  const annotations = new Set<string>();
  for (const name of ['svc-api', 'svc-orchestrator', 'svc-worker']) {
    const pod = find<V1Deployment>(objects, 'Deployment', name).spec?.template;
    const main = container(objects, 'Deployment', name);
    const vars = env(main);
    assert.equal(vars.SVC_OUTBOUND_ALLOW_HOSTS, 'llm.corp.internal,*.siem.corp', name);
    assert.equal(vars.SVC_OUTBOUND_ALLOW_CIDRS, '10.20.0.0/16,fd00:20::/64', name);
    // The file svc reads is the ConfigMap's key, where the pod mounts it.
    const mount = main.volumeMounts?.find((m) => m.name === 'outbound-ca');
    assert.deepEqual([mount?.mountPath, mount?.readOnly], ['/etc/svc/outbound-ca', true], name);
    assert.equal(vars.SVC_OUTBOUND_CA_FILE, `${mount?.mountPath}/ca.pem`, name);
    const volume = pod?.spec?.volumes?.find((v) => v.name === 'outbound-ca');
    assert.equal(volume?.configMap?.name, 'svc-outbound-ca', name);
    annotations.add(pod?.metadata?.annotations?.['checksum/outbound-ca'] ?? 'none');
    // svc's own configuration readers accept what the chart wrote, and read back the values.
    assert.deepEqual(readOutbound(vars), {
      allowHosts: ['llm.corp.internal', '*.siem.corp'],
      allowCidrs: ['10.20.0.0/16', 'fd00:20::/64'],
      caFile: '/etc/svc/outbound-ca/ca.pem',
    });
    assert.deepEqual(readWorker(vars).llmPrices, prices, name);
  }
  // svc reads the bundle once at start: a new bundle must roll the pods.
  assert.equal(annotations.size, 1);
  assert.match([...annotations][0] ?? '', /^[0-9a-f]{64}$/);
  const { cert: other } = await loopbackCertificate();
  const rolled = await render({ ...values, outbound: { ...values.outbound, caBundle: other } });
  const after = find<V1Deployment>(rolled, 'Deployment', 'svc-api').spec?.template.metadata;
  assert.notEqual(after?.annotations?.['checksum/outbound-ca'], [...annotations][0]);

  const plain = await render();
  assert.equal(
    plain.find((o) => o.kind === 'ConfigMap' && o.metadata?.name === 'svc-outbound-ca'),
    undefined,
  );
  for (const name of ['svc-api', 'svc-orchestrator', 'svc-worker']) {
    const main = container(plain, 'Deployment', name);
    const vars = env(main);
    assert.equal(vars.SVC_OUTBOUND_CA_FILE, undefined, name);
    assert.equal(
      main.volumeMounts?.some((m) => m.name === 'outbound-ca'),
      false,
      name,
    );
    const template = find<V1Deployment>(plain, 'Deployment', name).spec?.template;
    assert.equal(template?.metadata?.annotations?.['checksum/outbound-ca'], undefined, name);
    assert.deepEqual(readOutbound(vars), { allowHosts: [], allowCidrs: [] }, name);
    assert.deepEqual(readWorker(vars).llmPrices, {}, name);
  }
});

test('tenants.*: the StorageClass, decommission grace and retention reach the orchestrator as the SVC_* variables svc reads; the chart’s defaults are svc’s own', async () => {
  const chosen = env(
    container(
      await render({
        tenants: { storageClassName: 'fast-ssd', decommissionGrace: '7d', retention: '90d' },
      }),
      'Deployment',
      'svc-orchestrator',
    ),
  );
  const read = readOrchestrator(chosen);
  assert.deepEqual(
    [read.storageClassName, read.decommissionGraceMs, read.retentionMs],
    ['fast-ssd', 7 * 86_400_000, 90 * 86_400_000],
  );
  // Rendered with values.yaml alone, svc runs as it would with none of these variables set.
  const plain = readOrchestrator(env(container(await render(), 'Deployment', 'svc-orchestrator')));
  const unset = readOrchestrator({});
  assert.deepEqual(
    [plain.storageClassName, plain.decommissionGraceMs, plain.retentionMs],
    [unset.storageClassName, unset.decommissionGraceMs, unset.retentionMs],
  );
});

test('§2.9 the in-chart database: generated credentials with the six keys, svc bootstraps the roles', async () => {
  const objects = await render();
  const secret = find<V1Secret>(objects, 'Secret', 'svc-database');
  const data = Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
  );
  assert.deepEqual(Object.keys(data).sort(), [
    'admin_password',
    'admin_user',
    'app_password',
    'app_user',
    'mssp_password',
    'mssp_user',
    'superuser_password',
  ]);
  assert.deepEqual(
    [data.admin_user, data.app_user, data.mssp_user],
    ['svc_admin', 'svc_app', 'svc_mssp'],
  );
  for (const key of ['superuser_password', 'admin_password', 'app_password', 'mssp_password']) {
    assert.match(data[key] ?? '', /^[A-Za-z0-9]{32}$/);
  }
  const vars = env(container(objects, 'Deployment', 'svc-api'));
  assert.equal(vars.SVC_DATABASE_HOST, 'svc-postgres.svc-system.svc');
  assert.equal(vars.SVC_DATABASE_CREDENTIALS_DIR, '/var/run/secrets/svc/database');
  assert.match(
    vars.SVC_DATABASE_BOOTSTRAP_URL ?? '',
    /^postgres:\/\/postgres:\$\(DATABASE_SUPERUSER_PASSWORD\)@/,
  );
  const api = find<V1Deployment>(objects, 'Deployment', 'svc-api');
  const volume = api.spec?.template.spec?.volumes?.find((v) => v.name === 'database-credentials');
  assert.equal(volume?.secret?.secretName, 'svc-database');
  assert.equal(volume?.secret?.items?.length, 6, 'the superuser password is not mounted');
  find(objects, 'Service', 'svc-postgres');
});

test('§2.9 database.enabled=false: no PostgreSQL, svc uses database.external and its existingSecret', async () => {
  const objects = await render({
    database: {
      enabled: false,
      external: {
        host: 'pg.example.internal',
        port: 6432,
        database: 'svcdb',
        existingSecret: 'ext-db',
        ssl: 'require',
      },
    },
  });
  assert.deepEqual(
    objects.filter(
      (o) => o.metadata?.name === 'svc-postgres' || o.metadata?.name === 'svc-database',
    ),
    [],
  );
  const vars = env(container(objects, 'Deployment', 'svc-api'));
  assert.deepEqual(
    [vars.SVC_DATABASE_HOST, vars.SVC_DATABASE_PORT, vars.SVC_DATABASE_NAME, vars.SVC_DATABASE_SSL],
    ['pg.example.internal', '6432', 'svcdb', 'require'],
  );
  assert.equal(vars.SVC_DATABASE_BOOTSTRAP_URL, undefined);
  const api = find<V1Deployment>(objects, 'Deployment', 'svc-api');
  const volume = api.spec?.template.spec?.volumes?.find((v) => v.name === 'database-credentials');
  assert.equal(volume?.secret?.secretName, 'ext-db');
  assert.deepEqual(
    volume?.secret?.items?.map((i) => i.key),
    ['admin_user', 'admin_password', 'app_user', 'app_password', 'mssp_user', 'mssp_password'],
  );
});

test('§2.9 the Ingress serves the MSSP host and the wildcard customer host over TLS', async () => {
  const plain = find<V1Ingress>(await render(), 'Ingress', 'svc');
  assert.equal(plain.metadata?.annotations, undefined);
  assert.equal(plain.spec?.ingressClassName, undefined);
  const objects = await render({
    ingress: { className: 'nginx', tls: { secretName: 'svc-cert', issuerRef: 'letsencrypt-dns' } },
  });
  const ingress = find<V1Ingress>(objects, 'Ingress', 'svc');
  assert.equal(ingress.spec?.ingressClassName, 'nginx');
  assert.equal(
    ingress.metadata?.annotations?.['cert-manager.io/cluster-issuer'],
    'letsencrypt-dns',
  );
  assert.deepEqual(ingress.spec?.tls, [
    { secretName: 'svc-cert', hosts: ['mssp.example.com', '*.customers.example.com'] },
  ]);
  assert.deepEqual(
    ingress.spec?.rules?.map((r) => [r.host, r.http?.paths[0]?.backend.service?.name]),
    [
      ['mssp.example.com', 'svc-api'],
      ['*.customers.example.com', 'svc-api'],
    ],
  );
  const off = await render({ ingress: { enabled: false } });
  assert.equal(off.filter((o) => o.kind === 'Ingress').length, 0);
});

test('§2.5 every object lands in the release namespace except the ClusterRoles, the binding and the policies', async () => {
  const objects = await render({}, 'svc-elsewhere');
  const clusterScoped = objects
    .filter((o) => o.metadata?.namespace === undefined)
    .map((o) => `${o.kind}/${o.metadata?.name}`)
    .sort();
  assert.deepEqual(clusterScoped, [
    'ClusterRole/svc-tenant.svc-elsewhere',
    'ClusterRole/svc.svc-elsewhere',
    'ClusterRoleBinding/svc.svc-elsewhere',
    'ValidatingAdmissionPolicy/svc-cluster-scoped-writes.svc-elsewhere',
    'ValidatingAdmissionPolicy/svc-namespaced-writes.svc-elsewhere',
    'ValidatingAdmissionPolicy/svc-tenant-namespaces.svc-elsewhere',
    'ValidatingAdmissionPolicyBinding/svc-cluster-scoped-writes.svc-elsewhere',
    'ValidatingAdmissionPolicyBinding/svc-namespaced-writes.svc-elsewhere',
    'ValidatingAdmissionPolicyBinding/svc-tenant-namespaces.svc-elsewhere',
  ]);
  const elsewhere = objects.filter(
    (o) => o.metadata?.namespace !== undefined && o.metadata.namespace !== 'svc-elsewhere',
  );
  assert.deepEqual(elsewhere, []);
});

test('§1.8 licensing and telemetry default to false and render nothing', async () => {
  const licensing = chartValues.licensing as { enabled: boolean };
  const telemetry = chartValues.telemetry as { enabled: boolean };
  assert.equal(licensing.enabled, false);
  assert.equal(telemetry.enabled, false);
  for (const enabled of [false, true]) {
    const objects = await render({ licensing: { enabled }, telemetry: { enabled } });
    const text = JSON.stringify(objects);
    assert.doesNotMatch(text, /licens|telemetry/i);
  }
});

test('issue 15 metrics: api, orchestrator and worker pods serve /metrics on their own port with scrape annotations; metrics.enabled=false turns it all off', async () => {
  const pods: Array<[string, string]> = [
    ['svc-api', 'api'],
    ['svc-orchestrator', 'orchestrator'],
    ['svc-worker', 'worker'],
  ];
  const objects = await render({ metrics: { port: 9100 } });
  for (const [name] of pods) {
    const pod = find<V1Deployment>(objects, 'Deployment', name).spec?.template;
    assert.deepEqual(
      pod?.metadata?.annotations,
      {
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': '9100',
        'prometheus.io/path': '/metrics',
      },
      name,
    );
    assert.equal(pod?.metadata?.labels?.['svc/metrics'], 'true', name);
    const c = container(objects, 'Deployment', name);
    assert.deepEqual(
      c.ports?.find((p) => p.name === 'metrics'),
      { name: 'metrics', containerPort: 9100 },
      name,
    );
    assert.deepEqual([env(c).SVC_METRICS_PORT, env(c).SVC_METRICS_HOST], ['9100', '0.0.0.0'], name);
  }
  // The API Service and the Ingress stay on the API port: /metrics never leaves the pod network.
  const apiService = find<V1Service>(objects, 'Service', 'svc-api');
  assert.deepEqual(
    apiService.spec?.ports?.map((p) => p.port),
    [8080],
  );
  assert.doesNotMatch(JSON.stringify(find<V1Ingress>(objects, 'Ingress', 'svc')), /9100|metrics/);
  // No ServiceMonitor by default (its CRD may not exist), nor the Service it needs.
  assert.equal(objects.filter((o) => o.kind === 'ServiceMonitor').length, 0);
  assert.equal(
    objects.some((o) => o.metadata?.name === 'svc-metrics'),
    false,
  );

  const off = await render({ metrics: { enabled: false, serviceMonitor: { enabled: true } } });
  for (const [name] of pods) {
    const pod = find<V1Deployment>(off, 'Deployment', name).spec?.template;
    assert.equal(pod?.metadata?.annotations, undefined, name);
    assert.equal(pod?.metadata?.labels?.['svc/metrics'], undefined, name);
    const c = container(off, 'Deployment', name);
    assert.equal(
      c.ports?.find((p) => p.name === 'metrics'),
      undefined,
      name,
    );
    assert.equal(env(c).SVC_METRICS_PORT, '0', name);
  }
  assert.equal(off.filter((o) => o.kind === 'ServiceMonitor').length, 0);
});

test('issue 15 metrics: metrics.serviceMonitor.enabled renders a ServiceMonitor over a headless Service selecting exactly the pods that serve /metrics', async () => {
  const objects = await render({
    metrics: { serviceMonitor: { enabled: true, interval: '15s', labels: { release: 'prom' } } },
  });
  const service = find<V1Service>(objects, 'Service', 'svc-metrics');
  assert.equal(service.spec?.clusterIP, 'None');
  assert.deepEqual(service.spec?.selector, {
    'app.kubernetes.io/name': 'svc',
    'app.kubernetes.io/instance': 'svc',
    'svc/metrics': 'true',
  });
  assert.deepEqual(service.spec?.ports, [{ name: 'metrics', port: 9464, targetPort: 'metrics' }]);
  const selected = objects.filter((o) => {
    const labels = (o as V1Deployment | V1StatefulSet).spec?.template?.metadata?.labels ?? {};
    return Object.entries(service.spec?.selector ?? {}).every(([k, v]) => labels[k] === v);
  });
  assert.deepEqual(selected.map((o) => o.metadata?.name).sort(), [
    'svc-api',
    'svc-orchestrator',
    'svc-worker',
  ]);
  const monitor = find<KubernetesObject & { spec: Record<string, unknown> }>(
    objects,
    'ServiceMonitor',
    'svc',
  );
  assert.equal(monitor.apiVersion, 'monitoring.coreos.com/v1');
  assert.equal(monitor.metadata?.labels?.release, 'prom');
  assert.deepEqual(monitor.spec, {
    selector: {
      matchLabels: {
        'app.kubernetes.io/instance': 'svc',
        'app.kubernetes.io/component': 'metrics',
      },
    },
    namespaceSelector: { matchNames: [ns] },
    endpoints: [{ port: 'metrics', path: '/metrics', interval: '15s' }],
  });
  assert.deepEqual(service.metadata?.labels?.['app.kubernetes.io/component'], 'metrics');
});

test('§2.9 admission.engine=vap renders the three policies with the install literally; none renders none', async () => {
  const objects = await render({ serviceAccount: { name: 'svc-cp' } });
  const policies = objects.filter((o) => o.kind?.startsWith('ValidatingAdmissionPolicy'));
  assert.equal(policies.length, 6);
  const text = JSON.stringify(policies);
  assert.doesNotMatch(text, /params|paramKind|paramRef/);
  assert.match(text, /system:serviceaccount:svc-system:svc-cp/);
  assert.match(text, /9b1c2d3e-4f5a-4b6c-8d7e-8f9a0b1c2d3e/);
  assert.match(text, /3f2a1c4e-5b6d-4e7f-8a9b-0c1d2e3f4a5b/);
  const none = await render({ admission: { engine: 'none' } });
  assert.equal(none.filter((o) => o.kind?.startsWith('ValidatingAdmissionPolicy')).length, 0);
});

/** The sources of a NetworkPolicy's first rule, as rendered (YAML `from`, not the model's `_from`). */
function peers(objects: KubernetesObject[], name: string): V1NetworkPolicyPeer[] {
  const policy = find<V1NetworkPolicy>(objects, 'NetworkPolicy', name);
  const rule = policy.spec?.ingress?.[0] as { from?: V1NetworkPolicyPeer[] } | undefined;
  return rule?.from ?? [];
}

test('§5.8 NetworkPolicies: the API from the ingress controller and this install’s tenants, the database from svc only', async () => {
  const objects = await render();
  assert.deepEqual(
    peers(objects, 'svc-api').map(
      (peer) => peer.namespaceSelector?.matchLabels ?? peer.podSelector?.matchLabels,
    ),
    [
      { 'kubernetes.io/metadata.name': 'ingress-nginx' },
      { 'managed-by': 'svc', 'install-id': '9b1c2d3e-4f5a-4b6c-8d7e-8f9a0b1c2d3e' },
      { 'app.kubernetes.io/part-of': 'svc', 'app.kubernetes.io/instance': 'svc' },
    ],
  );
  assert.deepEqual(
    peers(objects, 'svc-postgres').map((peer) => [
      peer.namespaceSelector,
      peer.podSelector?.matchLabels?.['app.kubernetes.io/component'],
    ]),
    [
      [undefined, 'api'],
      [undefined, 'orchestrator'],
      [undefined, 'worker'],
    ],
  );
  // Besides the API port: only the metrics port, from the scrapers' namespaces (issue 15).
  const scrape = {
    from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
    ports: [{ port: 'metrics', protocol: 'TCP' }],
  };
  assert.deepEqual(
    find<V1NetworkPolicy>(objects, 'NetworkPolicy', 'svc-api').spec?.ingress?.[1],
    scrape,
  );
  for (const name of ['svc-orchestrator', 'svc-worker']) {
    const ingress = find<V1NetworkPolicy>(objects, 'NetworkPolicy', name).spec?.ingress;
    assert.deepEqual(ingress, [scrape], name);
  }
  const quiet = await render({ metrics: { enabled: false } });
  assert.equal(find<V1NetworkPolicy>(quiet, 'NetworkPolicy', 'svc-api').spec?.ingress?.length, 1);
  for (const name of ['svc-orchestrator', 'svc-worker']) {
    assert.deepEqual(find<V1NetworkPolicy>(quiet, 'NetworkPolicy', name).spec?.ingress, [], name);
  }
  const obs = await render({
    metrics: { scrapeNamespaceSelector: { 'kubernetes.io/metadata.name': null, team: 'obs' } },
  });
  assert.deepEqual(peers(obs, 'svc-worker'), [
    { namespaceSelector: { matchLabels: { team: 'obs' } } },
  ]);
  const off = await render({ networkPolicies: { enabled: false } });
  assert.equal(off.filter((o) => o.kind === 'NetworkPolicy').length, 0);
});

test('§5.8 the ClusterRoles grant no wildcard, nothing on admission or cluster kinds; cluster-wide only namespaces, rolebindings and binding the tenant role', async () => {
  const objects = await render();
  const cluster = find<V1ClusterRole>(objects, 'ClusterRole', 'svc.svc-system');
  const tenant = find<V1ClusterRole>(objects, 'ClusterRole', 'svc-tenant.svc-system');
  for (const rule of [...(cluster.rules ?? []), ...(tenant.rules ?? [])]) {
    const text = JSON.stringify(rule);
    assert.doesNotMatch(text, /"\*"/);
    assert.doesNotMatch(text, /admissionregistration|apiextensions|escalate|impersonate/);
    assert.doesNotMatch(text, /clusterrolebindings|"nodes"|persistentvolumes"|storageclasses/);
  }
  // Bound cluster-wide: exactly these, and `bind` only on the tenant role by name.
  assert.deepEqual(
    (cluster.rules ?? []).map((r) => ({
      apiGroups: r.apiGroups,
      resources: r.resources,
      verbs: r.verbs,
      resourceNames: r.resourceNames,
    })),
    [
      {
        apiGroups: [''],
        resources: ['namespaces'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
        resourceNames: undefined,
      },
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['rolebindings'],
        verbs: ['get', 'create', 'delete'],
        resourceNames: undefined,
      },
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['clusterroles'],
        verbs: ['bind'],
        resourceNames: ['svc-tenant.svc-system'],
      },
      {
        apiGroups: ['authorization.k8s.io'],
        resources: ['selfsubjectaccessreviews'],
        verbs: ['create'],
        resourceNames: undefined,
      },
    ],
  );
  // The tenant role: namespaced kinds only, no bind, never bound cluster-wide.
  assert.doesNotMatch(JSON.stringify(tenant.rules), /clusterroles|"namespaces"|"bind"/);
  const bindings = objects.filter((o) => o.kind === 'ClusterRoleBinding');
  assert.deepEqual(
    bindings.map((b) => (b as { roleRef?: { name?: string } }).roleRef?.name),
    ['svc.svc-system'],
  );
});

// Each case: values over the sample, and the text helm must print. TypeBox, given the same
// values merged over values.yaml as Helm merges them, must agree.
const rejected: Array<[string, Values, RegExp]> = [
  ['a missing install.installId', { install: { installId: null } }, /missing property 'installId'/],
  [
    'a missing ingress hostname',
    { ingress: { hostnames: { mssp: null } } },
    /missing property 'mssp'/,
  ],
  ['a bad uuid', { install: { msspId: 'not-a-uuid' } }, /msspId.*does not match pattern/],
  [
    'an upper-case uuid',
    { install: { installId: '9B1C2D3E-4F5A-4B6C-8D7E-8F9A0B1C2D3E' } },
    /installId/,
  ],
  ['database.enabled as a string', { database: { enabled: 'yes' } }, /\/database\/enabled/],
  [
    'a port as a string',
    { database: { external: { port: 'five' } } },
    /\/database\/external\/port/,
  ],
  ['auth.mode outside internal|proxy', { auth: { mode: 'oidc' } }, /\/auth\/mode/],
  [
    'admission.engine outside vap|none',
    { admission: { engine: 'kyverno' } },
    /\/admission\/engine/,
  ],
  ['a bad CIDR', { oidc: { trustedProxyCIDRs: ['10.0.0.0/33'] } }, /trustedProxyCIDRs/],
  [
    'a customer hostname without a wildcard',
    { ingress: { hostnames: { customer: 'customers.example.com' } } },
    /customer/,
  ],
  ['an upper-case hostname', { ingress: { hostnames: { mssp: 'MSSP.example.com' } } }, /mssp/],
  ['licensing.enabled as a string', { licensing: { enabled: 'false' } }, /\/licensing\/enabled/],
  ['an unknown top-level key', { replicas: 2 }, /additional properties 'replicas' not allowed/],
  [
    'an unknown nested key',
    { resources: { api: { requests: { gpu: '1' } } } },
    /additional properties 'gpu' not allowed/,
  ],
  [
    'database.enabled=false without database.external',
    { database: { enabled: false } },
    /missing properties 'host', 'existingSecret'/,
  ],
  [
    'database.enabled=false without existingSecret',
    { database: { enabled: false, external: { host: 'db.example.com' } } },
    /missing property 'existingSecret'/,
  ],
  ['metrics.port on the API port', { metrics: { port: 8080 } }, /\/metrics\/port/],
  ['metrics.port below 1024', { metrics: { port: 80 } }, /\/metrics\/port/],
  [
    'a scrape namespace label key with a space',
    { metrics: { scrapeNamespaceSelector: { 'team name': 'obs' } } },
    /scrapeNamespaceSelector/,
  ],
  [
    'an outbound host given as a URL',
    { outbound: { allowHosts: ['https://llm.corp.internal'] } },
    /\/outbound\/allowHosts\/0/,
  ],
  ['an outbound CIDR without a prefix', { outbound: { allowCIDRs: ['10.0.0.1'] } }, /allowCIDRs/],
  ['a CA bundle that is not PEM', { outbound: { caBundle: 'not a certificate' } }, /caBundle/],
  ['a grace period without a unit', { tenants: { decommissionGrace: '24' } }, /decommissionGrace/],
  ['a retention in weeks', { tenants: { retention: '4w' } }, /\/tenants\/retention/],
  [
    'a StorageClass name with capitals',
    { tenants: { storageClassName: 'Fast_SSD' } },
    /\/tenants\/storageClassName/,
  ],
  [
    'a negative LLM price',
    { defaults: { llm: { prices: { m: { input_per_mtok: -1, output_per_mtok: 1 } } } } },
    /\/defaults\/llm\/prices\/m\/input_per_mtok/,
  ],
  [
    'an LLM price without its output rate',
    { defaults: { llm: { prices: { m: { input_per_mtok: 1 } } } } },
    /output_per_mtok/,
  ],
  [
    'a ServiceMonitor interval without a unit',
    { metrics: { serviceMonitor: { interval: '30' } } },
    /\/metrics\/serviceMonitor\/interval/,
  ],
];

test('§2.9 values.schema.json rejects missing keys, wrong types, bad uuids, unknown keys and an incomplete external database', async () => {
  for (const [what, overrides, message] of rejected) {
    await assert.rejects(
      helmWithValues(
        helm,
        ['template', 'svc', systemChart, '--namespace', ns],
        mergeValues(sample, overrides),
      ),
      (error: Error) =>
        message.test(error.message) && /don't meet the specifications/.test(error.message),
      `helm must reject ${what}`,
    );
  }
});

test('§2.9 TypeBox Compile(SystemValues) agrees with Helm on every case', () => {
  for (const [what, overrides] of rejected) {
    const merged = mergeValues(chartValues, mergeValues(sample, overrides));
    assert.equal(checkValues.Check(merged), false, `TypeBox must reject ${what}`);
  }
  const accepted: Values[] = [
    {},
    { database: { enabled: false, external: { host: 'db.example.com', existingSecret: 's' } } },
    { resources: { api: { limits: { cpu: 2 } } } },
    { oidc: { trustedProxyCIDRs: ['10.0.0.0/8', 'fd00::/8'] }, auth: { mode: 'proxy' } },
    { image: { tag: 'latest' }, ingress: { tls: { issuerRef: 'letsencrypt' } } },
    {
      outbound: { allowHosts: ['*.corp.internal'], allowCIDRs: ['10.0.0.0/8'] },
      defaults: { llm: { prices: { m: { input_per_mtok: 0, output_per_mtok: 0.5 } } } },
    },
  ];
  for (const overrides of accepted) {
    const merged = mergeValues(chartValues, mergeValues(sample, overrides));
    assert.deepEqual([...checkValues.Errors(merged)], [], JSON.stringify(overrides));
  }
});

test('§2.9 accepted values render with helm too', async () => {
  const objects = await render({
    database: { enabled: false, external: { host: 'db.example.com', existingSecret: 's' } },
    resources: { api: { limits: { cpu: 2 } } },
    oidc: { trustedProxyCIDRs: ['10.0.0.0/8', 'fd00::/8'] },
  });
  assert.equal(container(objects, 'Deployment', 'svc-api').resources?.limits?.cpu, 2);
});

test('§2.9 checks before install: the nil uuid and a release outside install.namespace are refused', async () => {
  const nil = '00000000-0000-0000-0000-000000000000';
  await assert.rejects(
    render({ install: { installId: nil } }),
    /install\.installId: expected this install's uuid, got the nil uuid/,
  );
  await assert.rejects(
    render({ install: { msspId: nil } }),
    /install\.msspId: expected this MSSP's uuid/,
  );
  await assert.rejects(
    renderSystemChart(helm, 'default', sample),
    /must be installed into the install namespace "svc-system" \(install.namespace\), not "default"/,
  );
});

// On the cluster: the rendered RBAC alone (no admission policies), asked with
// SubjectAccessReviews. The install namespace is fresh, so the ClusterRoles and binding, named
// after it, are unique to this run. A second fresh namespace stands in for a tenant namespace,
// with the RoleBinding the orchestrator makes there (src/cluster/namespaces.ts
// bindServiceIdentity).
test('§5.8 RBAC: cluster-wide svc may create namespaces and bind only its tenant role; workloads and Secrets only where that role is bound', {
  timeout: 120_000,
}, async () => {
  const namespace = await createTestNamespace(cluster, 'svc-rbac');
  const tenantNamespace = await createTestNamespace(cluster, 'svc-rbac-tenant');
  const objects = await renderSystemChart(helm, namespace, sampleValues(namespace), [
    'templates/serviceaccount.yaml',
    'templates/rbac.yaml',
  ]);
  assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata?.name}`).sort(), [
    `ClusterRole/svc-tenant.${namespace}`,
    `ClusterRole/svc.${namespace}`,
    `ClusterRoleBinding/svc.${namespace}`,
    'Role/svc-install-secrets',
    'RoleBinding/svc-install-secrets',
    'ServiceAccount/svc',
  ]);
  const tenantBinding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'svc', namespace: tenantNamespace },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: `svc-tenant.${namespace}`,
    },
    subjects: [{ kind: 'ServiceAccount', name: 'svc', namespace }],
  } as KubernetesObject;
  const admin = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
  const created: KubernetesObject[] = [];
  try {
    for (const object of [...objects, tenantBinding]) created.push(await admin.create(object));
    const authz = cluster.kubeConfig.makeApiClient(AuthorizationV1Api);
    const can = async (
      verb: string,
      resource: string,
      group = '',
      where?: string,
      name?: string,
    ) => {
      const review = await authz.createSubjectAccessReview({
        body: {
          spec: {
            user: `system:serviceaccount:${namespace}:svc`,
            groups: [
              'system:serviceaccounts',
              `system:serviceaccounts:${namespace}`,
              'system:authenticated',
            ],
            resourceAttributes: {
              verb,
              // `deployments/scale`: the resource and its subresource.
              resource: resource.split('/')[0] ?? resource,
              ...(resource.includes('/') ? { subresource: resource.split('/')[1] } : {}),
              group,
              ...(where ? { namespace: where } : {}),
              ...(name ? { name } : {}),
            },
          },
        },
      });
      return review.status?.allowed === true;
    };
    await waitUntil('the svc ClusterRoleBinding and tenant RoleBinding to take effect', async () =>
      (await can('create', 'namespaces')) && (await can('create', 'secrets', '', tenantNamespace))
        ? true
        : undefined,
    );
    const rbacGroup = 'rbac.authorization.k8s.io';
    const tenantRole = `svc-tenant.${namespace}`;
    type Case = [
      verb: string,
      resource: string,
      group: string,
      where?: string | undefined,
      name?: string,
    ];
    const allowed: Case[] = [
      // Cluster-wide (ClusterRole svc.<ns>).
      ['create', 'namespaces', ''],
      ['delete', 'namespaces', ''],
      ['create', 'rolebindings', rbacGroup, 'tenant-anything'],
      ['get', 'rolebindings', rbacGroup, 'tenant-anything', 'svc'],
      ['delete', 'rolebindings', rbacGroup, 'tenant-anything', 'svc'],
      ['bind', 'clusterroles', rbacGroup, 'tenant-anything', tenantRole],
      ['bind', 'clusterroles', rbacGroup, undefined, tenantRole],
      ['create', 'selfsubjectaccessreviews', 'authorization.k8s.io'],
      // The install namespace (Role svc-install-secrets).
      ['update', 'secrets', '', namespace],
      ['get', 'secrets', '', namespace],
      // A tenant namespace with svc's RoleBinding (ClusterRole svc-tenant.<ns>).
      ['create', 'deployments', 'apps', tenantNamespace],
      ['create', 'statefulsets', 'apps', tenantNamespace],
      ['create', 'secrets', '', tenantNamespace],
      ['list', 'secrets', '', tenantNamespace],
      ['create', 'roles', rbacGroup, tenantNamespace],
      ['create', 'rolebindings', rbacGroup, tenantNamespace],
      ['create', 'networkpolicies', 'networking.k8s.io', tenantNamespace],
      ['create', 'resourcequotas', '', tenantNamespace],
      ['create', 'persistentvolumeclaims', '', tenantNamespace],
      ['list', 'pods', '', tenantNamespace],
      ['list', 'replicasets', 'apps', tenantNamespace],
      // Suspension scales through the subresource (docs/orchestrator.md "Suspension").
      ['patch', 'deployments/scale', 'apps', tenantNamespace],
      ['patch', 'statefulsets/scale', 'apps', tenantNamespace],
    ];
    for (const [verb, resource, group, where, name] of allowed) {
      assert.equal(
        await can(verb, resource, group, where, name),
        true,
        `may ${verb} ${resource} ${where ?? ''} ${name ?? ''}`,
      );
    }
    const denied: Case[] = [
      // No reads or workloads outside svc's own namespaces: the point of the split.
      ['get', 'secrets', '', 'default'],
      ['list', 'secrets', '', 'default'],
      ['get', 'secrets', '', 'kube-system'],
      ['list', 'secrets', '', 'kube-system'],
      ['list', 'secrets', ''],
      ['list', 'secrets', '', 'tenant-anything'],
      ['create', 'secrets', '', 'tenant-anything'],
      ['create', 'deployments', 'apps', 'default'],
      ['create', 'deployments', 'apps', 'kube-system'],
      ['create', 'deployments', 'apps', 'tenant-anything'],
      ['list', 'deployments', 'apps'],
      ['create', 'configmaps', '', 'kube-system'],
      ['list', 'configmaps', '', 'kube-system'],
      ['list', 'pods', '', 'kube-system'],
      ['create', 'roles', rbacGroup, 'tenant-anything'],
      ['update', 'rolebindings', rbacGroup, 'tenant-anything', 'svc'],
      ['list', 'rolebindings', rbacGroup],
      ['create', 'configmaps', '', namespace],
      // Nothing on admission, cluster RBAC or cluster kinds.
      ['create', 'validatingadmissionpolicies', 'admissionregistration.k8s.io'],
      ['delete', 'validatingadmissionpolicies', 'admissionregistration.k8s.io'],
      ['create', 'validatingadmissionpolicybindings', 'admissionregistration.k8s.io'],
      ['delete', 'validatingadmissionpolicybindings', 'admissionregistration.k8s.io'],
      ['create', 'validatingwebhookconfigurations', 'admissionregistration.k8s.io'],
      ['create', 'mutatingwebhookconfigurations', 'admissionregistration.k8s.io'],
      ['create', 'clusterroles', rbacGroup],
      ['delete', 'clusterroles', rbacGroup],
      ['update', 'clusterroles', rbacGroup, undefined, tenantRole],
      ['create', 'clusterrolebindings', rbacGroup],
      ['delete', 'clusterrolebindings', rbacGroup],
      ['create', 'nodes', ''],
      ['delete', 'nodes', ''],
      ['create', 'persistentvolumes', ''],
      ['delete', 'persistentvolumes', ''],
      ['create', 'customresourcedefinitions', 'apiextensions.k8s.io'],
      ['delete', 'customresourcedefinitions', 'apiextensions.k8s.io'],
      ['create', 'storageclasses', 'storage.k8s.io'],
      ['create', 'subjectaccessreviews', 'authorization.k8s.io'],
      ['create', 'tokenreviews', 'authentication.k8s.io'],
      // Escalation: bind only svc-tenant.<ns>, by name.
      ['escalate', 'roles', rbacGroup, tenantNamespace],
      ['escalate', 'clusterroles', rbacGroup],
      ['bind', 'roles', rbacGroup, tenantNamespace],
      ['bind', 'clusterroles', rbacGroup],
      ['bind', 'clusterroles', rbacGroup, 'tenant-anything', 'cluster-admin'],
      ['bind', 'clusterroles', rbacGroup, tenantNamespace, 'cluster-admin'],
      ['bind', 'clusterroles', rbacGroup, undefined, 'admin'],
      ['bind', 'clusterroles', rbacGroup, undefined, `svc.${namespace}`],
      ['impersonate', 'users', ''],
      ['impersonate', 'groups', ''],
      ['impersonate', 'serviceaccounts', '', 'kube-system'],
      ['create', 'pods', '', tenantNamespace],
      ['create', 'pods/exec', '', tenantNamespace],
      ['patch', 'deployments/scale', 'apps', 'tenant-anything'],
    ];
    for (const [verb, resource, group, where, name] of denied) {
      assert.equal(
        await can(verb, resource, group, where, name),
        false,
        `may not ${verb} ${resource} ${where ?? ''} ${name ?? ''}`,
      );
    }
  } finally {
    for (const object of created.reverse()) await admin.delete(object).catch(() => undefined);
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    for (const name of [namespace, tenantNamespace]) {
      await core.deleteNamespace({ name }).catch(() => undefined);
    }
  }
});

// The whole chart through `helm install` and `helm upgrade` on the test cluster (kwok runs no
// containers, so this proves the objects are accepted and the lookups work, not that svc runs).
test('§2.9 helm install, then upgrade keeps the generated secrets and refuses another installId', {
  timeout: 240_000,
}, async () => {
  const namespace = await createTestNamespace(cluster, 'svc-system');
  const values = mergeValues(
    sampleValues(namespace, { installId: randomUUID(), msspId: randomUUID() }),
    {},
  );
  const helmIn = (args: string[], v: Values) =>
    helmWithValues(
      helm,
      [...args, '--namespace', namespace, '--kubeconfig', cluster.kubeconfigPath],
      v,
    );
  const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  try {
    await helmIn(['install', 'svc', systemChart, '--timeout', '2m'], values);
    const secrets = async () =>
      Promise.all(
        ['svc-database', 'svc-token-key'].map(
          async (name) => (await core.readNamespacedSecret({ name, namespace })).data,
        ),
      );
    const before = await secrets();
    await helmIn(['upgrade', 'svc', systemChart, '--timeout', '2m'], values);
    assert.deepEqual(await secrets(), before, 'passwords and the token key survive an upgrade');

    await assert.rejects(
      helmIn(
        ['upgrade', 'svc', systemChart],
        mergeValues(values, { install: { installId: randomUUID() } }),
      ),
      /install\.installId: this install already has installId/,
    );
    const install = await core.readNamespacedConfigMap({ name: 'svc-install', namespace });
    assert.equal(install.data?.installId, (values.install as { installId: string }).installId);
  } finally {
    await run(helm, [
      'uninstall',
      'svc',
      '--namespace',
      namespace,
      '--kubeconfig',
      cluster.kubeconfigPath,
    ]).catch(() => undefined);
    await core.deleteNamespace({ name: namespace }).catch((error: unknown) => {
      if (!(error instanceof ApiException && error.code === 404)) throw error;
    });
  }
});

test('issue 31 scheduling.nodeSelector and .tolerations reach every pod of the release; none by default; a bad toleration is refused', async () => {
  const workloads = (objects: KubernetesObject[]) =>
    objects.filter(
      (o): o is V1Deployment | V1StatefulSet => o.kind === 'Deployment' || o.kind === 'StatefulSet',
    );
  const plain = workloads(await render({ edgeProxy: { enabled: true } }));
  assert.deepEqual(plain.map((w) => w.metadata?.name).sort(), [
    'svc-api',
    'svc-edge-proxy',
    'svc-orchestrator',
    'svc-postgres',
    'svc-worker',
  ]);
  for (const w of plain) {
    assert.equal(w.spec?.template.spec?.nodeSelector, undefined, w.metadata?.name);
    assert.equal(w.spec?.template.spec?.tolerations, undefined, w.metadata?.name);
  }
  const nodeSelector = { 'svc.example/pool': 'control' };
  const tolerations = [
    { key: 'svc.example/dedicated', operator: 'Equal', value: 'svc', effect: 'NoSchedule' },
    {
      key: 'node.kubernetes.io/unreachable',
      operator: 'Exists',
      effect: 'NoExecute',
      tolerationSeconds: 60,
    },
  ];
  const placed = workloads(
    await render({ edgeProxy: { enabled: true }, scheduling: { nodeSelector, tolerations } }),
  );
  assert.equal(placed.length, 5);
  for (const w of placed) {
    assert.deepEqual(w.spec?.template.spec?.nodeSelector, nodeSelector, w.metadata?.name);
    assert.deepEqual(w.spec?.template.spec?.tolerations, tolerations, w.metadata?.name);
  }
  // The edge proxy keeps its own anti-affinity beside them.
  const proxy = placed.find((w) => w.metadata?.name === 'svc-edge-proxy');
  assert.ok(proxy?.spec?.template.spec?.affinity?.podAntiAffinity);
  await assert.rejects(
    render({ scheduling: { nodeSelector: {}, tolerations: [{ key: 'a', operator: 'Maybe' }] } }),
    /operator/,
  );
});

test('issue 32: a new chart version leaves the database pod template alone (no PostgreSQL restart on upgrade)', async () => {
  const work = await mkdtemp(join(tmpdir(), 'svc-system-bumped-'));
  try {
    const bumped = join(work, 'svc-system');
    await cp(systemChart, bumped, { recursive: true, dereference: true });
    const chartYaml = join(bumped, 'Chart.yaml');
    await writeFile(
      chartYaml,
      (await readFile(chartYaml, 'utf8'))
        .replace(/^version: .*$/m, 'version: 9.9.9')
        .replace(/^appVersion: .*$/m, 'appVersion: "9.9.9"'),
    );
    const renderFrom = async (chart: string) =>
      parseAllDocuments(
        await helmWithValues(helm, ['template', 'svc', chart, '--namespace', ns], sample),
      ).map((doc) => doc.toJS() as KubernetesObject);
    const [now, next] = await Promise.all([renderFrom(systemChart), renderFrom(bumped)]);
    const template = (objects: KubernetesObject[]) =>
      find<V1StatefulSet>(objects, 'StatefulSet', 'svc-postgres').spec?.template;
    assert.deepEqual(template(next), template(now));
    // The svc workloads do roll (their image tag follows the version): the labels still say which.
    assert.equal(
      find<V1Deployment>(next, 'Deployment', 'svc-api').spec?.template.metadata?.labels?.[
        'app.kubernetes.io/version'
      ],
      '9.9.9',
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});
