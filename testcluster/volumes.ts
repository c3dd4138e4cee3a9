import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApiException,
  CoreV1Api,
  type KubeConfig,
  StorageV1Api,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
} from '@kubernetes/client-node';

/**
 * The test cluster has no kubelet and no storage provisioner, so PVCs would stay Pending and
 * StatefulSets with volumeClaimTemplates would never schedule. This plays an external
 * provisioner for StorageClass `svc-test`: for each Pending claim it creates a PV pre-bound to
 * it (claimRef with uid) and kube-controller-manager's PV binder completes the binding; for PVs
 * whose claim is gone (Released/Failed) it deletes them. The hostPath is never mounted (kwok
 * fakes the pods), so no directory is created.
 */
export const testStorageClass = 'svc-test';
const provisionerName = 'svc.test/hostpath';
const pollMs = 250;

export interface VolumeProvisioner {
  stop(): Promise<void>;
}

function hasCode(error: unknown, code: number): boolean {
  return error instanceof ApiException && error.code === code;
}

/** Ensures the StorageClass (the cluster default) and starts the provisioning loop. */
export async function startVolumeProvisioner(kubeConfig: KubeConfig): Promise<VolumeProvisioner> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const storage = kubeConfig.makeApiClient(StorageV1Api);
  await ensureStorageClass(storage);

  const stopping = new AbortController();
  let lastError = '';
  const loop = (async () => {
    while (!stopping.signal.aborted) {
      try {
        await reconcile(core);
        lastError = '';
      } catch (error) {
        // Transient API errors must not end the run; log each distinct one once.
        const message = error instanceof Error ? error.message : String(error);
        // A request cut short by stop() (the API server went down with it) is not an error.
        if (!stopping.signal.aborted && message !== lastError)
          console.error(`test volume provisioner: ${message}`);
        lastError = message;
      }
      await sleep(pollMs, undefined, { signal: stopping.signal }).catch(() => {});
    }
  })();

  return {
    async stop() {
      stopping.abort();
      // A request in flight to an API server that is itself shutting down (a terminal's Ctrl-C
      // reaches the whole process group) hangs for its full timeout; its answer no longer matters.
      await Promise.race([loop, sleep(2_000)]);
    },
  };
}

async function ensureStorageClass(storage: StorageV1Api): Promise<void> {
  try {
    await storage.createStorageClass({
      body: {
        metadata: {
          name: testStorageClass,
          // Claims without a class get it too (DefaultStorageClass admission is on by default).
          annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
        },
        provisioner: provisionerName,
        volumeBindingMode: 'Immediate',
        reclaimPolicy: 'Delete',
      },
    });
  } catch (error) {
    // Another run against the same cluster made it; its fields are immutable and the same.
    if (!hasCode(error, 409)) throw error;
  }
}

async function reconcile(core: CoreV1Api): Promise<void> {
  const [claims, volumes] = await Promise.all([
    core.listPersistentVolumeClaimForAllNamespaces(),
    core.listPersistentVolume(),
  ]);
  const ours = volumes.items.filter((pv) => pv.spec?.storageClassName === testStorageClass);
  const claimedUids = new Set(ours.map((pv) => pv.spec?.claimRef?.uid));
  // A PV someone pre-bound to a claim by name (a real node's volume, testcluster/node/volumes.ts)
  // is that claim's: the PV binder binds them, and a second PV here would race it.
  const preBound = new Set(
    volumes.items
      .filter((pv) => pv.spec?.claimRef && !pv.spec.claimRef.uid)
      .map((pv) => `${pv.spec?.claimRef?.namespace}/${pv.spec?.claimRef?.name}`),
  );
  const liveUids = new Set(claims.items.map((c) => c.metadata?.uid));
  const pending = claims.items.filter(
    (c) =>
      c.spec?.storageClassName === testStorageClass &&
      c.status?.phase === 'Pending' &&
      !c.spec.volumeName &&
      !c.metadata?.deletionTimestamp &&
      !claimedUids.has(c.metadata?.uid) &&
      !preBound.has(`${c.metadata?.namespace}/${c.metadata?.name}`),
  );
  const orphaned = ours.filter(
    (pv) =>
      !pv.metadata?.deletionTimestamp &&
      (pv.status?.phase === 'Released' || pv.status?.phase === 'Failed') &&
      !liveUids.has(pv.spec?.claimRef?.uid),
  );
  await Promise.all([
    ...pending.map((claim) => createVolume(core, claim)),
    ...orphaned.map((pv) => deleteVolume(core, pv)),
  ]);
}

async function createVolume(core: CoreV1Api, claim: V1PersistentVolumeClaim): Promise<void> {
  const { uid, name, namespace } = claim.metadata ?? {};
  const storage = claim.spec?.resources?.requests?.storage;
  if (!uid || !name || !namespace) return;
  try {
    await core.createPersistentVolume({
      body: {
        metadata: {
          // Named after the claim's uid, so two provisioners racing create it once.
          name: `svc-test-${uid}`,
          // Tells the PV controller an external provisioner (this one) deletes it.
          annotations: { 'pv.kubernetes.io/provisioned-by': provisionerName },
        },
        spec: {
          storageClassName: testStorageClass,
          capacity: { storage: storage ?? '1Gi' },
          accessModes: claim.spec?.accessModes ?? ['ReadWriteOnce'],
          ...(claim.spec?.volumeMode ? { volumeMode: claim.spec.volumeMode } : {}),
          persistentVolumeReclaimPolicy: 'Delete',
          hostPath: { path: `/tmp/svc-test-pv/${uid}`, type: 'DirectoryOrCreate' },
          claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace, name, uid },
        },
      },
    });
  } catch (error) {
    if (!hasCode(error, 409)) throw error;
  }
}

async function deleteVolume(core: CoreV1Api, pv: V1PersistentVolume): Promise<void> {
  const name = pv.metadata?.name;
  if (!name) return;
  try {
    await core.deletePersistentVolume({ name });
  } catch (error) {
    if (!hasCode(error, 404)) throw error;
  }
}
