import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  ApiException,
  AuthorizationV1Api,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type V1ConfigMap,
  type V1Deployment,
  type V1NetworkPolicy,
  type V1Role,
  type V1Service,
  type V1ValidatingAdmissionPolicy,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { CONFIG_SHA_ANNOTATION, EDGE_PROXY_CONFIG_KEY } from '../../src/orchestrator/edge-proxy.ts';
import { configSha256, renderEdgeProxyConfig } from '../../src/orchestrator/edge-proxy-config.ts';
import { createTestNamespace, serviceAccountKubeconfig } from '../../testcluster/harness.ts';
import { sampleTenantValues } from '../fixtures/tenant-values.ts';
import {
  helmWithValues,
  mergeValues,
  renderSystemChart,
  sampleValues,
  systemChart,
  type Values,
} from '../policies/system-chart.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';

const run = promisify(execFile);
const cluster = getTestCluster();
const helm = join(cluster.binDir, 'helm');
const ns = 'svc-system';
const ENABLED = { edgeProxy: { enabled: true } };

const render = (overrides: Values = {}, namespace = ns) =>
  renderSystemChart(helm, namespace, mergeValues(sampleValues(namespace), overrides));

function named<T extends KubernetesObject>(
  objects: KubernetesObject[],
  kind: string,
  name: string,
) {
  const found = objects.find((o) => o.kind === kind && o.metadata?.name === name);
  assert.ok(found, `rendered ${kind} ${name}`);
  return found as T;
}

function envOf(
  objects: KubernetesObject[],
  deployment: string,
): Record<string, string | undefined> {
  const d = named<V1Deployment>(objects, 'Deployment', deployment);
  const env = d.spec?.template.spec?.containers[0]?.env ?? [];
  return Object.fromEntries(env.map((e) => [e.name, e.value]));
}

const edgeObjects = (objects: KubernetesObject[]) =>
  objects
    .filter((o) => o.metadata?.name === 'svc-edge-proxy')
    .map((o) => o.kind)
    .sort();

test('issue 15 edgeProxy.enabled=false (the default): no proxy, no grant, svc told SVC_EDGE_PROXY=off', async () => {
  const objects = await render();
  assert.deepEqual(edgeObjects(objects), []);
  for (const deployment of ['svc-api', 'svc-orchestrator']) {
    const env = envOf(objects, deployment);
    assert.equal(env.SVC_EDGE_PROXY, 'off');
    assert.equal(env.SVC_EDGE_PORT_BASE, '20000');
  }
  const policy = named<V1ValidatingAdmissionPolicy>(
    objects,
    'ValidatingAdmissionPolicy',
    `svc-namespaced-writes.${ns}`,
  );
  const variable = policy.spec?.variables?.find((v) => v.name === 'edgeProxyObject');
  assert.equal(variable?.expression.trim(), 'false');
});

test('issue 15 edgeProxy.enabled=true: ConfigMap, Service, Deployment, NetworkPolicy, Role; svc told SVC_EDGE_PROXY=on', async () => {
  const objects = await render({
    edgeProxy: {
      enabled: true,
      replicas: 3,
      portBase: 30_000,
      clusterDomain: 'k8s.example',
      service: { type: 'ClusterIP', annotations: { 'lb.example/internal': 'false' } },
    },
  });
  assert.deepEqual(edgeObjects(objects), [
    'ConfigMap',
    'Deployment',
    'NetworkPolicy',
    'PodDisruptionBudget',
    'Role',
    'RoleBinding',
    'Service',
  ]);
  // The bootstrap config is exactly what svc renders for no tenant: its first sync writes nothing.
  const configMap = named<V1ConfigMap>(objects, 'ConfigMap', 'svc-edge-proxy');
  const config = configMap.data?.[EDGE_PROXY_CONFIG_KEY];
  assert.equal(config, renderEdgeProxyConfig({ tenants: [] }));
  const deployment = named<V1Deployment>(objects, 'Deployment', 'svc-edge-proxy');
  const template = deployment.spec?.template;
  assert.equal(
    template?.metadata?.annotations?.[CONFIG_SHA_ANNOTATION],
    configSha256(config ?? ''),
  );
  assert.equal(deployment.spec?.replicas, 3);
  assert.equal(template?.metadata?.labels?.['app.kubernetes.io/part-of'], undefined);
  const haproxy = template?.spec?.containers[0];
  assert.equal(haproxy?.image, 'docker.io/library/haproxy:2.6');
  assert.equal(haproxy?.readinessProbe?.httpGet?.path, '/healthz');
  assert.equal(haproxy?.livenessProbe?.httpGet?.path, '/healthz');
  assert.deepEqual(haproxy?.resources, {
    requests: { cpu: '100m', memory: '128Mi' },
    limits: { cpu: '1', memory: '512Mi' },
  });
  assert.equal(haproxy?.securityContext?.readOnlyRootFilesystem, true);
  // Soft stop before SIGTERM: open connections may finish within the grace period.
  assert.deepEqual(haproxy?.lifecycle?.preStop?.exec?.command, [
    '/bin/sh',
    '-c',
    'kill -USR1 1; sleep 30',
  ]);
  assert.equal(template?.spec?.terminationGracePeriodSeconds, 40);
  assert.equal(template?.spec?.automountServiceAccountToken, false);
  assert.equal(template?.spec?.volumes?.[0]?.configMap?.name, 'svc-edge-proxy');

  const service = named<V1Service>(objects, 'Service', 'svc-edge-proxy');
  assert.equal(service.spec?.type, 'ClusterIP');
  assert.deepEqual(service.metadata?.annotations, { 'lb.example/internal': 'false' });
  assert.deepEqual(
    service.spec?.ports?.map((p) => [p.name, p.port]),
    [['health', 8404]],
  );
  assert.deepEqual(service.spec?.selector, template?.metadata?.labels);

  const policy = named<V1NetworkPolicy>(objects, 'NetworkPolicy', 'svc-edge-proxy');
  assert.deepEqual(policy.spec?.podSelector?.matchLabels, template?.metadata?.labels);
  assert.deepEqual(policy.spec?.ingress, [
    {
      ports: [
        { protocol: 'TCP', port: 30_000, endPort: 65_535 },
        { protocol: 'TCP', port: 8404 },
      ],
    },
  ]);
  // The API's policy admits part-of=svc pods; the internet-facing proxy is not one. (Rendered
  // YAML, not the client's model: the peer list is `from`.)
  const api = named<V1NetworkPolicy>(objects, 'NetworkPolicy', 'svc-api');
  type Peer = { podSelector?: { matchLabels?: Record<string, string> } };
  const apiRule = (api.spec?.ingress?.[0] ?? {}) as { from?: Peer[] };
  const apiPeers = apiRule.from ?? [];
  const podPeers = apiPeers.filter((peer) => peer.podSelector);
  assert.ok(podPeers.length > 0, 'the API admits some of svc’s own pods');
  for (const peer of podPeers) {
    const labels: Record<string, string> = template?.metadata?.labels ?? {};
    const admitted: boolean = Object.entries(peer.podSelector?.matchLabels ?? {}).every(
      ([k, v]) => labels[k] === v,
    );
    assert.equal(admitted, false, 'the edge proxy cannot reach the API');
  }

  const role = named<V1Role>(objects, 'Role', 'svc-edge-proxy');
  assert.deepEqual(role.rules, [
    {
      apiGroups: [''],
      resources: ['configmaps', 'services'],
      resourceNames: ['svc-edge-proxy'],
      verbs: ['get', 'update'],
    },
    {
      apiGroups: ['apps'],
      resources: ['deployments'],
      resourceNames: ['svc-edge-proxy'],
      verbs: ['get', 'patch'],
    },
  ]);
  for (const deployment of ['svc-api', 'svc-orchestrator']) {
    const env = envOf(objects, deployment);
    assert.deepEqual(
      [env.SVC_EDGE_PROXY, env.SVC_EDGE_PORT_BASE, env.SVC_CLUSTER_DOMAIN],
      ['on', '30000', 'k8s.example'],
    );
  }
  const writes = named<V1ValidatingAdmissionPolicy>(
    objects,
    'ValidatingAdmissionPolicy',
    `svc-namespaced-writes.${ns}`,
  );
  const variable = writes.spec?.variables?.find((v) => v.name === 'edgeProxyObject');
  assert.match(variable?.expression ?? '', /request\.name == 'svc-edge-proxy'/);
  assert.match(variable?.expression ?? '', /request\.operation == 'UPDATE'/);
});

test('issue 15 edgeProxy values: the schema refuses a port base under the health port, another service type, unknown keys', async () => {
  const bad: Values[] = [
    { edgeProxy: { enabled: true, portBase: 8000 } },
    { edgeProxy: { enabled: true, portBase: 65_000 } },
    { edgeProxy: { service: { type: 'NodePort' } } },
    { edgeProxy: { enabled: 'yes' } },
    { edgeProxy: { clusterDomain: 'Cluster Local' } },
    { edgeProxy: { extra: true } },
  ];
  for (const overrides of bad) {
    await assert.rejects(
      helmWithValues(
        helm,
        ['template', 'svc', systemChart, '--namespace', ns],
        mergeValues(sampleValues(ns), overrides),
      ),
      /values don't meet the specifications of the schema/,
      JSON.stringify(overrides),
    );
  }
});

test('issue 15 the edge proxy is valid haproxy config as the chart ships it (haproxy -c)', async () => {
  const file = join(systemChart, 'files', 'edge-proxy-haproxy.cfg');
  const config = await readFile(file, 'utf8');
  const { stdout } = await run('/usr/sbin/haproxy', ['-c', '-f', file]);
  assert.match(stdout, /Configuration file is valid/);
  assert.equal(config, renderEdgeProxyConfig({ tenants: [] }));
});

test('issue 15 the tenant chart in edge-proxy mode admits the install namespace (the proxy) to the monitor ports', async () => {
  const values = sampleTenantValues();
  values.monitorIngress = {
    ...values.monitorIngress,
    mode: 'edge-proxy',
    edgePorts: { events: 20_000, enrollment: 20_001 },
  };
  const tenantChart = fileURLToPath(new URL('../../charts/svc-tenant', import.meta.url));
  const stdout = await helmWithValues(
    helm,
    ['template', 'svc-tenant', tenantChart, '--namespace', 'tenant-acme'],
    values as unknown as Values,
  );
  const objects = parseAllDocuments(stdout)
    .map((d) => d.toJS() as KubernetesObject | null)
    .filter((o): o is KubernetesObject => o !== null);
  const service = named<V1Service>(objects, 'Service', 'monitor');
  assert.equal(service.spec?.type, 'ClusterIP');
  assert.deepEqual(
    service.spec?.ports?.map((p) => p.port),
    [1514, 1515],
  );
  const manager = { 'app.kubernetes.io/name': 'monitor-manager' };
  const install = named<V1NetworkPolicy>(objects, 'NetworkPolicy', 'allow-install-namespace');
  // The manager is selected (it is no adapter) and the install namespace is the peer.
  const notAdapter = install.spec?.podSelector?.matchExpressions?.[0];
  assert.deepEqual(notAdapter, {
    key: 'app.kubernetes.io/name',
    operator: 'NotIn',
    values: ['svc-adapter'],
  });
  assert.ok(!notAdapter?.values?.includes(manager['app.kubernetes.io/name']));
  assert.deepEqual(install.spec?.ingress, [
    {
      from: [
        {
          namespaceSelector: {
            matchLabels: { 'kubernetes.io/metadata.name': values.networkPolicies.installNamespace },
          },
        },
      ],
    },
  ]);
  const agents = named<V1NetworkPolicy>(objects, 'NetworkPolicy', 'allow-monitor-agents');
  assert.equal(
    agents.spec?.podSelector?.matchLabels?.['app.kubernetes.io/name'],
    'monitor-manager',
  );
  assert.deepEqual(
    agents.spec?.ingress?.[0]?.ports?.map((p) => p.port),
    [1514, 1515],
  );
  // Behind the edge the agents' connections arrive from the proxy's Pods only (HAProxy is not
  // transparent): nothing else may reach the agent ports, which would bypass the edge.
  const peers = (agents.spec?.ingress?.[0] as { from?: unknown } | undefined)?.from;
  assert.deepEqual(peers, [
    {
      namespaceSelector: {
        matchLabels: { 'kubernetes.io/metadata.name': values.networkPolicies.installNamespace },
      },
      podSelector: {
        matchLabels: {
          'app.kubernetes.io/name': 'svc-edge-proxy',
          'app.kubernetes.io/component': 'edge-proxy',
        },
      },
    },
  ]);
  // Through a LoadBalancer the agents come from wherever they run.
  const direct = parseAllDocuments(
    await helmWithValues(
      helm,
      ['template', 'svc-tenant', tenantChart, '--namespace', 'tenant-acme'],
      sampleTenantValues() as unknown as Values,
    ),
  )
    .map((d) => d.toJS() as KubernetesObject | null)
    .filter((o): o is KubernetesObject => o !== null);
  const open = named<V1NetworkPolicy>(direct, 'NetworkPolicy', 'allow-monitor-agents');
  assert.equal((open.spec?.ingress?.[0] as { from?: unknown } | undefined)?.from, undefined);
});

test('issue 15 RBAC: svc may update the three svc-edge-proxy objects by name and nothing else in the install namespace', {
  timeout: 120_000,
}, async () => {
  const namespace = await createTestNamespace(cluster, 'svc-edge-rbac');
  const objects = await render(ENABLED, namespace).then((all) =>
    all.filter(
      (o) =>
        (o.kind === 'Role' || o.kind === 'RoleBinding' || o.kind === 'ServiceAccount') &&
        o.metadata?.namespace === namespace,
    ),
  );
  const admin = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
  try {
    for (const object of objects) await admin.create(object);
    const authz = cluster.kubeConfig.makeApiClient(AuthorizationV1Api);
    const can = async (verb: string, resource: string, group: string, name?: string) => {
      const review = await authz.createSubjectAccessReview({
        body: {
          spec: {
            user: `system:serviceaccount:${namespace}:svc`,
            groups: ['system:serviceaccounts', 'system:authenticated'],
            resourceAttributes: { verb, resource, group, namespace, ...(name ? { name } : {}) },
          },
        },
      });
      return review.status?.allowed === true;
    };
    await waitUntil('the edge-proxy RoleBinding to take effect', async () =>
      (await can('update', 'configmaps', '', 'svc-edge-proxy')) ? true : undefined,
    );
    const allowed: Array<[string, string, string, string]> = [
      ['get', 'configmaps', '', 'svc-edge-proxy'],
      ['update', 'configmaps', '', 'svc-edge-proxy'],
      ['get', 'services', '', 'svc-edge-proxy'],
      ['update', 'services', '', 'svc-edge-proxy'],
      ['get', 'deployments', 'apps', 'svc-edge-proxy'],
      ['patch', 'deployments', 'apps', 'svc-edge-proxy'],
    ];
    for (const [verb, resource, group, name] of allowed)
      assert.equal(await can(verb, resource, group, name), true, `may ${verb} ${resource}/${name}`);
    const denied: Array<[string, string, string, string | undefined]> = [
      ['create', 'configmaps', '', undefined],
      ['delete', 'configmaps', '', 'svc-edge-proxy'],
      ['update', 'configmaps', '', 'svc-install'],
      ['list', 'configmaps', '', undefined],
      ['update', 'services', '', 'svc-api'],
      ['delete', 'services', '', 'svc-edge-proxy'],
      ['patch', 'deployments', 'apps', 'svc-api'],
      ['update', 'deployments', 'apps', 'svc-edge-proxy'],
      ['delete', 'deployments', 'apps', 'svc-edge-proxy'],
    ];
    for (const [verb, resource, group, name] of denied)
      assert.equal(
        await can(verb, resource, group, name),
        false,
        `may not ${verb} ${resource}/${name}`,
      );
  } finally {
    await cluster.kubeConfig
      .makeApiClient(CoreV1Api)
      .deleteNamespace({ name: namespace })
      .catch(() => undefined);
  }
});

test('issue 15 admission: with edgeProxy.enabled svc may update the three svc-edge-proxy objects in the install namespace, and write nothing else there but Secrets', {
  timeout: 180_000,
}, async () => {
  const installNamespace = await createTestNamespace(cluster, 'svc-edge-vap');
  const account = 'svc-edge-test';
  const values = mergeValues(
    sampleValues(installNamespace, { msspId: randomUUID(), installId: randomUUID() }),
    { serviceAccount: { name: account }, edgeProxy: { enabled: true } },
  );
  const rendered = await renderSystemChart(helm, installNamespace, values, [
    'templates/admission/namespaced-writes.yaml',
    'templates/edge-proxy.yaml',
  ]);
  const order = ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];
  const clusterScoped = rendered
    .filter((o) => order.includes(o.kind ?? ''))
    .sort((a, b) => order.indexOf(a.kind ?? '') - order.indexOf(b.kind ?? ''));
  const admin = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
  const created: KubernetesObject[] = [];
  const policy = `svc-namespaced-writes.${installNamespace}`;
  const denied = (error: unknown) =>
    error instanceof ApiException &&
    error.code === 403 &&
    String(error.body).includes(`ValidatingAdmissionPolicy '${policy}'`);
  try {
    for (const object of clusterScoped) created.push(await admin.create(object));
    // RBAC lets this account do anything: what it is refused, the policy refused.
    created.push(
      await admin.create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: `svc-edge-vap-${installNamespace}` },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'cluster-admin',
        },
        subjects: [{ kind: 'ServiceAccount', name: account, namespace: installNamespace }],
      } as KubernetesObject),
    );
    const edge = rendered.filter((o) => !order.includes(o.kind ?? ''));
    for (const object of edge) await admin.create(object);
    // Another Deployment of the namespace, standing in for svc-api.
    const proxy = edge.find((o) => o.kind === 'Deployment');
    assert.ok(proxy);
    await admin.create({ ...proxy, metadata: { ...proxy.metadata, name: 'svc-api' } });
    const other = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'svc-install', namespace: installNamespace },
      data: { a: 'b' },
    };
    await admin.create(other);
    const asSvc = new KubeConfig();
    asSvc.loadFromFile(await serviceAccountKubeconfig(cluster, installNamespace, account));
    const svc = KubernetesObjectApi.makeApiClient(asSvc);
    await waitUntil('the policy to take effect', async () =>
      svc
        .create({ ...other, metadata: { ...other.metadata, name: 'probe' } }, undefined, 'All')
        .then(
          () => undefined,
          (error) => (denied(error) ? true : undefined),
        ),
    );
    const ref = (kind: string, apiVersion = 'v1') => ({
      apiVersion,
      kind,
      metadata: { name: 'svc-edge-proxy', namespace: installNamespace },
    });
    // Allowed: what src/orchestrator/edge-proxy.ts does.
    const configMap = await svc.read<V1ConfigMap>(ref('ConfigMap'));
    await svc.replace({ ...configMap, data: { [EDGE_PROXY_CONFIG_KEY]: 'global\n' } });
    const service = await svc.read<V1Service>(ref('Service'));
    service.spec?.ports?.push({
      name: 'ev-20000',
      port: 20_000,
      targetPort: 20_000,
      protocol: 'TCP',
    });
    await svc.replace(service);
    await svc.patch(
      {
        ...ref('Deployment', 'apps/v1'),
        spec: { template: { metadata: { annotations: { [CONFIG_SHA_ANNOTATION]: 'x' } } } },
      },
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
    // Refused: creating, deleting, other objects of the namespace.
    const refused: Array<[string, () => Promise<unknown>]> = [
      [
        'create a ConfigMap',
        () => svc.create({ ...other, metadata: { ...other.metadata, name: 'svc-edge-proxy-2' } }),
      ],
      ['update another ConfigMap', () => svc.replace({ ...other, data: { a: 'c' } })],
      ['delete the ConfigMap', () => svc.delete(ref('ConfigMap'))],
      ['delete the Service', () => svc.delete(ref('Service'))],
      ['delete the Deployment', () => svc.delete(ref('Deployment', 'apps/v1'))],
      [
        'patch another Deployment',
        () =>
          svc.patch(
            {
              ...ref('Deployment', 'apps/v1'),
              metadata: { name: 'svc-api', namespace: installNamespace },
            },
            undefined,
            undefined,
            undefined,
            undefined,
            PatchStrategy.MergePatch,
          ),
      ],
    ];
    for (const [what, write] of refused) await assert.rejects(write(), denied, what);
    assert.equal(
      (await admin.read<V1ConfigMap>(other)).data?.a,
      'b',
      'the other ConfigMap is untouched',
    );
  } finally {
    for (const object of created.reverse()) await admin.delete(object).catch(() => undefined);
    await cluster.kubeConfig
      .makeApiClient(CoreV1Api)
      .deleteNamespace({ name: installNamespace })
      .catch(() => undefined);
  }
});
