import { ApiException, CoreV1Api, KubeConfig } from '@kubernetes/client-node';

/** What the tenant service needs from the cluster for Secrets, in tenant terms. */
export interface SecretStore {
  namespace: string;
  /** Creates the Secret; fails if it exists (names are per tenant id, so that means a retry). */
  create(name: string, data: Record<string, string>, labels: Record<string, string>): Promise<void>;
  remove(name: string): Promise<void>;
  read(name: string): Promise<Record<string, string> | undefined>;
}

export class ClusterUnavailableError extends Error {
  override name = 'ClusterUnavailableError';
}

/** Secrets in one namespace (the install namespace, `svc-system`) through client-node. */
export function createSecretStore(kubeConfig: KubeConfig, namespace: string): SecretStore {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return {
    namespace,
    async create(name, data, labels) {
      await core.createNamespacedSecret({
        namespace,
        body: {
          metadata: { name, namespace, labels: { 'managed-by': 'svc', ...labels } },
          type: 'Opaque',
          stringData: data,
        },
      });
    },
    async remove(name) {
      try {
        await core.deleteNamespacedSecret({ name, namespace });
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
