import {
  CoreV1Api,
  type KubeConfig,
  setHeaderOptions,
  type V1ObjectMeta,
} from '@kubernetes/client-node';

/**
 * What one reconciliation pass needs from the cluster that svc may list cluster-wide, read with
 * a fixed number of LISTs whatever the number of tenants (docs/orchestrator.md "What one pass
 * costs"): svc's namespaces (`managed-by=svc`) with labels and whether they are being deleted,
 * and the names of the Secrets in the install namespace (metadata-only).
 *
 * Not here, on purpose: Secrets and workloads of tenant namespaces. svc's cluster-wide role has
 * no Secrets and no workloads (charts/svc-system/templates/rbac.yaml: it must not read
 * kube-system's Secrets nor another install's tenants), and a LIST across namespaces would
 * need exactly that right; a metadata-only LIST needs the same `list` verb. They are read per
 * tenant namespace, where svc's RoleBinding grants them (releaseRecord).
 */
export interface ClusterSnapshot {
  namespaces: Map<string, SnapshotNamespace>;
  installSecrets: Set<string>;
}

export interface SnapshotNamespace {
  labels: Record<string, string>;
  terminating: boolean;
}

/** Objects per LIST page: bounds one answer's size at any tenant count. */
const PAGE = 500;

const METADATA_ONLY = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

/** The request options that ask the API server for metadata only (PartialObjectMetadataList). */
const metadataOnly = setHeaderOptions('Accept', METADATA_ONLY);

export async function takeClusterSnapshot(
  kubeConfig: KubeConfig,
  o: { installNamespace: string },
): Promise<ClusterSnapshot> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const [namespaces, installSecrets] = await Promise.all([
    pages((more) => core.listNamespace({ labelSelector: 'managed-by=svc', ...more })),
    pages((more) =>
      core.listNamespacedSecret({ namespace: o.installNamespace, ...more }, metadataOnly),
    ),
  ]);
  const snapshot: ClusterSnapshot = { namespaces: new Map(), installSecrets: new Set() };
  for (const ns of namespaces) {
    const name = ns.metadata?.name;
    if (!name) continue;
    snapshot.namespaces.set(name, {
      labels: ns.metadata?.labels ?? {},
      terminating: ns.metadata?.deletionTimestamp !== undefined,
    });
  }
  for (const { metadata } of installSecrets) {
    if (metadata?.name) snapshot.installSecrets.add(metadata.name);
  }
  return snapshot;
}

/**
 * A helm release's newest revision and its status, from helm's own storage in one
 * metadata-only LIST instead of a helm process: helm 4 (and 3) keep each revision in a Secret
 * labelled `owner=helm`, `name=<release>`, `status=<status>`, `version=<revision>`
 * (helm.sh/helm/v4 pkg/storage/driver/secrets.go newSecretsObject), and `helm status` reports
 * the highest revision. The bodies (tens of KiB each) are not transferred.
 */
export async function releaseRecord(
  kubeConfig: KubeConfig,
  namespace: string,
  release: string,
): Promise<{ revision: number; status: string } | undefined> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const secrets = await pages((more) =>
    core.listNamespacedSecret(
      { namespace, labelSelector: `owner=helm,name=${release}`, ...more },
      metadataOnly,
    ),
  );
  let newest: { revision: number; status: string } | undefined;
  for (const { metadata } of secrets) {
    const found = revisionOf(metadata);
    if (found && (!newest || newest.revision < found.revision)) newest = found;
  }
  return newest;
}

function revisionOf(
  metadata: V1ObjectMeta | undefined,
): { revision: number; status: string } | undefined {
  const revision = Number(metadata?.labels?.version);
  const status = metadata?.labels?.status;
  if (!status || !Number.isInteger(revision)) return undefined;
  return { revision, status };
}

async function pages<T>(
  list: (more: { limit: number; _continue?: string }) => Promise<{
    items: T[] | null;
    metadata?: { _continue?: string | undefined } | undefined;
  }>,
): Promise<T[]> {
  const items: T[] = [];
  let next: string | undefined;
  do {
    const page = await list(next ? { limit: PAGE, _continue: next } : { limit: PAGE });
    // An empty PartialObjectMetadataList carries `items: null`.
    items.push(...(page.items ?? []));
    next = page.metadata?._continue || undefined;
  } while (next);
  return items;
}
