import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApiException,
  AppsV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  type KubeConfig,
  RbacAuthorizationV1Api,
  type V1Namespace,
  type V1RoleBinding,
} from '@kubernetes/client-node';

/** Every namespace and Secret svc creates carries this; ownership checks require it too. */
const managedBy = { 'managed-by': 'svc' } as const;
const pollMs = 250;

/** The namespace exists but its labels do not prove it is ours (other tenant, not managed-by=svc). */
export class NamespaceConflictError extends Error {
  override name = 'NamespaceConflictError';
}

/** The namespace is being deleted; it cannot be (re)used until it is gone. */
export class NamespaceTerminatingError extends Error {
  override name = 'NamespaceTerminatingError';
}

/** remove() gave up waiting; the namespace is still Terminating (the message says why if known). */
export class NamespaceRemovalTimeoutError extends Error {
  override name = 'NamespaceRemovalTimeoutError';
}

/** bindServiceIdentity gave up: RBAC still does not let svc create Secrets in the namespace. */
export class ServiceIdentityBindingError extends Error {
  override name = 'ServiceIdentityBindingError';
}

/** The RoleBinding svc makes for itself in each tenant namespace. */
export const SERVICE_IDENTITY_BINDING = 'svc';
/** How long bindServiceIdentity waits for the binding to take effect, by default. */
export const SERVICE_IDENTITY_WAIT_MS = 30_000;

export interface ServiceIdentity {
  /** svc's ServiceAccount ... */
  serviceAccount: string;
  /** ... in this namespace (the install namespace). */
  installNamespace: string;
  /** The ClusterRole holding svc's rights inside a tenant namespace (`svc-tenant.<install ns>`). */
  clusterRole: string;
  /** How long to wait for RBAC to take effect; default SERVICE_IDENTITY_WAIT_MS. */
  waitMs?: number;
}

export interface NamespaceStore {
  /** Creates the namespace with `managed-by=svc` plus labels; idempotent for the same owner. */
  ensure(name: string, labels: Record<string, string>): Promise<'created' | 'existed'>;
  /** Deletes it only if its labels match, then waits until it is gone. Not-found is success. */
  remove(name: string, o: { waitMs: number; expectLabels: Record<string, string> }): Promise<void>;
  exists(name: string): Promise<boolean>;
  /**
   * Binds svc's ServiceAccount to its tenant ClusterRole inside `namespace` (RoleBinding `svc`),
   * idempotently: an existing binding with the same roleRef and subject is kept, any other `svc`
   * binding is replaced (roleRef is immutable). Returns once a SelfSubjectAccessReview says the
   * caller may create Secrets there (RBAC informer lag), at once when it already may (a cluster
   * admin); throws ServiceIdentityBindingError after `waitMs`.
   */
  bindServiceIdentity(
    namespace: string,
    identity: ServiceIdentity,
  ): Promise<'created' | 'existed' | 'replaced'>;
  /** Creates the Secret, or replaces it whole (old keys vanish) when it exists. */
  putSecret(
    namespace: string,
    name: string,
    data: Record<string, string>,
    labels: Record<string, string>,
  ): Promise<'created' | 'replaced'>;
  readSecret(namespace: string, name: string): Promise<Record<string, string> | undefined>;
}

function hasCode(error: unknown, code: number): boolean {
  return error instanceof ApiException && error.code === code;
}

async function orUndefinedOn404<T>(request: Promise<T>): Promise<T | undefined> {
  try {
    return await request;
  } catch (error) {
    if (hasCode(error, 404)) return undefined;
    throw error;
  }
}

function labelsMatch(ns: V1Namespace, expected: Record<string, string>): boolean {
  const actual = ns.metadata?.labels ?? {};
  return Object.entries({ ...managedBy, ...expected }).every(([k, v]) => actual[k] === v);
}

function sameBinding(actual: V1RoleBinding, wanted: V1RoleBinding): boolean {
  const subject = wanted.subjects?.[0];
  const subjects = actual.subjects ?? [];
  return (
    actual.roleRef.kind === wanted.roleRef.kind &&
    actual.roleRef.name === wanted.roleRef.name &&
    subjects.length === 1 &&
    subjects[0]?.kind === subject?.kind &&
    subjects[0]?.name === subject?.name &&
    subjects[0]?.namespace === subject?.namespace
  );
}

function isTerminating(ns: V1Namespace): boolean {
  return ns.metadata?.deletionTimestamp !== undefined || ns.status?.phase === 'Terminating';
}

/** The namespace controller's conditions that explain a stuck deletion. */
function deletionProblems(ns: V1Namespace): string {
  const problems = (ns.status?.conditions ?? [])
    .filter((c) => c.status === 'True')
    .map((c) => `${c.type}: ${c.message ?? ''}`);
  return problems.length > 0 ? ` (${problems.join('; ')})` : '';
}

export function createNamespaceStore(kubeConfig: KubeConfig): NamespaceStore {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  const authz = kubeConfig.makeApiClient(AuthorizationV1Api);
  const read = (name: string) => orUndefinedOn404(core.readNamespace({ name }));

  /** Creates the binding, or replaces a different one of that name; reports which. */
  async function putBinding(
    namespace: string,
    body: V1RoleBinding,
  ): Promise<'created' | 'existed' | 'replaced'> {
    const name = SERVICE_IDENTITY_BINDING;
    try {
      await rbac.createNamespacedRoleBinding({ namespace, body });
      return 'created';
    } catch (error) {
      if (!hasCode(error, 409)) throw error;
    }
    const existing = await orUndefinedOn404(rbac.readNamespacedRoleBinding({ name, namespace }));
    if (existing && sameBinding(existing, body)) return 'existed';
    if (existing) {
      const uid = existing.metadata?.uid;
      await orUndefinedOn404(
        rbac.deleteNamespacedRoleBinding({
          name,
          namespace,
          body: uid ? { preconditions: { uid } } : {},
        }),
      );
    }
    await rbac.createNamespacedRoleBinding({ namespace, body });
    return 'replaced';
  }

  async function maySecrets(namespace: string): Promise<{ allowed: boolean; reason: string }> {
    const review = await authz.createSelfSubjectAccessReview({
      body: { spec: { resourceAttributes: { namespace, verb: 'create', resource: 'secrets' } } },
    });
    return {
      allowed: review.status?.allowed === true,
      reason: review.status?.reason ?? review.status?.evaluationError ?? '',
    };
  }

  return {
    async ensure(name, labels) {
      try {
        await core.createNamespace({
          body: { metadata: { name, labels: { ...managedBy, ...labels } } },
        });
        return 'created';
      } catch (error) {
        if (!hasCode(error, 409)) throw error;
      }
      const ns = await read(name);
      if (!ns || isTerminating(ns)) {
        throw new NamespaceTerminatingError(`namespace ${name} is being deleted`);
      }
      if (!labelsMatch(ns, labels)) {
        throw new NamespaceConflictError(`namespace ${name} exists and is not this tenant's`);
      }
      return 'existed';
    },

    async remove(name, o) {
      const ns = await read(name);
      if (!ns) return;
      if (!labelsMatch(ns, o.expectLabels)) {
        throw new NamespaceConflictError(`namespace ${name} is not this tenant's; not deleting it`);
      }
      if (!isTerminating(ns)) {
        // The uid precondition keeps a namespace recreated under the same name safe.
        const uid = ns.metadata?.uid;
        await orUndefinedOn404(
          core.deleteNamespace({ name, body: uid ? { preconditions: { uid } } : {} }),
        );
      }
      const deadline = Date.now() + o.waitMs;
      for (;;) {
        const current = await read(name);
        if (!current || current.metadata?.uid !== ns.metadata?.uid) return;
        if (Date.now() >= deadline) {
          throw new NamespaceRemovalTimeoutError(
            `namespace ${name} still terminating after ${o.waitMs} ms${deletionProblems(current)}`,
          );
        }
        await sleep(pollMs);
      }
    },

    async exists(name) {
      return (await read(name)) !== undefined;
    },

    async bindServiceIdentity(namespace, identity) {
      const outcome = await putBinding(namespace, {
        metadata: { name: SERVICE_IDENTITY_BINDING, namespace, labels: { ...managedBy } },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: identity.clusterRole,
        },
        subjects: [
          {
            kind: 'ServiceAccount',
            name: identity.serviceAccount,
            namespace: identity.installNamespace,
          },
        ],
      });
      const waitMs = identity.waitMs ?? SERVICE_IDENTITY_WAIT_MS;
      const deadline = Date.now() + waitMs;
      for (;;) {
        const review = await maySecrets(namespace);
        if (review.allowed) return outcome;
        if (Date.now() >= deadline) {
          throw new ServiceIdentityBindingError(
            `RoleBinding ${SERVICE_IDENTITY_BINDING} in ${namespace} (ClusterRole ` +
              `${identity.clusterRole}, ServiceAccount ${identity.installNamespace}/` +
              `${identity.serviceAccount}) not in effect after ${waitMs} ms: svc may not create ` +
              `Secrets there${review.reason ? ` (${review.reason})` : ''}`,
          );
        }
        await sleep(pollMs);
      }
    },

    async putSecret(namespace, name, data, labels) {
      const body = {
        metadata: { name, namespace, labels: { ...managedBy, ...labels } },
        type: 'Opaque',
        stringData: data,
      };
      try {
        await core.createNamespacedSecret({ namespace, body });
        return 'created';
      } catch (error) {
        if (!hasCode(error, 409)) throw error;
      }
      // No resourceVersion: an unconditional replace, so the newest write wins.
      await core.replaceNamespacedSecret({ namespace, name, body });
      return 'replaced';
    },

    async readSecret(namespace, name) {
      const secret = await orUndefinedOn404(core.readNamespacedSecret({ namespace, name }));
      if (!secret) return undefined;
      return Object.fromEntries(
        Object.entries(secret.data ?? {}).map(([k, v]) => [
          k,
          Buffer.from(v, 'base64').toString('utf8'),
        ]),
      );
    },
  };
}

export interface WorkloadReadiness {
  kind: 'Deployment' | 'StatefulSet';
  name: string;
  ready: number;
  desired: number;
}

export interface VolumeClaimPhase {
  pvc: string;
  /** Pending, Bound or Lost; Pending that stays means no provisioner serves the class. */
  phase: string;
}

export interface ReadinessReport {
  workloads: WorkloadReadiness[];
  pvcs: VolumeClaimPhase[];
}

/** What is (not yet) ready in a namespace: for progress and for error details. */
export async function readinessReport(
  kubeConfig: KubeConfig,
  namespace: string,
): Promise<ReadinessReport> {
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const [deployments, statefulSets, claims] = await Promise.all([
    apps.listNamespacedDeployment({ namespace }),
    apps.listNamespacedStatefulSet({ namespace }),
    core.listNamespacedPersistentVolumeClaim({ namespace }),
  ]);
  const workload = (
    kind: WorkloadReadiness['kind'],
    o: {
      metadata?: { name?: string };
      spec?: { replicas?: number };
      status?: { readyReplicas?: number };
    },
  ): WorkloadReadiness => ({
    kind,
    name: o.metadata?.name ?? '',
    ready: o.status?.readyReplicas ?? 0,
    desired: o.spec?.replicas ?? 1,
  });
  return {
    workloads: [
      ...deployments.items.map((d) => workload('Deployment', d)),
      ...statefulSets.items.map((s) => workload('StatefulSet', s)),
    ],
    pvcs: claims.items.map((c) => ({
      pvc: c.metadata?.name ?? '',
      phase: c.status?.phase ?? 'Pending',
    })),
  };
}
