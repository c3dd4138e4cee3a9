import { readFile } from 'node:fs/promises';
import { type CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { INDEXER_TLS_SECRET } from '../../src/orchestrator/indexer-pki.ts';
import { builtImage } from '../../test/packaging/artifacts.ts';
import { importIndexerImage } from '../../testcluster/images/indexer-image.ts';
import { nodeAddress, realNodeLabel } from '../../testcluster/node/configs.ts';
import { type ClusterDns, startClusterDns } from '../../testcluster/node/dns.ts';
import { exposeHostPort, type HostPort } from '../../testcluster/node/host-port.ts';
import { type RealNode, startRealNode } from '../../testcluster/node/real-node.ts';
import { createNodeVolume } from '../../testcluster/node/volumes.ts';
import {
  indexAlerts,
  installWazuhTemplate,
  type OpenSearchTarget,
} from '../../testcluster/opensearch/alert-index.ts';
import { dailyIndex, secretData } from '../../testcluster/opensearch/tenant-indexer.ts';
import type { AlertSink } from './alerts.ts';

/**
 * `npm run demo -- --real-node`: the tenants' adapters and indexers run as real Pods on a real
 * kubelet node (testcluster/node, docs/test-cluster.md "The real node") instead of local
 * processes the demo starts for them. svc itself still runs on the host (`svc serve`, embedded
 * PostgreSQL, the consoles); the Pods reach it at the node address through a forwarder
 * (testcluster/node/host-port.ts). The Wazuh manager, dashboard, TheHive and Cortex have no image
 * on this machine and stay on the kwok node, Ready by kwok's word. docs/demo.md "Real node".
 */

/** The tenant workloads placed on the real node (SVC_TENANT_SCHEDULING `workloads`). */
const ON_REAL_NODE = ['svc-adapter', 'monitor-indexer'] as const;

/**
 * svc's environment for placing the adapter and indexer on the real node and reaching svc from
 * them. It names the node by its label, not its name, so svc can start while the node does (the
 * demo's cluster is its own: this node is the only one with that label).
 */
export async function demoNodeEnv(port: number): Promise<Record<string, string>> {
  const placement = {
    nodeSelector: { [realNodeLabel]: 'true' },
    tolerations: [{ key: realNodeLabel, operator: 'Equal', value: 'true', effect: 'NoSchedule' }],
  };
  const scheduling = {
    nodeSelector: {},
    tolerations: [],
    workloads: Object.fromEntries(ON_REAL_NODE.map((w) => [w, placement])),
  };
  return {
    SVC_ADAPTER_IMAGE: await adapterImage(),
    SVC_API_URL: `http://${nodeAddress}:${port}`,
    SVC_TENANT_SCHEDULING: JSON.stringify(scheduling),
  };
}

/** svc's image as the node's containerd names it (SVC_ADAPTER_IMAGE). */
async function adapterImage(): Promise<string> {
  const { version } = JSON.parse(
    await readFile(new URL('../../package.json', import.meta.url), 'utf8'),
  ) as { version: string };
  return `localhost/svc:${version}`;
}

export interface DemoNode {
  readonly node: RealNode;
  /** After `svc serve` listens: its port reachable from the Pods at the node address. */
  exposeSvc(port: number): Promise<void>;
  /**
   * Before a tenant's package is installed: the real volume its indexer claims (a directory on
   * the node owned by the indexer's uid 1000), pre-bound so the kwok volume provisioner, whose
   * hostPaths are never created, leaves that claim alone.
   */
  prepareTenant(namespace: string, storageClassName: string): Promise<void>;
  /** A tenant's indexer Pod, written to as the manager's Filebeat writes (admin certificate). */
  alertSink(
    core: CoreV1Api,
    namespace: string,
    onError: (error: unknown) => void,
  ): Promise<AlertSink & { close(): Promise<void> }>;
  readonly pids: () => number[];
  stop(): Promise<void>;
}

export async function startDemoNode(kubeconfigPath: string): Promise<DemoNode> {
  const image = await builtImage();
  const node = await startRealNode({ kubeconfigPath }, { timeoutMs: 300_000 });
  const closers: (() => Promise<void>)[] = [() => node.stop()];
  const pids: number[] = [...node.pids];
  const stop = async () => {
    for (const close of closers.reverse()) await close();
  };
  try {
    // Generous: on a machine busy with other work the kubelet takes its time with the first Pod.
    const dns: ClusterDns = await startClusterDns({ kubeconfigPath, node, timeoutMs: 240_000 });
    closers.push(() => dns.stop());
    await node.importImage(image, 'localhost/svc');
    await importIndexerImage(node);
    return {
      node,
      async exposeSvc(port) {
        const exposed: HostPort = await exposeHostPort(node, port);
        pids.push(...exposed.pids);
        closers.push(() => exposed.close());
      },
      async prepareTenant(namespace, storageClassName) {
        const admin = new KubeConfig();
        admin.loadFromFile(kubeconfigPath);
        // Its directory is under the node's and goes with node.stop(); the PV with the cluster.
        await createNodeVolume(admin, {
          node,
          namespace,
          claim: 'data-monitor-indexer-0',
          uid: 1000,
          gid: 1000,
          size: '50Gi',
          storageClassName,
        });
      },
      async alertSink(core, namespace, onError) {
        // monitor-indexer is a headless Service: the writer dials the Pod.
        const pod = await core.readNamespacedPod({ name: 'monitor-indexer-0', namespace });
        const forward = await node.forward(pod.status?.podIP ?? '', 9200);
        const tls = await secretData(core, namespace, INDEXER_TLS_SECRET.name);
        const k = INDEXER_TLS_SECRET.keys;
        const target: OpenSearchTarget = {
          url: `https://127.0.0.1:${forward.port}`,
          servername: `monitor-indexer.${namespace}.svc`,
          ca: tls[k.ca] ?? '',
          cert: tls[k.admin] ?? '',
          key: tls[k.adminKey] ?? '',
        };
        // What the manager's Filebeat sets up before its first write (its template and the
        // pipeline every _bulk names); the Pod's sidecar installs only svc's own.
        await installWazuhTemplate(target).catch(async (error) => {
          await forward.close();
          throw error;
        });
        let queue = Promise.resolve();
        return {
          append(...alerts) {
            const byIndex = Map.groupBy(alerts, dailyIndex);
            // One write at a time, in order, as one Filebeat ships.
            queue = queue.then(async () => {
              for (const [index, batch] of byIndex) {
                await indexAlerts(target, index, batch).catch(onError);
              }
            });
          },
          async close() {
            await queue;
            await forward.close();
          },
        };
      },
      pids: () => pids,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
