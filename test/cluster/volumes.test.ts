import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiException, AppsV1Api, CoreV1Api, StorageV1Api } from '@kubernetes/client-node';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';
import { testStorageClass } from '../support/volumes.ts';

const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
let namespace = '';

before(async () => {
  namespace = await createTestNamespace(cluster, 'volumes');
});

after(async () => {
  await core.deleteNamespace({ name: namespace }).catch(() => {});
});

async function createClaim(name: string, storageClassName?: string) {
  const claim = await core.createNamespacedPersistentVolumeClaim({
    namespace,
    body: {
      metadata: { name },
      spec: {
        ...(storageClassName ? { storageClassName } : {}),
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '2Gi' } },
      },
    },
  });
  return claim.metadata?.uid ?? '';
}

async function boundVolume(name: string, timeoutMs: number) {
  return waitUntil(
    `PVC ${namespace}/${name} to be Bound`,
    async () => {
      const claim = await core.readNamespacedPersistentVolumeClaim({ namespace, name });
      return claim.status?.phase === 'Bound' ? claim : undefined;
    },
    timeoutMs,
  );
}

test('test volumes: svc-test is the default StorageClass with an external provisioner', async () => {
  const storage = cluster.kubeConfig.makeApiClient(StorageV1Api);
  const sc = await storage.readStorageClass({ name: testStorageClass });
  assert.equal(sc.provisioner, 'svc.test/hostpath');
  assert.equal(sc.volumeBindingMode, 'Immediate');
  assert.equal(sc.reclaimPolicy, 'Delete');
  assert.equal(sc.metadata?.annotations?.['storageclass.kubernetes.io/is-default-class'], 'true');
});

test('test volumes: a bare PVC on svc-test binds within a few seconds', async () => {
  const started = Date.now();
  const uid = await createClaim('bare', testStorageClass);
  const claim = await boundVolume('bare', 10_000);
  console.log(`PVC bound after ${Date.now() - started} ms`);
  const pv = await core.readPersistentVolume({ name: claim.spec?.volumeName ?? '' });
  assert.equal(pv.spec?.claimRef?.uid, uid);
  assert.equal(pv.spec?.capacity?.storage, '2Gi');
  assert.equal(pv.spec?.persistentVolumeReclaimPolicy, 'Delete');
  assert.equal(claim.status?.capacity?.storage, '2Gi');
});

test('test volumes: a PVC without a class gets svc-test by default and binds', async () => {
  await createClaim('classless');
  const claim = await boundVolume('classless', 10_000);
  assert.equal(claim.spec?.storageClassName, testStorageClass);
});

test('test volumes: deleting a claim deletes its volume', async () => {
  await createClaim('doomed', testStorageClass);
  const claim = await boundVolume('doomed', 10_000);
  const volumeName = claim.spec?.volumeName ?? '';
  await core.deleteNamespacedPersistentVolumeClaim({ namespace, name: 'doomed' });
  await waitUntil(
    `PV ${volumeName} to be deleted`,
    async () => {
      try {
        await core.readPersistentVolume({ name: volumeName });
        return undefined;
      } catch (error) {
        if (error instanceof ApiException && error.code === 404) return true;
        throw error;
      }
    },
    20_000,
  );
});

test('test volumes: a StatefulSet with a volumeClaimTemplate gets a Ready pod', {
  timeout: 60_000,
}, async () => {
  const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
  const labels = { app: 'db' };
  const started = Date.now();
  await apps.createNamespacedStatefulSet({
    namespace,
    body: {
      metadata: { name: 'db' },
      spec: {
        replicas: 1,
        serviceName: 'db',
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            containers: [
              {
                name: 'db',
                image: 'registry.invalid/db:1',
                volumeMounts: [{ name: 'data', mountPath: '/data' }],
              },
            ],
          },
        },
        volumeClaimTemplates: [
          {
            metadata: { name: 'data' },
            spec: {
              storageClassName: testStorageClass,
              accessModes: ['ReadWriteOnce'],
              resources: { requests: { storage: '1Gi' } },
            },
          },
        ],
      },
    },
  });
  await waitUntil(
    'StatefulSet db to have a ready replica',
    async () => {
      const sts = await apps.readNamespacedStatefulSet({ namespace, name: 'db' });
      return sts.status?.readyReplicas === 1 ? true : undefined;
    },
    45_000,
  );
  console.log(`StatefulSet ready after ${Date.now() - started} ms`);
  const claim = await core.readNamespacedPersistentVolumeClaim({ namespace, name: 'data-db-0' });
  assert.equal(claim.status?.phase, 'Bound');
});
