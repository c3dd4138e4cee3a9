import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { after, test } from 'node:test';
import {
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1PolicyRule,
} from '@kubernetes/client-node';
import {
  createNamespaceStore,
  NamespaceConflictError,
  NamespaceRemovalTimeoutError,
  NamespaceTerminatingError,
  readinessReport,
} from '../../src/cluster/index.ts';
import { ServiceIdentityBindingError } from '../../src/cluster/namespaces.ts';
import { createTestNamespace, serviceAccountKubeconfig } from '../../testcluster/harness.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';

const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const store = createNamespaceStore(cluster.kubeConfig);
const rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
const made: string[] = [];
/** Cluster-scoped RBAC objects the tests made, deleted at the end. */
const clusterRoles: string[] = [];
const clusterRoleBindings: string[] = [];
const kubeconfigs: string[] = [];
const hold = 'svc.test/hold';

function uniqueName(prefix: string): string {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  made.push(name);
  return name;
}

function tenantLabels(tenantId: string) {
  return { 'svc.example/tenant-id': tenantId };
}

/** A ConfigMap with a finalizer nobody removes keeps the namespace Terminating. */
async function holdOpen(namespace: string): Promise<void> {
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: 'hold', finalizers: [hold] } },
  });
}

async function release(namespace: string): Promise<void> {
  await core.patchNamespacedConfigMap({
    namespace,
    name: 'hold',
    body: [{ op: 'remove', path: '/metadata/finalizers' }],
  });
}

after(async () => {
  for (const name of made) {
    await release(name).catch(() => {});
    await core.deleteNamespace({ name }).catch(() => {});
  }
  for (const name of clusterRoleBindings) {
    await rbac.deleteClusterRoleBinding({ name }).catch(() => {});
  }
  for (const name of clusterRoles) await rbac.deleteClusterRole({ name }).catch(() => {});
  for (const path of kubeconfigs) await rm(path, { force: true });
});

test('namespaces: ensure creates, then reports existed for the same labels', async () => {
  const name = uniqueName('nst-ensure');
  assert.equal(await store.ensure(name, tenantLabels('t1')), 'created');
  const ns = await core.readNamespace({ name });
  assert.equal(ns.metadata?.labels?.['managed-by'], 'svc');
  assert.equal(ns.metadata?.labels?.['svc.example/tenant-id'], 't1');
  assert.equal(await store.ensure(name, tenantLabels('t1')), 'existed');
  assert.equal(await store.exists(name), true);
  assert.equal(await store.exists(`${name}-absent`), false);
});

test('namespaces: ensure refuses a namespace of another tenant or not managed by svc', async () => {
  const name = uniqueName('nst-conflict');
  await store.ensure(name, tenantLabels('t1'));
  await assert.rejects(store.ensure(name, tenantLabels('t2')), NamespaceConflictError);

  const foreign = uniqueName('nst-foreign');
  await core.createNamespace({ body: { metadata: { name: foreign, labels: tenantLabels('t1') } } });
  await assert.rejects(store.ensure(foreign, tenantLabels('t1')), NamespaceConflictError);
});

test('namespaces: ensure on a Terminating namespace throws NamespaceTerminatingError', async () => {
  const name = uniqueName('nst-term');
  await store.ensure(name, tenantLabels('t1'));
  await holdOpen(name);
  await core.deleteNamespace({ name });
  await assert.rejects(store.ensure(name, tenantLabels('t1')), NamespaceTerminatingError);
});

test('namespaces: remove refuses when the labels do not match and keeps the namespace', async () => {
  const name = uniqueName('nst-keep');
  await store.ensure(name, tenantLabels('t1'));
  await assert.rejects(
    store.remove(name, { waitMs: 5_000, expectLabels: tenantLabels('t2') }),
    NamespaceConflictError,
  );
  const ns = await core.readNamespace({ name });
  assert.equal(ns.metadata?.deletionTimestamp, undefined);
});

test('namespaces: remove waits until the namespace is gone; a missing one is success', {
  timeout: 90_000,
}, async () => {
  const name = uniqueName('nst-remove');
  await store.ensure(name, tenantLabels('t1'));
  await store.putSecret(name, 'content', { a: 'b' }, {});
  const started = Date.now();
  await store.remove(name, { waitMs: 60_000, expectLabels: tenantLabels('t1') });
  console.log(`namespace removed after ${Date.now() - started} ms`);
  assert.equal(await store.exists(name), false);
  await store.remove(name, { waitMs: 1_000, expectLabels: tenantLabels('t1') });
});

test('namespaces: remove times out with a distinct error while deletion is blocked', {
  timeout: 90_000,
}, async () => {
  const name = uniqueName('nst-stuck');
  await store.ensure(name, tenantLabels('t1'));
  await holdOpen(name);
  const opts = { waitMs: 1_500, expectLabels: tenantLabels('t1') };
  await assert.rejects(store.remove(name, opts), NamespaceRemovalTimeoutError);
  await release(name);
  await store.remove(name, { ...opts, waitMs: 60_000 });
  assert.equal(await store.exists(name), false);
});

test('namespaces: putSecret creates, then replaces the whole Secret; readSecret reads it', async () => {
  const namespace = await createTestNamespace(cluster, 'nst-secret');
  made.push(namespace);
  assert.equal(await store.readSecret(namespace, 'adapter-token'), undefined);
  const labels = { 'svc.example/tenant-id': 't1' };
  assert.equal(
    await store.putSecret(namespace, 'adapter-token', { token: 'one', old: 'x' }, labels),
    'created',
  );
  assert.deepEqual(await store.readSecret(namespace, 'adapter-token'), { token: 'one', old: 'x' });
  assert.equal(
    await store.putSecret(namespace, 'adapter-token', { token: 'two' }, labels),
    'replaced',
  );
  assert.deepEqual(await store.readSecret(namespace, 'adapter-token'), { token: 'two' });
  const secret = await core.readNamespacedSecret({ namespace, name: 'adapter-token' });
  assert.equal(secret.metadata?.labels?.['managed-by'], 'svc');
  assert.equal(secret.metadata?.labels?.['svc.example/tenant-id'], 't1');
});

test('namespaces: readinessReport lists workloads with ready/desired and PVC phases', {
  timeout: 60_000,
}, async () => {
  const namespace = await createTestNamespace(cluster, 'nst-ready');
  made.push(namespace);
  const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
  const labels = { app: 'web' };
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: 'web' },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1' }] },
        },
      },
    },
  });
  await core.createNamespacedPersistentVolumeClaim({
    namespace,
    body: {
      metadata: { name: 'unserved' },
      spec: {
        storageClassName: 'no-such-class',
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
      },
    },
  });
  const report = await waitUntil('the Deployment to be ready', async () => {
    const r = await readinessReport(cluster.kubeConfig, namespace);
    return r.workloads[0]?.ready === 2 ? r : undefined;
  });
  assert.deepEqual(report, {
    workloads: [{ kind: 'Deployment', name: 'web', ready: 2, desired: 2 }],
    pvcs: [{ pvc: 'unserved', phase: 'Pending' }],
  });
});

async function makeClusterRole(name: string, rules: V1PolicyRule[]): Promise<void> {
  clusterRoles.push(name);
  await rbac.createClusterRole({ body: { metadata: { name }, rules } });
}

test('namespaces: bindServiceIdentity creates the RoleBinding svc, keeps a matching one, replaces a different one', async () => {
  const namespace = await createTestNamespace(cluster, 'nst-bind');
  made.push(namespace);
  const identity = {
    serviceAccount: 'svc',
    installNamespace: 'svc-install-x',
    clusterRole: 'svc-tenant.svc-install-x',
  };
  // As the admin, the SelfSubjectAccessReview allows at once: no wait, even though the
  // ClusterRole does not exist on this cluster.
  assert.equal(await store.bindServiceIdentity(namespace, identity), 'created');
  const read = () => rbac.readNamespacedRoleBinding({ namespace, name: 'svc' });
  const first = await read();
  assert.deepEqual(
    { ...first.roleRef },
    {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'svc-tenant.svc-install-x',
    },
  );
  assert.deepEqual(
    first.subjects?.map((x) => ({ ...x })),
    [{ kind: 'ServiceAccount', name: 'svc', namespace: 'svc-install-x' }],
  );
  assert.equal(first.metadata?.labels?.['managed-by'], 'svc');

  assert.equal(await store.bindServiceIdentity(namespace, identity), 'existed');
  assert.equal((await read()).metadata?.uid, first.metadata?.uid, 'left alone');

  // roleRef is immutable: another ClusterRole means a new binding.
  const renamed = { ...identity, clusterRole: 'svc-tenant.other' };
  assert.equal(await store.bindServiceIdentity(namespace, renamed), 'replaced');
  const second = await read();
  assert.notEqual(second.metadata?.uid, first.metadata?.uid);
  assert.equal(second.roleRef.name, 'svc-tenant.other');
  // Another subject, or an extra one somebody added, is replaced too.
  assert.equal(
    await store.bindServiceIdentity(namespace, { ...renamed, serviceAccount: 'svc-2' }),
    'replaced',
  );
  assert.deepEqual(
    (await read()).subjects?.map((x) => ({ ...x })),
    [{ kind: 'ServiceAccount', name: 'svc-2', namespace: 'svc-install-x' }],
  );
  await rbac.patchNamespacedRoleBinding({
    namespace,
    name: 'svc',
    body: [
      {
        op: 'add',
        path: '/subjects/-',
        value: { kind: 'ServiceAccount', name: 'intruder', namespace },
      },
    ],
  });
  assert.equal(
    await store.bindServiceIdentity(namespace, { ...renamed, serviceAccount: 'svc-2' }),
    'replaced',
  );
  assert.equal((await read()).subjects?.length, 1);
});

test('namespaces: bindServiceIdentity as a confined ServiceAccount returns once it may write there, and gives up when the role grants nothing', {
  timeout: 90_000,
}, async () => {
  const installNamespace = await createTestNamespace(cluster, 'nst-bind-install');
  const target = await createTestNamespace(cluster, 'nst-bind-target');
  made.push(installNamespace, target);
  const suffix = randomBytes(3).toString('hex');
  const tenantRole = `nst-tenant-${suffix}`;
  const emptyRole = `nst-empty-${suffix}`;
  const identityRole = `nst-identity-${suffix}`;
  // The system chart's split in miniature: cluster-wide only rolebindings and `bind` on the
  // tenant roles by name; Secrets only through the tenant role, once bound.
  await makeClusterRole(tenantRole, [
    { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create'] },
  ]);
  await makeClusterRole(emptyRole, []);
  await makeClusterRole(identityRole, [
    {
      apiGroups: ['rbac.authorization.k8s.io'],
      resources: ['rolebindings'],
      verbs: ['get', 'create', 'delete'],
    },
    {
      apiGroups: ['rbac.authorization.k8s.io'],
      resources: ['clusterroles'],
      verbs: ['bind'],
      resourceNames: [tenantRole, emptyRole],
    },
  ]);
  const path = await serviceAccountKubeconfig(cluster, installNamespace, 'svc');
  kubeconfigs.push(path);
  clusterRoleBindings.push(identityRole);
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: identityRole },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: identityRole },
      subjects: [{ kind: 'ServiceAccount', name: 'svc', namespace: installNamespace }],
    },
  });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(path);
  const asSvc = createNamespaceStore(kubeConfig);
  const identity = { serviceAccount: 'svc', installNamespace, clusterRole: tenantRole };
  // The cluster-wide grant reaches the authorizer through an informer too.
  await waitUntil('the identity ClusterRoleBinding to take effect', async () =>
    (await asSvc.bindServiceIdentity(target, identity)) ? true : undefined,
  );
  // Returned: so the very next write passes RBAC, with no retry.
  assert.equal(await asSvc.putSecret(target, 'first-write', { a: 'b' }, {}), 'created');
  assert.equal(await asSvc.bindServiceIdentity(target, identity), 'existed');

  const other = await createTestNamespace(cluster, 'nst-bind-empty');
  made.push(other);
  const started = Date.now();
  await assert.rejects(
    asSvc.bindServiceIdentity(other, { ...identity, clusterRole: emptyRole, waitMs: 1_500 }),
    (error: unknown) =>
      error instanceof ServiceIdentityBindingError &&
      error.message.includes(`RoleBinding svc in ${other}`) &&
      error.message.includes('not in effect after 1500 ms'),
  );
  assert.ok(Date.now() - started >= 1_500);
  // The binding stays (the namespace's deletion removes it); reads elsewhere stay forbidden.
  assert.equal(
    (await rbac.readNamespacedRoleBinding({ namespace: other, name: 'svc' })).roleRef.name,
    emptyRole,
  );
  await assert.rejects(asSvc.readSecret(other, 'anything'), /HTTP-Code: 403|Forbidden|403/);
});
