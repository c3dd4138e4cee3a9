import { type OrchestratorDeps, tenantClusterRole } from './context.ts';

/**
 * svc holds no rights inside a namespace until it binds its tenant ClusterRole there
 * (charts/svc-system/templates/rbac.yaml). Returns once RBAC applies the binding, so the next
 * call never meets a transient 403. Idempotent: every operation on an existing tenant namespace
 * calls it first, which also repairs a binding someone removed. Deleting the namespace deletes it.
 */
export function bindServiceIdentity(
  deps: Pick<OrchestratorDeps, 'namespaces' | 'install'>,
  namespace: string,
) {
  return deps.namespaces.bindServiceIdentity(namespace, {
    serviceAccount: deps.install.serviceAccount,
    installNamespace: deps.install.namespace,
    clusterRole: tenantClusterRole(deps.install),
  });
}
