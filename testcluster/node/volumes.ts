// Real volumes on a real node. testcluster/volumes.ts fakes PVs for kwok (never mounted); a Pod
// on a real node mounts its volume for real, so it needs a directory that exists, on that node,
// writable by the Pod's user. These are `local` PVs under the node's directory, pre-bound by
// claimRef to the one claim they are for (docs/test-cluster.md "svc's system chart on the real
// node").
import { chown, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException, CoreV1Api, type KubeConfig, StorageV1Api } from '@kubernetes/client-node';

/**
 * The class of real-node volumes: no provisioner (the PVs exist before their claims), so the
 * svc-test provisioner, which serves only its own class, never answers these claims.
 */
export const realNodeStorageClass = 'svc-realnode';

export interface NodeVolumeOptions {
  /** The node the volume lives on (its directory and its hostname label). */
  readonly node: { readonly name: string; readonly dir: string };
  /** The claim this volume is for, e.g. a StatefulSet's `data-svc-postgres-0`. */
  readonly namespace: string;
  readonly claim: string;
  /** The directory's owner: the Pod's uid and gid (hostPath and local volumes keep it). */
  readonly uid: number;
  readonly gid: number;
  readonly size?: string;
  /**
   * The claim's class, when a chart sets it (default `svc-realnode`). A claim of the default
   * class `svc-test` gets this PV too: the svc-test provisioner leaves a claim alone that a PV
   * is already pre-bound to (testcluster/volumes.ts).
   */
  readonly storageClassName?: string;
}

export interface NodeVolume {
  readonly name: string;
  readonly path: string;
  /** Deletes the PV (and the claim, if any) and the directory. */
  remove(): Promise<void>;
}

function ignoreCode(code: number) {
  return (error: unknown) => {
    if (!(error instanceof ApiException && error.code === code)) throw error;
  };
}

/**
 * Creates the directory (owned by uid:gid, private to it) and a PV of class `svc-realnode` pinned to the node by nodeAffinity and
 * pre-bound to namespace/claim: kube-controller-manager's binder binds the claim when it comes.
 */
export async function createNodeVolume(
  kubeConfig: KubeConfig,
  opts: NodeVolumeOptions,
): Promise<NodeVolume> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const storage = kubeConfig.makeApiClient(StorageV1Api);
  await storage
    .createStorageClass({
      body: {
        metadata: { name: realNodeStorageClass },
        provisioner: 'kubernetes.io/no-provisioner',
        volumeBindingMode: 'Immediate',
        reclaimPolicy: 'Retain',
      },
    })
    // Another node (another test file) made it; the fields are immutable and the same.
    .catch(ignoreCode(409));
  const name = `${opts.node.name}-${opts.namespace}-${opts.claim}`.slice(0, 253);
  const path = join(opts.node.dir, 'volumes', name);
  await mkdir(path, { recursive: true, mode: 0o700 });
  await chown(path, opts.uid, opts.gid);
  const remove = async () => {
    await core
      .deleteNamespacedPersistentVolumeClaim({ name: opts.claim, namespace: opts.namespace })
      .catch(ignoreCode(404));
    await core.deletePersistentVolume({ name }).catch(ignoreCode(404));
    // The PV protection finalizer holds the PV until no Pod uses it.
    const until = Date.now() + 60_000;
    while (Date.now() < until) {
      const gone = await core
        .readPersistentVolume({ name })
        .then(() => false)
        .catch((error) => error instanceof ApiException && error.code === 404);
      if (gone) break;
      await sleep(250);
    }
    await rm(path, { recursive: true, force: true });
  };
  try {
    await core.createPersistentVolume({
      body: {
        metadata: { name, labels: { 'svc.test/real-node-volume': opts.node.name } },
        spec: {
          storageClassName: opts.storageClassName ?? realNodeStorageClass,
          capacity: { storage: opts.size ?? '20Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          local: { path },
          nodeAffinity: {
            required: {
              nodeSelectorTerms: [
                {
                  matchExpressions: [
                    {
                      key: 'kubernetes.io/hostname',
                      operator: 'In',
                      values: [opts.node.name],
                    },
                  ],
                },
              ],
            },
          },
          claimRef: {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            namespace: opts.namespace,
            name: opts.claim,
          },
        },
      },
    });
  } catch (error) {
    await rm(path, { recursive: true, force: true });
    throw error;
  }
  return { name, path, remove };
}
