import { createHash } from 'node:crypto';
import type { EdgePorts } from '../domains/provisioning/provisioning-types.ts';

/**
 * The haproxy.cfg of the edge proxy (spec §2.9 `monitorIngress.mode=edge-proxy`): one TCP
 * `listen` section per tenant port, forwarding to that tenant's monitor Service. A pure
 * function of the tenant set, sorted, so an unchanged set renders byte-identical text and svc
 * writes (and rolls the proxy) only on a real change.
 */

/** The monitor Service's ports in the tenant chart (charts/svc-tenant monitor-service.yaml). */
export const MONITOR_PORTS: Readonly<EdgePorts> = { events: 1514, enrollment: 1515 };

/** Serves `/healthz` for the probes (and the load balancer's health check). */
export const EDGE_PROXY_HEALTH_PORT = 8404;

export interface EdgeTenant {
  slug: string;
  /** The tenant namespace, `tenant-<slug>`. */
  namespace: string;
  /** Where the tenant's monitor Service answers: its cluster DNS name (tests: 127.0.0.1). */
  host: string;
  /** The pair the proxy listens on for this tenant. */
  ports: EdgePorts;
  /** The monitor's ports behind the pair; default MONITOR_PORTS. */
  targets?: EdgePorts;
}

export interface EdgeProxyConfigInput {
  tenants: readonly EdgeTenant[];
  healthPort?: number;
}

/** A value that would not stay inside its line of the config: refused, never escaped. */
export class EdgeProxyConfigError extends Error {
  override name = 'EdgeProxyConfigError';
}

// Only DNS labels and names reach the config: no space, quote, `#` or newline can pass, so a
// name cannot end its line or start another directive.
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const HOST =
  /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

function checkLabel(what: string, value: string): void {
  if (!DNS_LABEL.test(value))
    throw new EdgeProxyConfigError(`${what} is not a DNS label: ${JSON.stringify(value)}`);
}

function checkPort(what: string, value: number): void {
  if (!Number.isInteger(value) || value < 1 || value > 65_535)
    throw new EdgeProxyConfigError(`${what} is not a TCP port: ${JSON.stringify(value)}`);
}

function checkTenant(tenant: EdgeTenant): void {
  checkLabel('tenant slug', tenant.slug);
  checkLabel(`namespace of ${tenant.slug}`, tenant.namespace);
  if (!HOST.test(tenant.host))
    throw new EdgeProxyConfigError(
      `monitor host of ${tenant.slug} is not a DNS name: ${JSON.stringify(tenant.host)}`,
    );
  const targets = tenant.targets ?? MONITOR_PORTS;
  for (const channel of ['events', 'enrollment'] as const) {
    checkPort(`${channel} port of ${tenant.slug}`, tenant.ports[channel]);
    checkPort(`${channel} target port of ${tenant.slug}`, targets[channel]);
  }
}

/** Two sections binding one port would stop haproxy from starting: refuse the set instead. */
function checkDistinct(tenants: readonly EdgeTenant[], healthPort: number): void {
  const owner = new Map<number, string>([[healthPort, 'the health endpoint']]);
  const slugs = new Set<string>();
  for (const t of tenants) {
    if (slugs.has(t.slug)) throw new EdgeProxyConfigError(`tenant ${t.slug} appears twice`);
    slugs.add(t.slug);
    for (const port of [t.ports.events, t.ports.enrollment]) {
      const taken = owner.get(port);
      if (taken) throw new EdgeProxyConfigError(`port ${port} of ${t.slug} is already ${taken}'s`);
      owner.set(port, t.slug);
    }
  }
}

const HEADER = `# haproxy.cfg of svc's edge proxy (spec §2.9 monitorIngress.mode=edge-proxy).
# Rendered by svc from the tenants' edge port pairs (src/orchestrator/edge-proxy-config.ts) and
# written to ConfigMap svc-edge-proxy; svc replaces any hand edit on its next reconcile pass.
global
    log stdout format raw local0 info
    # No maxconn: haproxy derives it from the pod's file-descriptor limit.
    # A rollout replaces the pods: after the soft stop (SIGUSR1, the pod's preStop) open
    # connections get this long to end.
    hard-stop-after 30s

# Agents hold their connection to the manager open for hours: the client and server timeouts
# bound idle silence, not session length.
defaults
    mode tcp
    log global
    option tcplog
    option dontlognull
    timeout connect 5s
    timeout client 1h
    timeout server 1h
    timeout client-fin 30s
    timeout server-fin 30s
    # A tenant's Service may not exist yet (or any more): haproxy starts without its address and
    # the resolvers fill it in once cluster DNS knows the name.
    default-server init-addr none resolvers cluster

# Cluster DNS, read from the pod's resolv.conf.
resolvers cluster
    parse-resolv-conf
    resolve_retries 3
    timeout resolve 1s
    timeout retry 1s
    hold valid 10s
    hold nx 10s
    hold obsolete 60s
`;

function healthSection(port: number): string {
  return `
frontend health
    mode http
    bind :${port}
    timeout client 10s
    monitor-uri /healthz
    http-request deny deny_status 404
`;
}

function tenantSections(tenant: EdgeTenant): string {
  const targets = tenant.targets ?? MONITOR_PORTS;
  return (['events', 'enrollment'] as const)
    .map(
      (channel) => `
listen ${tenant.namespace}-${channel}
    bind :${tenant.ports[channel]}
    server monitor ${tenant.host}:${targets[channel]}
`,
    )
    .join('');
}

/** The whole config; throws EdgeProxyConfigError on any value that is not a name or port. */
export function renderEdgeProxyConfig(input: EdgeProxyConfigInput): string {
  const healthPort = input.healthPort ?? EDGE_PROXY_HEALTH_PORT;
  checkPort('health port', healthPort);
  for (const tenant of input.tenants) checkTenant(tenant);
  checkDistinct(input.tenants, healthPort);
  const sorted = [...input.tenants].sort((a, b) =>
    a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0,
  );
  return HEADER + healthSection(healthPort) + sorted.map(tenantSections).join('');
}

/** What the pod template's `svc.io/config-sha256` carries; the chart computes the same. */
export function configSha256(config: string): string {
  return createHash('sha256').update(config, 'utf8').digest('hex');
}
