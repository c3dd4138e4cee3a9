import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
  type V1Service,
  type V1ServicePort,
} from '@kubernetes/client-node';
import type { OrchestratorDeps } from './context.ts';
import { edgePorts } from './edge-ports.ts';
import {
  configSha256,
  EDGE_PROXY_HEALTH_PORT,
  type EdgeTenant,
  renderEdgeProxyConfig,
} from './edge-proxy-config.ts';
import { namespaceOf } from './render.ts';

/**
 * Rolls the edge proxy's configuration out (spec §2.9 `monitorIngress.mode=edge-proxy`): the
 * system chart creates the ConfigMap, Service and Deployment `svc-edge-proxy` in the install
 * namespace; svc owns three fields of them and nothing else:
 * - ConfigMap `data["haproxy.cfg"]`, rendered from the tenants holding a port pair;
 * - the Service's tenant ports (named `ev-<port>` / `en-<port>`), one per port of each pair;
 *   any other port (the chart's `health`) is left as it is;
 * - the Deployment's pod-template annotation `svc.io/config-sha256`, the config's sha256, so a
 *   changed config rolls the pods and haproxy starts on it.
 * Each is written only when it differs, so the same tenant set writes nothing and restarts
 * nothing. The chart renders these three fields from what it finds in the cluster (helm
 * `lookup`), so an upgrade of the system chart does not undo svc's writes.
 */

/** What keeping the proxy in line needs: the tenants holding a pair, and the cluster. */
export type EdgeProxyDeps = Pick<
  OrchestratorDeps,
  'provisioning' | 'edgePortBase' | 'edgeProxy' | 'install' | 'kubeConfig' | 'logger'
>;

export const EDGE_PROXY_NAME = 'svc-edge-proxy';
export const EDGE_PROXY_CONFIG_KEY = 'haproxy.cfg';
export const CONFIG_SHA_ANNOTATION = 'svc.io/config-sha256';

const TENANT_PORT_NAME = /^e[vn]-[0-9]+$/;
const CONFLICT = 409;
const ATTEMPTS = 5;

export interface EdgeProxyOutcome {
  tenants: number;
  sha256: string;
  /** `written`: the cluster held something else (a new tenant set, or a hand edit). */
  config: 'written' | 'unchanged';
  service: 'written' | 'unchanged';
  rollout: 'started' | 'unchanged';
}

/** The edge tenants as the renderer takes them: each one's monitor Service by its DNS name. */
async function edgeTenants(deps: EdgeProxyDeps): Promise<EdgeTenant[]> {
  const rows = await deps.provisioning.edgeProxyTenants();
  return rows.map((row) => {
    const namespace = namespaceOf(row.slug);
    return {
      slug: row.slug,
      namespace,
      host: `monitor.${namespace}.svc.${deps.edgeProxy.clusterDomain}`,
      ports: edgePorts(deps.edgePortBase, row.edge_port_pair),
    };
  });
}

function tenantPorts(tenants: readonly EdgeTenant[]): V1ServicePort[] {
  return tenants
    .flatMap((t) => [
      { name: `ev-${t.ports.events}`, port: t.ports.events },
      { name: `en-${t.ports.enrollment}`, port: t.ports.enrollment },
    ])
    .sort((a, b) => a.port - b.port)
    .map((p) => ({ ...p, protocol: 'TCP', targetPort: p.port }));
}

/** The tenant ports as compared: what svc sets, not what the API server adds (nodePort). */
function portKey(ports: readonly V1ServicePort[]): string {
  return JSON.stringify(
    ports
      .filter((p) => TENANT_PORT_NAME.test(p.name ?? ''))
      .map((p) => [p.name, p.port, p.protocol ?? 'TCP', p.targetPort])
      .sort((a, b) => Number(a[1]) - Number(b[1])),
  );
}

function missing(error: unknown, kind: string, namespace: string): unknown {
  if (error instanceof ApiException && error.code === 404) {
    return new Error(
      `${kind} ${EDGE_PROXY_NAME} is missing in ${namespace}: the system chart creates it ` +
        'with edgeProxy.enabled=true (SVC_EDGE_PROXY=on needs it)',
    );
  }
  return error;
}

/**
 * One attempt. The ConfigMap and the Service are read before the tenants, and written with
 * the resourceVersion read: a writer that saw an older tenant set loses with 409 to the one
 * that wrote after it, and tries again with the newer set.
 */
async function attempt(deps: EdgeProxyDeps): Promise<EdgeProxyOutcome> {
  const namespace = deps.install.namespace;
  const core = deps.kubeConfig.makeApiClient(CoreV1Api);
  const apps = deps.kubeConfig.makeApiClient(AppsV1Api);
  const name = EDGE_PROXY_NAME;
  const configMap: V1ConfigMap = await core
    .readNamespacedConfigMap({ name, namespace })
    .catch((error) => Promise.reject(missing(error, 'ConfigMap', namespace)));
  const service: V1Service = await core
    .readNamespacedService({ name, namespace })
    .catch((error) => Promise.reject(missing(error, 'Service', namespace)));
  const tenants = await edgeTenants(deps);
  const config = renderEdgeProxyConfig({ tenants, healthPort: EDGE_PROXY_HEALTH_PORT });
  const sha256 = configSha256(config);
  const outcome: EdgeProxyOutcome = {
    tenants: tenants.length,
    sha256,
    config: 'unchanged',
    service: 'unchanged',
    rollout: 'unchanged',
  };
  if (configMap.data?.[EDGE_PROXY_CONFIG_KEY] !== config) {
    configMap.data = { ...configMap.data, [EDGE_PROXY_CONFIG_KEY]: config };
    await core.replaceNamespacedConfigMap({ name, namespace, body: configMap });
    outcome.config = 'written';
  }
  const wanted = tenantPorts(tenants);
  const live = service.spec?.ports ?? [];
  if (portKey(live) !== portKey(wanted) && service.spec) {
    service.spec.ports = [...live.filter((p) => !TENANT_PORT_NAME.test(p.name ?? '')), ...wanted];
    await core.replaceNamespacedService({ name, namespace, body: service });
    outcome.service = 'written';
  }
  const deployment = await apps
    .readNamespacedDeployment({ name, namespace })
    .catch((error) => Promise.reject(missing(error, 'Deployment', namespace)));
  if (deployment.spec?.template.metadata?.annotations?.[CONFIG_SHA_ANNOTATION] !== sha256) {
    await apps.patchNamespacedDeployment(
      {
        name,
        namespace,
        body: {
          spec: { template: { metadata: { annotations: { [CONFIG_SHA_ANNOTATION]: sha256 } } } },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    outcome.rollout = 'started';
  }
  return outcome;
}

async function syncNow(deps: EdgeProxyDeps): Promise<EdgeProxyOutcome> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(deps);
    } catch (error) {
      if (!(error instanceof ApiException && error.code === CONFLICT) || n >= ATTEMPTS) throw error;
    }
  }
}

/** Syncs of one install namespace run one after another in this process. */
const queues = new Map<string, Promise<unknown>>();

/**
 * Brings the proxy in line with svc's tenants; undefined when the edge proxy is off. Called
 * after a pair is allocated, after one is released, and on every reconcile pass (which is what
 * repairs a hand edit). Throws when the cluster refuses; the caller logs and the next pass
 * tries again.
 */
export function syncEdgeProxy(deps: EdgeProxyDeps): Promise<EdgeProxyOutcome | undefined> {
  if (!deps.edgeProxy.enabled) return Promise.resolve(undefined);
  const key = deps.install.namespace;
  const previous = queues.get(key) ?? Promise.resolve();
  const next = previous.catch(() => undefined).then(() => syncNow(deps));
  queues.set(key, next);
  void next
    .catch(() => undefined)
    .finally(() => {
      if (queues.get(key) === next) queues.delete(key);
    });
  return next;
}

/** For the lifecycle hooks: a failed sync is logged, never fails the tenant's own flow. */
export async function syncEdgeProxyAfter(
  deps: EdgeProxyDeps,
  reason: string,
  tenantId: string,
): Promise<void> {
  try {
    const outcome = await syncEdgeProxy(deps);
    if (outcome) deps.logger.info({ tenant_id: tenantId, reason, ...outcome }, 'edge proxy synced');
  } catch (error) {
    deps.logger.warn(
      { err: error, tenant_id: tenantId, reason },
      'edge proxy sync failed; the next reconcile pass retries',
    );
  }
}

/**
 * The reconcile pass's part (the reconciliation's rhythm: on start and every
 * SVC_RECONCILE_INTERVAL): anything written here differed from what svc rendered — a hand
 * edit, a lost write — and is reported as drift the pass repaired.
 */
export async function reconcileEdgeProxy(deps: EdgeProxyDeps): Promise<void> {
  const outcome = await syncEdgeProxy(deps);
  if (!outcome) return;
  const repaired = outcome.config === 'written' || outcome.service === 'written';
  if (repaired || outcome.rollout === 'started') {
    deps.logger.warn(
      { ...outcome, namespace: deps.install.namespace },
      'edge proxy drifted from the tenants svc knows; rewritten',
    );
  }
}
