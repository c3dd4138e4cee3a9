import { AppsV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { ScaledWorkload } from '../domains/provisioning/provisioning-types.ts';
import type { OrchestratorDeps } from './context.ts';
import { namespaceOf } from './render.ts';
import { bindServiceIdentity } from './service-identity.ts';

/**
 * Where a suspended workload keeps the replica count it had, for the resume: on the object
 * itself, so it survives an orchestrator crash and needs no table. Helm leaves annotations it
 * did not set alone.
 */
export const REPLICAS_BEFORE_SUSPEND = 'svc.io/replicas-before-suspend';

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

type Kind = 'Deployment' | 'StatefulSet';

interface Workload {
  kind: Kind;
  name: string;
  replicas: number;
  /** The annotation's value, when a suspension set it. */
  saved: number | undefined;
}

export type { ScaledWorkload };

interface Meta {
  metadata?: { name?: string; annotations?: Record<string, string> };
  spec?: { replicas?: number };
}

function workload(kind: Kind, o: Meta): Workload {
  const saved = o.metadata?.annotations?.[REPLICAS_BEFORE_SUSPEND];
  const parsed = saved === undefined ? Number.NaN : Number.parseInt(saved, 10);
  return {
    kind,
    name: o.metadata?.name ?? '',
    // The API server defaults an unset count to 1.
    replicas: o.spec?.replicas ?? 1,
    saved: Number.isInteger(parsed) && parsed >= 0 ? parsed : undefined,
  };
}

/**
 * The tenant namespace's workloads through the scale subresource (RBAC: `deployments/scale`,
 * `statefulsets/scale`), so svc never rewrites a spec helm owns.
 */
function workloadsIn(deps: Pick<OrchestratorDeps, 'kubeConfig'>, namespace: string) {
  const apps = deps.kubeConfig.makeApiClient(AppsV1Api);
  return {
    async list(): Promise<Workload[]> {
      const [deployments, statefulSets] = await Promise.all([
        apps.listNamespacedDeployment({ namespace }),
        apps.listNamespacedStatefulSet({ namespace }),
      ]);
      return [
        ...deployments.items.map((d) => workload('Deployment', d)),
        ...statefulSets.items.map((s) => workload('StatefulSet', s)),
      ];
    },
    async scale(w: Workload, replicas: number): Promise<void> {
      const request = { name: w.name, namespace, body: { spec: { replicas } } };
      if (w.kind === 'Deployment') await apps.patchNamespacedDeploymentScale(request, MERGE_PATCH);
      else await apps.patchNamespacedStatefulSetScale(request, MERGE_PATCH);
    },
    /** Sets the annotation, or removes it with null (merge patch). */
    async annotate(w: Workload, saved: number | null): Promise<void> {
      const request = {
        name: w.name,
        namespace,
        body: {
          metadata: {
            annotations: { [REPLICAS_BEFORE_SUSPEND]: saved === null ? null : `${saved}` },
          },
        },
      };
      if (w.kind === 'Deployment') await apps.patchNamespacedDeployment(request, MERGE_PATCH);
      else await apps.patchNamespacedStatefulSet(request, MERGE_PATCH);
    },
  };
}

/**
 * Suspension's data plane (docs/orchestrator.md "Suspension"): every Deployment and
 * StatefulSet of the tenant namespace goes to zero replicas, its count saved on it first; PVCs,
 * Secrets and the release stay. `stopping` is recorded before the first change and `stopped`
 * (with the `data_plane_suspended` step) after the last, so a crash in between is picked up
 * again, and a resume that comes meanwhile restores what was already scaled. Each workload is
 * idempotent: an annotation already there is the count to keep (a re-run must not save 0).
 */
/** What suspending or resuming a data plane needs. */
type DataPlaneDeps = Pick<
  OrchestratorDeps,
  'provisioning' | 'kubeConfig' | 'namespaces' | 'install'
>;

export async function advanceSuspension(deps: DataPlaneDeps, tenantId: string): Promise<void> {
  const tenant = await deps.provisioning.find(tenantId);
  if (tenant?.state !== 'suspended') return;
  await deps.provisioning.beginSuspension(tenantId);
  const namespace = namespaceOf(tenant.slug);
  await bindServiceIdentity(deps, namespace);
  const cluster = workloadsIn(deps, namespace);
  const scaled: ScaledWorkload[] = [];
  for (const w of await cluster.list()) {
    const keep = w.saved ?? w.replicas;
    if (w.saved === undefined) await cluster.annotate(w, keep);
    if (w.replicas !== 0) await cluster.scale(w, 0);
    scaled.push({ kind: w.kind, name: w.name, replicas: keep });
  }
  await deps.provisioning.finishDataPlane(tenantId, {
    state: 'suspended',
    dataPlane: 'stopped',
    step: 'data_plane_suspended',
    workloads: scaled,
  });
}

/**
 * The resume's data plane: every workload carrying the annotation gets its count back, then
 * loses the annotation (a re-run after a crash finds the rest still annotated). Workloads
 * without it were never scaled by svc and are left alone.
 */
export async function advanceResume(deps: DataPlaneDeps, tenantId: string): Promise<void> {
  const tenant = await deps.provisioning.find(tenantId);
  if (tenant?.state !== 'active') return;
  const namespace = namespaceOf(tenant.slug);
  await bindServiceIdentity(deps, namespace);
  const cluster = workloadsIn(deps, namespace);
  const restored: ScaledWorkload[] = [];
  for (const w of await cluster.list()) {
    if (w.saved === undefined) continue;
    if (w.replicas !== w.saved) await cluster.scale(w, w.saved);
    await cluster.annotate(w, null);
    restored.push({ kind: w.kind, name: w.name, replicas: w.saved });
  }
  await deps.provisioning.finishDataPlane(tenantId, {
    state: 'active',
    dataPlane: 'running',
    step: 'data_plane_resumed',
    workloads: restored,
  });
}
