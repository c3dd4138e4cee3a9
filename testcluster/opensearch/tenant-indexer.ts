import { fileURLToPath } from 'node:url';
import type { CoreV1Api } from '@kubernetes/client-node';
import {
  INDEXER_ADMIN_DN,
  INDEXER_NODE_DN,
  INDEXER_TLS_SECRET,
} from '../../src/orchestrator/indexer-pki.ts';
import { INDEXER_SECURITY_SECRET } from '../../src/orchestrator/indexer-security.ts';
// The in-cluster names (monitor-indexer.<namespace>.svc) resolve to loopback in this process
// too, so the setup below verifies the node certificate under the name svc issued it for.
import '../../test/support/cluster-dns.ts';
import {
  indexAlerts,
  installAlertIndexSetup,
  installWazuhTemplate,
  type OpenSearchTarget,
} from './alert-index.ts';
import { type OpenSearchNode, type SecurityFiles, startOpenSearch } from './node.ts';

/**
 * A tenant's indexer for the demo (scripts/demo.ts), played by a real OpenSearch node with the
 * security plugin: the PKI (svc-indexer-tls) and the users (svc-indexer-security) svc wrote
 * into the tenant's namespace, the chart's opensearch.yml settings, the chart's alert pipeline
 * and template plus Wazuh's own template. The adapter reaches it under its in-cluster name over
 * TLS, trusting the CA its Pod mounts, and signs in with the login its Pod mounts: the plugin,
 * not a stand-in, decides whether that login is good.
 */

export const CLUSTER_DNS_PRELOAD = fileURLToPath(
  new URL('../../test/support/cluster-dns.ts', import.meta.url),
);

export interface ClusterTenantIndexer {
  node: OpenSearchNode;
  /** https://monitor-indexer.<namespace>.svc:<port>: the name the node certificate carries. */
  url: string;
  /** What the adapter's environment needs on top of its Pod's: the URL and the DNS preload. */
  adapterEnv: Record<string, string>;
  /** Writes alerts as the manager's Filebeat does, into the daily index of their timestamp. */
  append(...alerts: Record<string, unknown>[]): void;
  /** Alerts written so far (accepted by the node). */
  written(): number;
  close(): Promise<void>;
}

export async function secretData(
  core: CoreV1Api,
  namespace: string,
  name: string,
): Promise<Record<string, string>> {
  const secret = await core.readNamespacedSecret({ name, namespace });
  return Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
  );
}

function required(data: Record<string, string>, key: string, secret: string): string {
  const value = data[key];
  if (value === undefined) throw new Error(`Secret ${secret} has no key ${key}`);
  return value;
}

/** `wazuh-alerts-4.x-YYYY.MM.DD` of the alert's timestamp, as the manager names it. */
export function dailyIndex(alert: Record<string, unknown>): string {
  const at = new Date(String(alert.timestamp ?? ''));
  const day = Number.isNaN(at.getTime()) ? new Date() : at;
  return `wazuh-alerts-4.x-${day.toISOString().slice(0, 10).replaceAll('-', '.')}`;
}

export async function startClusterTenantIndexer(
  core: CoreV1Api,
  namespace: string,
  opts: { heapMb?: number; onError?: (error: unknown) => void } = {},
): Promise<ClusterTenantIndexer> {
  const tlsName = INDEXER_TLS_SECRET.name;
  const tls = await secretData(core, namespace, tlsName);
  const k = INDEXER_TLS_SECRET.keys;
  const users = await secretData(core, namespace, INDEXER_SECURITY_SECRET.name);
  const u = INDEXER_SECURITY_SECRET.keys;
  const files: SecurityFiles = {
    'internal_users.yml': required(users, u.users, INDEXER_SECURITY_SECRET.name),
    'roles.yml': required(users, u.roles, INDEXER_SECURITY_SECRET.name),
    'roles_mapping.yml': required(users, u.mapping, INDEXER_SECURITY_SECRET.name),
  };
  const pem = {
    rootCa: required(tls, k.ca, tlsName),
    nodeCert: required(tls, k.node, tlsName),
    nodeKey: required(tls, k.nodeKey, tlsName),
    adminCert: required(tls, k.admin, tlsName),
    adminKey: required(tls, k.adminKey, tlsName),
  };
  const node = await startOpenSearch({
    heapMb: opts.heapMb ?? 384,
    security: { pem, files, nodeDn: INDEXER_NODE_DN, adminDn: INDEXER_ADMIN_DN },
  });
  const url = `https://monitor-indexer.${namespace}.svc:${node.httpPort}`;
  // The manager writes as the indexer's admin; here the admin certificate stands for it.
  const admin: OpenSearchTarget = { url, ca: pem.rootCa, cert: pem.adminCert, key: pem.adminKey };
  try {
    await installWazuhTemplate(admin);
    await installAlertIndexSetup(admin);
  } catch (error) {
    await node.stop();
    throw error;
  }
  let written = 0;
  let queue = Promise.resolve();
  return {
    node,
    url,
    adapterEnv: { SVC_INDEXER_URL: url, NODE_OPTIONS: `--import=${CLUSTER_DNS_PRELOAD}` },
    append(...alerts) {
      const byIndex = Map.groupBy(alerts, dailyIndex);
      // One write at a time, in order, as one Filebeat ships.
      queue = queue.then(async () => {
        for (const [index, batch] of byIndex) {
          try {
            await indexAlerts(admin, index, batch);
            written += batch.length;
          } catch (error) {
            opts.onError?.(error);
          }
        }
      });
    },
    written: () => written,
    async close() {
      await queue;
      await node.stop();
    },
  };
}
