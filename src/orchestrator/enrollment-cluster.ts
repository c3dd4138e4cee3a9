import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1StatefulSet,
} from '@kubernetes/client-node';
import {
  ENROLLMENT_PASSWORD_KEY,
  ENROLLMENT_SECRET_VERSION,
  type EnrollmentCluster,
  EnrollmentNotReadyError,
  type ManagerEndpoint,
} from '../domains/enrollment/enrollment-types.ts';
import { installSecretNames } from '../domains/tenants/tenant-creation.ts';
import type { Tenant } from '../domains/tenants/tenant-types.ts';
import type { OrchestratorDeps } from './context.ts';
import { edgePorts } from './edge-ports.ts';
import { EDGE_PROXY_NAME } from './edge-proxy.ts';
import { MONITOR_PORTS } from './edge-proxy-config.ts';
import {
  certificateIssuedAt,
  ENROLLMENT_CA_KEYS,
  ENROLLMENT_TLS_SECRET,
  type EnrollmentCa,
  enrollmentCaProblem,
  enrollmentTlsProblem,
  enrollmentTlsRevision,
  issueEnrollmentCa,
  issueEnrollmentTls,
} from './enrollment-pki.ts';
import { COMPONENT_BOOTSTRAP_SECRET, namespaceOf } from './render.ts';

/**
 * The cluster side of agent enrollment (docs/enrollment.md "What svc does"): where agents reach a
 * tenant's manager, the enrollment certificate svc issues, and the manager's restart onto a new
 * password or certificate. The restart is what `kubectl rollout restart` does, a pod-template
 * annotation; the chart never renders these annotations, so helm's three-way merge keeps them
 * on the next upgrade (as indexer-tls-roll.ts does for the indexer's readers).
 */

/** The manager's pod-template annotation naming the enrollment certificate it was started with. */
export const ENROLLMENT_TLS_REVISION = 'svc/enrollment-tls-revision';
export const MANAGER_STATEFULSET = 'monitor-manager';
/** The tenant chart's Service agents reach (charts/svc-tenant/templates/monitor-service.yaml). */
export const MONITOR_SERVICE = 'monitor';

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

type EndpointDeps = Pick<
  OrchestratorDeps,
  'kubeConfig' | 'install' | 'edgePortBase' | 'edgeProxy' | 'provisioning'
>;

const notFound = (error: unknown) => error instanceof ApiException && error.code === 404;

/** A Service's load-balancer addresses (`status.loadBalancer.ingress`), none when absent. */
async function loadBalancerAddresses(
  deps: Pick<OrchestratorDeps, 'kubeConfig'>,
  namespace: string,
  name: string,
): Promise<string[]> {
  const core = deps.kubeConfig.makeApiClient(CoreV1Api);
  try {
    const service = await core.readNamespacedService({ name, namespace });
    return (service.status?.loadBalancer?.ingress ?? []).flatMap((i) =>
      [i.hostname, i.ip].filter((a): a is string => typeof a === 'string' && a !== ''),
    );
  } catch (error) {
    if (notFound(error)) return [];
    throw error;
  }
}

/**
 * Where agents reach the tenant's manager. Load-balancer mode: the tenant's `monitor` Service,
 * ports 1514/1515. Edge-proxy mode: the install's edge proxy Service, on the tenant's pair. In
 * both the configured `monitor_ingress.hostname` comes first (the name the MSSP published);
 * without it and without an assigned load-balancer address, the answer is `pending`.
 */
export async function managerEndpoint(
  deps: EndpointDeps,
  tenant: Pick<Tenant, 'id' | 'slug' | 'edge_port_pair'>,
): Promise<ManagerEndpoint> {
  const ingress = (await deps.provisioning.storedConfig(tenant.id)).monitor_ingress;
  const hostname = ingress?.hostname ? [ingress.hostname] : [];
  if (ingress?.mode === 'edge-proxy') {
    const ports =
      tenant.edge_port_pair === null
        ? { events: 0, enrollment: 0 }
        : edgePorts(deps.edgePortBase, tenant.edge_port_pair);
    const edge = deps.edgeProxy.enabled
      ? await loadBalancerAddresses(deps, deps.install.namespace, EDGE_PROXY_NAME)
      : [];
    const addresses = [...new Set([...hostname, ...edge])];
    const pending =
      tenant.edge_port_pair === null
        ? 'the tenant holds no edge port pair yet'
        : addresses.length > 0
          ? null
          : deps.edgeProxy.enabled
            ? `the edge proxy Service ${deps.install.namespace}/${EDGE_PROXY_NAME} has no load-balancer address yet`
            : 'the edge proxy is off (SVC_EDGE_PROXY) and the tenant has no monitor_ingress.hostname';
    return { mode: 'edge-proxy', addresses, ports, pending };
  }
  const lb = await loadBalancerAddresses(deps, namespaceOf(tenant.slug), MONITOR_SERVICE);
  const addresses = [...new Set([...hostname, ...lb])];
  return {
    mode: 'loadbalancer',
    addresses,
    ports: { ...MONITOR_PORTS },
    pending:
      addresses.length > 0
        ? null
        : `the Service ${namespaceOf(tenant.slug)}/${MONITOR_SERVICE} has no load-balancer address yet`,
  };
}

/** What agents and the cluster call the manager: every address agents use, and the in-cluster names. */
export function enrollmentNames(
  endpoint: ManagerEndpoint,
  namespace: string,
  clusterDomain: string,
): string[] {
  const service = `${MONITOR_SERVICE}.${namespace}.svc`;
  return [...new Set([...endpoint.addresses, service, `${service}.${clusterDomain}`])];
}

/** Patches the manager's pod-template annotations; `not_installed` when there is no manager. */
async function annotateManager(
  deps: Pick<OrchestratorDeps, 'kubeConfig'>,
  namespace: string,
  annotations: Record<string, string>,
): Promise<'started' | 'not_installed'> {
  const apps = deps.kubeConfig.makeApiClient(AppsV1Api);
  try {
    await apps.patchNamespacedStatefulSet(
      {
        name: MANAGER_STATEFULSET,
        namespace,
        body: { spec: { template: { metadata: { annotations } } } },
      },
      MERGE_PATCH,
    );
    return 'started';
  } catch (error) {
    if (notFound(error)) return 'not_installed';
    throw error;
  }
}

async function readManager(
  deps: Pick<OrchestratorDeps, 'kubeConfig'>,
  namespace: string,
): Promise<V1StatefulSet | undefined> {
  const apps = deps.kubeConfig.makeApiClient(AppsV1Api);
  try {
    return await apps.readNamespacedStatefulSet({ name: MANAGER_STATEFULSET, namespace });
  } catch (error) {
    if (notFound(error)) return undefined;
    throw error;
  }
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/**
 * Whether the manager may run with another certificate than `data`. With the annotation: unless
 * it names this one. Without it (svc never rolled the manager): unless the manager was created
 * in a later second than the certificate was issued (a fresh install, whose Secrets are written
 * before `helm install`); a doubt rolls once too often, never once too few.
 */
function startedBefore(
  manager: V1StatefulSet,
  current: string | undefined,
  data: Record<string, string>,
): boolean {
  if (current !== undefined) return true;
  const created = manager.metadata?.creationTimestamp;
  const issuedAt = certificateIssuedAt(data);
  if (!created || !issuedAt) return true;
  return seconds(new Date(created)) <= seconds(issuedAt);
}

/** The tenant's enrollment CA, issued (and its reference recorded) when missing or near expiry. */
async function ensureEnrollmentCa(
  deps: Pick<OrchestratorDeps, 'secrets' | 'now' | 'provisioning'>,
  tenantId: string,
): Promise<{ ca: EnrollmentCa; issued: boolean }> {
  const name = installSecretNames(tenantId).enrollmentCa;
  const current = await deps.secrets.read(name);
  if (enrollmentCaProblem(current, deps.now()) === undefined && current)
    return { ca: current as EnrollmentCa, issued: false };
  const ca = await issueEnrollmentCa(deps.now());
  await deps.secrets.replace(name, ca, { 'tenant-id': tenantId });
  await deps.provisioning.recordSecretRefs(tenantId, deps.secrets.namespace, [
    { purpose: 'enrollment-ca', name },
  ]);
  return { ca, issued: true };
}

export interface EnrollmentTlsOutcome {
  ca: 'kept' | 'issued';
  certificate: 'kept' | 'issued';
  reason?: string;
  names: string[];
  /** The manager restarted onto the certificate (it ran with another, or an unknown one). */
  rolled: boolean;
}

type EnrollmentTlsDeps = EndpointDeps &
  Pick<OrchestratorDeps, 'secrets' | 'namespaces' | 'now' | 'logger'>;

/**
 * Keeps the manager's enrollment certificate in line with its CA and with the addresses agents
 * use: issued at provisioning (before the package is installed), re-issued on upgrade,
 * configuration change and every reconcile pass when it expires within 30 days, no longer chains
 * to the CA, or names other addresses (a load balancer assigned after the install, a hostname
 * changed). A manager started with another certificate rolls; one created after the certificate
 * was written (a fresh install) does not.
 */
export async function ensureEnrollmentTls(
  deps: EnrollmentTlsDeps,
  tenant: Pick<Tenant, 'id' | 'slug' | 'edge_port_pair'>,
): Promise<EnrollmentTlsOutcome> {
  const namespace = namespaceOf(tenant.slug);
  const { ca, issued: caIssued } = await ensureEnrollmentCa(deps, tenant.id);
  const endpoint = await managerEndpoint(deps, tenant);
  const names = enrollmentNames(endpoint, namespace, deps.edgeProxy.clusterDomain);
  let data = await deps.namespaces.readSecret(namespace, ENROLLMENT_TLS_SECRET.name);
  const reason = enrollmentTlsProblem(data, ca, names, deps.now());
  if (reason !== undefined || !data) {
    data = await issueEnrollmentTls(ca, names, deps.now());
    await deps.namespaces.putSecret(namespace, ENROLLMENT_TLS_SECRET.name, data, {
      'managed-by': 'svc',
      'tenant-id': tenant.id,
    });
    await deps.provisioning.recordSecretRefs(tenant.id, namespace, [ENROLLMENT_TLS_SECRET]);
    deps.logger.info(
      { tenant_id: tenant.id, namespace, reason, names },
      'issued the enrollment certificate',
    );
  }
  const revision = enrollmentTlsRevision(data);
  const manager = await readManager(deps, namespace);
  const current = manager?.spec?.template?.metadata?.annotations?.[ENROLLMENT_TLS_REVISION];
  const rolled =
    manager !== undefined &&
    current !== revision &&
    startedBefore(manager, current, data) &&
    (await annotateManager(deps, namespace, { [ENROLLMENT_TLS_REVISION]: revision })) === 'started';
  return {
    ca: caIssued ? 'issued' : 'kept',
    certificate: reason === undefined ? 'kept' : 'issued',
    ...(reason === undefined ? {} : { reason }),
    names,
    rolled,
  };
}

/** The reconciler's enrollment pass: ensureEnrollmentTls, logged, never failing the pass. */
export async function renewEnrollmentTls(
  deps: EnrollmentTlsDeps,
  tenant: Pick<Tenant, 'id' | 'slug' | 'edge_port_pair'>,
): Promise<void> {
  try {
    const outcome = await ensureEnrollmentTls(deps, tenant);
    if (outcome.rolled)
      deps.logger.info(
        { tenant_id: tenant.id, names: outcome.names },
        'rolled the manager onto its enrollment certificate',
      );
  } catch (error) {
    deps.logger.warn(
      { err: error, tenant_id: tenant.id },
      'enrollment certificate renewal failed; retried on the next pass',
    );
  }
}

/** EnrollmentCluster (domains/enrollment) over the orchestrator's parts. */
export function enrollmentCluster(
  deps: EndpointDeps & Pick<OrchestratorDeps, 'secrets' | 'namespaces'>,
): EnrollmentCluster {
  return {
    endpoint: (tenant) => managerEndpoint(deps, tenant),
    async caPem(tenantId) {
      const ca = await deps.secrets.read(installSecretNames(tenantId).enrollmentCa);
      return ca?.[ENROLLMENT_CA_KEYS.ca] || undefined;
    },
    async writePassword(tenant, password) {
      const namespace = namespaceOf(tenant.slug);
      const components = await deps.namespaces.readSecret(namespace, COMPONENT_BOOTSTRAP_SECRET);
      if (!components)
        throw new EnrollmentNotReadyError(
          tenant.id,
          `${namespace}/${COMPONENT_BOOTSTRAP_SECRET}, the manager's copy of the password, is missing`,
        );
      await deps.namespaces.putSecret(
        namespace,
        COMPONENT_BOOTSTRAP_SECRET,
        { ...components, [ENROLLMENT_PASSWORD_KEY]: password },
        { 'managed-by': 'svc', 'tenant-id': tenant.id },
      );
    },
    rollManager: (tenant, version) =>
      annotateManager(deps, namespaceOf(tenant.slug), {
        [ENROLLMENT_SECRET_VERSION]: String(version),
      }),
  };
}
