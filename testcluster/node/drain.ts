// `kubectl drain` as a library: cordon the node, then evict its Pods through the Eviction API so
// PodDisruptionBudgets are honoured (a refused eviction, 429, is retried until the budget allows
// it), leaving DaemonSet and mirror Pods in place, and wait until the evicted Pods are gone.
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException, CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';

export interface DrainOptions {
  /** Gives up (throws) after this long; kubectl's default is to wait forever. */
  readonly timeoutMs?: number;
  /** Pause between refused evictions (kubectl waits 5 s). */
  readonly retryMs?: number;
  /** Evict Pods that use emptyDir volumes, losing their data (`--delete-emptydir-data`). */
  readonly deleteEmptyDirData?: boolean;
  /** Evict Pods that no controller will recreate (`--force`). */
  readonly force?: boolean;
}

export interface DrainResult {
  /** `namespace/name` of every evicted Pod. */
  readonly evicted: readonly string[];
  /** DaemonSet and mirror Pods left on the node, as kubectl's `--ignore-daemonsets`. */
  readonly skipped: readonly string[];
  /** Evictions the API refused with 429 (a PodDisruptionBudget allowed no disruption yet). */
  readonly refusals: number;
  readonly tookMs: number;
}

/** Marks the node (un)schedulable, as `kubectl cordon` / `uncordon`. */
export async function cordonNode(kc: KubeConfig, name: string, unschedulable = true) {
  const core = kc.makeApiClient(CoreV1Api);
  for (let attempt = 0; ; attempt++) {
    const node = await core.readNode({ name });
    if (Boolean(node.spec?.unschedulable) === unschedulable) return;
    try {
      // The kubelet updates its Node every few seconds: replace with the read version, and
      // read again on a conflict.
      await core.replaceNode({ name, body: { ...node, spec: { ...node.spec, unschedulable } } });
      return;
    } catch (error) {
      if (!(error instanceof ApiException && error.code === 409) || attempt > 20) throw error;
    }
  }
}

/** Cordons `name` and evicts its Pods as `kubectl drain --ignore-daemonsets` does. */
export async function drainNode(
  kc: KubeConfig,
  name: string,
  opts: DrainOptions = {},
): Promise<DrainResult> {
  const started = performance.now();
  const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
  const retryMs = opts.retryMs ?? 1_000;
  const core = kc.makeApiClient(CoreV1Api);
  await cordonNode(kc, name);

  const pods = (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${name}` }))
    .items;
  const skipped: string[] = [];
  const toEvict: V1Pod[] = [];
  const refusedUpfront: string[] = [];
  for (const pod of pods) {
    const id = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    const controller = pod.metadata?.ownerReferences?.find((o) => o.controller);
    const finished = pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
    if (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) {
      skipped.push(id);
    } else if (controller?.kind === 'DaemonSet') {
      skipped.push(id);
    } else if (!controller && !finished && !opts.force) {
      refusedUpfront.push(`${id} (no controller; force)`);
    } else if (pod.spec?.volumes?.some((v) => v.emptyDir) && !opts.deleteEmptyDirData) {
      refusedUpfront.push(`${id} (emptyDir; deleteEmptyDirData)`);
    } else {
      toEvict.push(pod);
    }
  }
  // kubectl checks every Pod before evicting any: a drain that cannot finish does not start.
  if (refusedUpfront.length > 0) {
    throw new Error(`drain ${name}: cannot evict ${refusedUpfront.join(', ')}`);
  }

  let refusals = 0;
  const evictOne = async (pod: V1Pod) => {
    const namespace = pod.metadata?.namespace ?? '';
    const podName = pod.metadata?.name ?? '';
    for (;;) {
      try {
        await core.createNamespacedPodEviction({
          name: podName,
          namespace,
          body: {
            apiVersion: 'policy/v1',
            kind: 'Eviction',
            metadata: { name: podName, namespace },
          },
        });
        break;
      } catch (error) {
        if (error instanceof ApiException && error.code === 404) return;
        if (!(error instanceof ApiException && error.code === 429)) throw error;
        refusals++;
        if (Date.now() > deadline) {
          throw new Error(`drain ${name}: ${namespace}/${podName} still refused: ${error.body}`);
        }
        await sleep(retryMs);
      }
    }
    // Gone, or replaced by a Pod of the same name (a StatefulSet's), as kubectl waits.
    for (;;) {
      const current = await core.readNamespacedPod({ name: podName, namespace }).catch((e) => {
        if (e instanceof ApiException && e.code === 404) return undefined;
        throw e;
      });
      if (!current || current.metadata?.uid !== pod.metadata?.uid) return;
      if (Date.now() > deadline) {
        throw new Error(`drain ${name}: ${namespace}/${podName} evicted but not gone in time`);
      }
      await sleep(250);
    }
  };
  await Promise.all(toEvict.map(evictOne));
  return {
    evicted: toEvict.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`),
    skipped,
    refusals,
    tookMs: Math.round(performance.now() - started),
  };
}
