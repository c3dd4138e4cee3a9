import { AppsV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Tenant } from '../domains/tenants/tenant-types.ts';
import type { OrchestratorDeps } from './context.ts';
import { ensureIndexerPki, indexerTlsIssuedAt, indexerTlsRevision } from './indexer-pki.ts';
import { namespaceOf } from './render.ts';

/**
 * After a re-issue of `svc-indexer-tls` the pods that read it must restart: the indexer reads its
 * certificates at start, and the manager, dashboard and adapter read the CA at start
 * (docs/charts-tenant.md "Indexer TLS and users", "Rolling the readers"). svc rolls them the way
 * `kubectl rollout restart` does: a pod-template annotation naming the certificate set. The
 * chart never renders this annotation, so helm's three-way merge leaves it alone on the next
 * upgrade or rollback (a field neither the old nor the new manifest names is the live object's).
 */
export const INDEXER_TLS_REVISION = 'svc/indexer-tls-revision';

type Kind = 'Deployment' | 'StatefulSet';

/** The workloads that mount `svc-indexer-tls` (the dashboard only when enabled). */
export const INDEXER_TLS_READERS: ReadonlyArray<{ kind: Kind; name: string }> = [
  { kind: 'StatefulSet', name: 'monitor-indexer' },
  { kind: 'StatefulSet', name: 'monitor-manager' },
  { kind: 'Deployment', name: 'monitor-dashboard' },
  { kind: 'Deployment', name: 'svc-adapter' },
];

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

interface WorkloadMeta {
  metadata?: { name?: string; creationTimestamp?: Date };
  spec?: { template?: { metadata?: { annotations?: Record<string, string> } } };
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/**
 * Whether a workload's pods may still hold an older set. With the annotation: unless it names
 * this set. Without it (svc never rolled the workload): unless the workload was created after
 * the set was issued, in a later second (both times have second precision; the same second
 * counts as before, so a doubt rolls once too often, never once too few). A fresh install,
 * whose Secrets are written before `helm install`, therefore rolls nothing.
 */
function stale(workload: WorkloadMeta, revision: string, issuedAt: Date | undefined): boolean {
  const current = workload.spec?.template?.metadata?.annotations?.[INDEXER_TLS_REVISION];
  if (current !== undefined) return current !== revision;
  const created = workload.metadata?.creationTimestamp;
  if (!created || !issuedAt) return true;
  return seconds(new Date(created)) <= seconds(issuedAt);
}

/**
 * Rolls every reader of the certificate set `data` whose pods may hold an older set; returns
 * the ones it patched (`Kind/name`). Workloads that do not exist (not installed yet, the
 * dashboard disabled) are skipped. Costs two list calls when nothing is stale.
 */
export async function rollIndexerTlsReaders(
  deps: Pick<OrchestratorDeps, 'kubeConfig'>,
  namespace: string,
  data: Record<string, string>,
): Promise<string[]> {
  const apps = deps.kubeConfig.makeApiClient(AppsV1Api);
  const revision = indexerTlsRevision(data);
  const issuedAt = indexerTlsIssuedAt(data);
  const [deployments, statefulSets] = await Promise.all([
    apps.listNamespacedDeployment({ namespace }),
    apps.listNamespacedStatefulSet({ namespace }),
  ]);
  const live = new Map<string, WorkloadMeta>([
    ...deployments.items.map((d) => [`Deployment/${d.metadata?.name}`, d] as const),
    ...statefulSets.items.map((s) => [`StatefulSet/${s.metadata?.name}`, s] as const),
  ]);
  const rolled: string[] = [];
  for (const reader of INDEXER_TLS_READERS) {
    const key = `${reader.kind}/${reader.name}`;
    const workload = live.get(key);
    if (!workload || !stale(workload, revision, issuedAt)) continue;
    const request = {
      name: reader.name,
      namespace,
      body: {
        spec: { template: { metadata: { annotations: { [INDEXER_TLS_REVISION]: revision } } } },
      },
    };
    if (reader.kind === 'Deployment') await apps.patchNamespacedDeployment(request, MERGE_PATCH);
    else await apps.patchNamespacedStatefulSet(request, MERGE_PATCH);
    rolled.push(key);
  }
  return rolled;
}

/**
 * The periodic reconciler's indexer TLS pass for an active tenant (docs/charts-tenant.md
 * "Indexer TLS and users"): one Secret read and a parse decide; a set that expires within 30 days or
 * no longer chains to its CA is issued anew, and the readers still on an older set roll. It
 * leaves the indexer's users alone (their check costs bcrypt verifies: upgrades and
 * configuration changes run it).
 */
export async function renewIndexerTls(
  deps: Pick<OrchestratorDeps, 'kubeConfig' | 'namespaces' | 'now' | 'logger'>,
  tenant: Pick<Tenant, 'id' | 'slug'>,
): Promise<{ pki: 'kept' | 'issued'; rolled: string[] }> {
  const namespace = namespaceOf(tenant.slug);
  const labels = { 'managed-by': 'svc', 'tenant-id': tenant.id };
  const pki = await ensureIndexerPki(deps.namespaces, namespace, labels, deps.now());
  if (pki.action === 'issued') {
    deps.logger.info(
      { tenant_id: tenant.id, namespace, reason: pki.reason },
      'issued the indexer PKI',
    );
  }
  const rolled = await rollIndexerTlsReaders(deps, namespace, pki.data);
  if (rolled.length > 0) {
    deps.logger.info(
      { tenant_id: tenant.id, namespace, rolled },
      'rolled the readers of the indexer PKI',
    );
  }
  return { pki: pki.action, rolled };
}
