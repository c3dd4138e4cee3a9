import { ApiException, CoreV1Api, KubeConfig } from '@kubernetes/client-node';

/** What the tenant service needs from the cluster for Secrets, in tenant terms. */
export interface SecretStore {
  namespace: string;
  /**
   * Creates the Secret; fails if it exists (names are per tenant id, so that means a retry).
   * Throws ClusterUnavailableError when the cluster cannot be reached or the namespace is missing.
   */
  create(name: string, data: Record<string, string>, labels: Record<string, string>): Promise<void>;
  /**
   * Sets the Secret's data whole (a configuration change rewriting a key), creating the Secret
   * when it does not exist. Errors as create.
   */
  replace(
    name: string,
    data: Record<string, string>,
    labels: Record<string, string>,
  ): Promise<void>;
  /** Deletes the Secret; with `uid`, only that very object (not one recreated under its name). */
  remove(name: string, uid?: string): Promise<void>;
  read(name: string): Promise<Record<string, string> | undefined>;
  /** Metadata of the Secrets matching a label selector (never their data). */
  list(labelSelector: string): Promise<SecretMeta[]>;
}

export interface SecretMeta {
  name: string;
  uid: string;
  labels: Record<string, string>;
  createdAt: Date;
}

/**
 * The cluster cannot take the request now: unreachable (`cluster_unavailable`), or reachable but
 * without the install namespace (`install_namespace_missing`, e.g. a new, empty cluster). Nothing
 * the caller sent is wrong; the same request can succeed later.
 */
export class ClusterUnavailableError extends Error {
  override name = 'ClusterUnavailableError';
  constructor(
    readonly code: 'cluster_unavailable' | 'install_namespace_missing',
    message: string,
  ) {
    super(message);
  }
}

/** Connection-level failures: fetch's TypeError whose cause chain carries a system error code. */
function unreachable(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 5; i++) {
    if (typeof e.code === 'string' && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(e.code)) return true;
    e = e.cause as typeof e;
  }
  return error instanceof TypeError && error.message === 'fetch failed';
}

function clusterError(error: unknown, namespace: string): unknown {
  if (error instanceof ApiException) {
    if (error.code === 404)
      return new ClusterUnavailableError(
        'install_namespace_missing',
        `the install namespace ${namespace} does not exist in the cluster`,
      );
    if (error.code >= 500 || error.code === 429)
      return new ClusterUnavailableError(
        'cluster_unavailable',
        `the cluster answered ${error.code}`,
      );
    return error;
  }
  if (unreachable(error))
    return new ClusterUnavailableError(
      'cluster_unavailable',
      `the cluster cannot be reached: ${(error as Error).message}`,
    );
  return error;
}

/** Secrets in one namespace (the install namespace, `svc-system`) through client-node. */
export function createSecretStore(kubeConfig: KubeConfig, namespace: string): SecretStore {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return {
    namespace,
    async create(name, data, labels) {
      try {
        await core.createNamespacedSecret({
          namespace,
          body: {
            metadata: { name, namespace, labels: { 'managed-by': 'svc', ...labels } },
            type: 'Opaque',
            stringData: data,
          },
        });
      } catch (error) {
        throw clusterError(error, namespace);
      }
    },
    async replace(name, data, labels) {
      const body = {
        metadata: { name, namespace, labels: { 'managed-by': 'svc', ...labels } },
        type: 'Opaque',
        stringData: data,
      };
      try {
        await core.replaceNamespacedSecret({ name, namespace, body });
      } catch (error) {
        if (!(error instanceof ApiException && error.code === 404))
          throw clusterError(error, namespace);
        try {
          await core.createNamespacedSecret({ namespace, body });
        } catch (created) {
          throw clusterError(created, namespace);
        }
      }
    },
    async remove(name, uid) {
      try {
        await core.deleteNamespacedSecret({
          name,
          namespace,
          ...(uid ? { body: { preconditions: { uid } } } : {}),
        });
      } catch (error) {
        if (!(error instanceof ApiException && error.code === 404)) throw error;
      }
    },
    async read(name) {
      try {
        const secret = await core.readNamespacedSecret({ name, namespace });
        return Object.fromEntries(
          Object.entries(secret.data ?? {}).map(([k, v]) => [
            k,
            Buffer.from(v, 'base64').toString('utf8'),
          ]),
        );
      } catch (error) {
        if (error instanceof ApiException && error.code === 404) return undefined;
        throw error;
      }
    },
    async list(labelSelector) {
      const { items } = await core.listNamespacedSecret({ namespace, labelSelector });
      return items.map((s) => ({
        name: s.metadata?.name ?? '',
        uid: s.metadata?.uid ?? '',
        labels: s.metadata?.labels ?? {},
        createdAt: new Date(s.metadata?.creationTimestamp ?? 0),
      }));
    },
  };
}

/** The service's own cluster identity: in-cluster, or KUBECONFIG for local runs and tests. */
export function loadKubeConfig(kubeconfigPath?: string): KubeConfig | undefined {
  const kc = new KubeConfig();
  if (kubeconfigPath) {
    kc.loadFromFile(kubeconfigPath);
    return kc;
  }
  if (process.env.KUBERNETES_SERVICE_HOST) {
    kc.loadFromCluster();
    return kc;
  }
  if (process.env.KUBECONFIG) {
    kc.loadFromDefault();
    return kc;
  }
  return undefined;
}
