import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import {
  ApiException,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  type V1ConfigMap,
  type V1Namespace,
  type V1Secret,
} from '@kubernetes/client-node';
import { createTestNamespace, serviceAccountKubeconfig } from '../../testcluster/harness.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';
import { mergeValues, renderSystemChart, sampleValues } from './system-chart.ts';

// The policies are applied exactly as the system chart renders them (`helm template
// --show-only templates/admission/...`, the chart's symlink to policies/), with this run's
// install namespace, ServiceAccount and fresh ids as the values. Policy and binding names carry
// the install namespace, so they are unique to this run. The ServiceAccount gets cluster-admin,
// so every denial below comes from admission, not RBAC.

const policiesDir = join(import.meta.dirname, '..', '..', 'policies');
const suffix = randomBytes(3).toString('hex');
const msspId = randomUUID();
const installId = randomUUID();
const serviceAccount = 'svc-under-test';

const cluster = getTestCluster();
const admin = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
let installNamespace = '';
let asSvc: KubernetesObjectApi;
/** Everything this file created as admin, deleted in reverse order at the end. */
const created: KubernetesObject[] = [];
/** Namespaces made during the tests (by svc or admin), deleted by admin at the end. */
const namespaces = new Set<string>();

function policyName(base: string): string {
  return `${base}.${installNamespace}`;
}

function isDenial(policy: string, text?: string): (error: unknown) => boolean {
  return (error) =>
    error instanceof ApiException &&
    error.code === 403 &&
    String(error.body).includes(`ValidatingAdmissionPolicy '${policyName(policy)}'`) &&
    (text === undefined || String(error.body).includes(text));
}

const namespacePolicy = 'svc-tenant-namespaces';
const namespacedPolicy = 'svc-namespaced-writes';
const clusterPolicy = 'svc-cluster-scoped-writes';

function tenantLabels(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    tenant: 'true',
    'managed-by': 'svc',
    'mssp-id': msspId,
    'install-id': installId,
    'tenant-id': randomUUID(),
    ...overrides,
  };
}

function namespace(name: string, labels?: Record<string, string>): V1Namespace {
  namespaces.add(name);
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: labels === undefined ? { name } : { name, labels },
  };
}

function configMap(ns: string, name: string): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: ns },
    data: { k: 'v' },
  };
}

function secret(ns: string, name: string): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: ns },
    stringData: { key: 'value' },
  };
}

function deployment(ns: string, name: string): KubernetesObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name, image: 'registry.invalid/app:1' }] },
      },
    },
  } as KubernetesObject;
}

function clusterRole(name: string): KubernetesObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name },
    rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
  } as KubernetesObject;
}

/** The chart's policies for this run's install, policies before their bindings. */
async function manifests(): Promise<KubernetesObject[]> {
  const values = mergeValues(sampleValues(installNamespace, { msspId, installId }), {
    serviceAccount: { name: serviceAccount },
    admission: { engine: 'vap' },
  });
  const docs = await renderSystemChart(
    join(cluster.binDir, 'helm'),
    installNamespace,
    values,
    (await readdir(policiesDir))
      .filter((file) => file.endsWith('.yaml'))
      .map((file) => `templates/admission/${file}`),
  );
  const order = ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];
  return docs.sort((a, b) => order.indexOf(a.kind ?? '') - order.indexOf(b.kind ?? ''));
}

before(async () => {
  installNamespace = await createTestNamespace(cluster, 'svc-install');
  for (const manifest of await manifests()) {
    created.push(await admin.create(manifest));
  }
  created.push(
    await admin.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `svc-policy-test-${suffix}` },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'cluster-admin',
      },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace: installNamespace }],
    } as KubernetesObject),
  );
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(
    await serviceAccountKubeconfig(cluster, installNamespace, serviceAccount),
  );
  asSvc = KubernetesObjectApi.makeApiClient(kubeConfig);

  // Policies and bindings reach the admission plugin through informers: dry runs show
  // when all three policies deny with their own messages and a proper tenant namespace passes.
  await waitUntil(
    'the svc admission policies to take effect',
    async () => {
      const probes = await Promise.all([
        asSvc
          .create(configMap(installNamespace, 'probe'), undefined, 'All')
          .then(() => false, isDenial(namespacedPolicy, 'only in its own tenant namespaces')),
        asSvc
          .create(clusterRole(`probe-${suffix}`), undefined, 'All')
          .then(() => false, isDenial(clusterPolicy, 'may not write cluster-scoped')),
        asSvc
          .create(
            { apiVersion: 'v1', kind: 'Namespace', metadata: { name: `tenant-probe-x${suffix}` } },
            undefined,
            'All',
          )
          .then(() => false, isDenial(namespacePolicy, 'must carry')),
        asSvc
          .create(
            {
              apiVersion: 'v1',
              kind: 'Namespace',
              metadata: { name: `tenant-probe-${suffix}`, labels: tenantLabels() },
            },
            undefined,
            'All',
          )
          .then(() => true),
      ]);
      return probes.every(Boolean) ? true : undefined;
    },
    60_000,
  );
});

after(async () => {
  for (const name of namespaces) {
    await admin
      .delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })
      .catch(() => undefined);
  }
  for (const object of created.reverse()) {
    await admin.delete(object);
  }
  if (installNamespace) {
    await admin.delete({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: installNamespace },
    });
  }
});

let managed = '';

test('§2.5 svc creates a tenant-<slug> namespace carrying all tenant labels', async () => {
  managed = `tenant-ok-${suffix}`;
  const ns = await asSvc.create(namespace(managed, tenantLabels()));
  assert.equal(ns.metadata?.labels?.['install-id'], installId);
});

test('§2.5 svc may not create a tenant-* namespace without the tenant labels', async () => {
  await assert.rejects(
    asSvc.create(namespace(`tenant-x-${suffix}`)),
    isDenial(namespacePolicy, 'must carry'),
  );
  await assert.rejects(
    asSvc.create(namespace(`tenant-y-${suffix}`, tenantLabels({ 'tenant-id': 'not-a-uuid' }))),
    isDenial(namespacePolicy, 'must carry'),
  );
});

test("§2.5 svc may not create a tenant namespace labelled with another install's ids", async () => {
  await assert.rejects(
    asSvc.create(namespace(`tenant-other-${suffix}`, tenantLabels({ 'install-id': randomUUID() }))),
    isDenial(namespacePolicy, 'must carry'),
  );
  await assert.rejects(
    asSvc.create(namespace(`tenant-mssp-${suffix}`, tenantLabels({ 'mssp-id': randomUUID() }))),
    isDenial(namespacePolicy, 'must carry'),
  );
});

test('§5.8 svc may not create a namespace outside tenant-*, even fully labelled', async () => {
  await assert.rejects(
    asSvc.create(namespace(`evil-${suffix}`, tenantLabels())),
    isDenial(namespacePolicy, 'named tenant-*'),
  );
});

test('§2.5 svc may update a tenant namespace but not strip or change its tenant labels', async () => {
  const current = await asSvc.read<V1Namespace>({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: managed },
  });
  const labels = current.metadata?.labels ?? {};
  const withLabels = (next: Record<string, string>): V1Namespace => ({
    ...current,
    metadata: { ...current.metadata, name: managed, labels: next },
  });
  const updated = await asSvc.replace(withLabels({ ...labels, team: 'blue' }));
  assert.equal(updated.metadata?.labels?.team, 'blue');

  const fresh = updated.metadata?.labels ?? {};
  const replaceWith = (next: Record<string, string>) =>
    asSvc.replace({ ...updated, metadata: { ...updated.metadata, name: managed, labels: next } });
  const { 'tenant-id': _tenantId, ...withoutTenantId } = fresh;
  await assert.rejects(replaceWith(withoutTenantId), isDenial(namespacePolicy, 'must carry'));
  const { 'managed-by': _managedBy, ...withoutManagedBy } = fresh;
  await assert.rejects(replaceWith(withoutManagedBy), isDenial(namespacePolicy, 'must carry'));
  await assert.rejects(
    replaceWith({ ...fresh, 'tenant-id': randomUUID() }),
    isDenial(namespacePolicy, 'may not change or remove'),
  );
  await assert.rejects(
    replaceWith({ ...fresh, 'install-id': randomUUID() }),
    isDenial(namespacePolicy, 'must carry'),
  );
});

test('§2.5 svc may not adopt a tenant-* namespace made by someone else by labelling it', async () => {
  const name = `tenant-adopt-${suffix}`;
  const made = await admin.create(namespace(name));
  await assert.rejects(
    asSvc.replace({ ...made, metadata: { ...made.metadata, name, labels: tenantLabels() } }),
    isDenial(namespacePolicy, 'already carry'),
  );
});

test('§5.8 svc deletes a labelled tenant namespace but not an unlabelled one', async () => {
  const name = `tenant-gone-${suffix}`;
  await asSvc.create(namespace(name, tenantLabels()));
  await asSvc.delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });

  const foreign = `tenant-foreign-${suffix}`;
  await admin.create(namespace(foreign));
  await assert.rejects(
    asSvc.delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: foreign } }),
    isDenial(namespacePolicy, 'already carry'),
  );
});

test('§2.5 svc writes ConfigMaps, Deployments and Secrets inside its tenant namespace', async () => {
  await asSvc.create(configMap(managed, 'settings'));
  await asSvc.create(deployment(managed, 'web'));
  await asSvc.create(secret(managed, 'llm'));
  const updated = await asSvc.replace({ ...configMap(managed, 'settings'), data: { k: 'w' } });
  assert.equal(updated.data?.k, 'w');
  await asSvc.delete(configMap(managed, 'settings'));
});

test('§5.8 svc may not write inside a tenant-* namespace it does not manage', async () => {
  const evil = `tenant-evil-${suffix}`;
  await admin.create(namespace(evil));
  // Carries svc's labels, but another install's install-id.
  const otherInstall = `tenant-elsewhere-${suffix}`;
  await admin.create(namespace(otherInstall, tenantLabels({ 'install-id': randomUUID() })));
  for (const ns of [evil, otherInstall]) {
    for (const object of [configMap(ns, 'c'), deployment(ns, 'd'), secret(ns, 's')]) {
      await assert.rejects(
        asSvc.create(object),
        isDenial(namespacedPolicy, 'only in its own tenant namespaces'),
      );
    }
  }
  // Updates and deletes of objects someone else put there are denied too.
  await admin.create(configMap(evil, 'theirs'));
  await assert.rejects(
    asSvc.replace({ ...configMap(evil, 'theirs'), data: { k: 'x' } }),
    isDenial(namespacedPolicy, 'only in its own tenant namespaces'),
  );
  await assert.rejects(
    asSvc.delete(configMap(evil, 'theirs')),
    isDenial(namespacedPolicy, 'only in its own tenant namespaces'),
  );
});

test('§2.5 svc writes Secrets, and only Secrets, in the install namespace', async () => {
  await asSvc.create(secret(installNamespace, 'svc-credentials'));
  await asSvc.delete(secret(installNamespace, 'svc-credentials'));
  await assert.rejects(
    asSvc.create(configMap(installNamespace, 'svc-settings')),
    isDenial(namespacedPolicy, 'only in its own tenant namespaces'),
  );
});

test('§5.8 svc may not write cluster-scoped objects such as ClusterRoles', async () => {
  await assert.rejects(
    asSvc.create(clusterRole(`svc-escalate-${suffix}`)),
    isDenial(clusterPolicy, 'clusterroles.rbac.authorization.k8s.io'),
  );
  await assert.rejects(
    asSvc.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `svc-escalate-${suffix}` },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'cluster-admin',
      },
      subjects: [{ kind: 'User', name: 'mallory' }],
    } as KubernetesObject),
    isDenial(clusterPolicy),
  );
});

test('§5.8 the MSSP cluster admin is not constrained by the svc policies', async () => {
  const made = await admin.create(configMap(installNamespace, 'admin-settings'));
  assert.equal(made.metadata?.name, 'admin-settings');
  await admin.delete(configMap(installNamespace, 'admin-settings'));
});
