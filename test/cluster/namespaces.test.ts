import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, test } from 'node:test';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import {
  createNamespaceStore,
  NamespaceConflictError,
  NamespaceRemovalTimeoutError,
  NamespaceTerminatingError,
  readinessReport,
} from '../../src/cluster/index.ts';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';

const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const store = createNamespaceStore(cluster.kubeConfig);
const made: string[] = [];
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
