/**
 * What a set of Kubernetes NetworkPolicies allows (networking.k8s.io/v1 semantics), for tests
 * that must prove flows of rendered manifests: the test cluster's kwok nodes run no CNI, so
 * nothing there enforces a policy. Rules, as the Kubernetes documentation states them:
 * - a pod is isolated in a direction once any policy selecting it lists that policy type; an
 *   isolated pod admits only what the union of those policies' rules admits;
 * - a connection needs the source's egress and the destination's ingress to allow it;
 * - a rule without peers (`to`/`from` absent or empty) matches every peer, a rule without
 *   ports every port; a peer with only a podSelector means pods of the policy's namespace;
 * - a label selector's requirements are ANDed; NotIn and DoesNotExist match a missing key.
 * Only what the charts use is modelled: numeric ports and label selectors (no ipBlock, no
 * named ports, no endPort), which `assertModelled` checks so an unmodelled field fails loudly.
 */

export interface Endpoint {
  /** `undefined`: outside the cluster (an agent, an LLM provider). */
  namespace: string | undefined;
  labels: Record<string, string>;
}

export type Protocol = 'TCP' | 'UDP';

interface Requirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}
interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Requirement[];
}
interface Peer {
  podSelector?: Selector;
  namespaceSelector?: Selector;
  ipBlock?: unknown;
}
interface Port {
  protocol?: Protocol;
  port?: number | string;
  endPort?: number;
}
interface Rule {
  from?: Peer[];
  to?: Peer[];
  ports?: Port[];
}
export interface NetworkPolicy {
  kind: 'NetworkPolicy';
  metadata: { name: string; namespace: string };
  spec: {
    podSelector: Selector;
    policyTypes: Array<'Ingress' | 'Egress'>;
    ingress?: Rule[];
    egress?: Rule[];
  };
}

export function selects(selector: Selector, labels: Record<string, string>): boolean {
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return (
    byLabel &&
    (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
      const has = Object.hasOwn(labels, key);
      if (operator === 'In') return has && values.includes(labels[key] as string);
      if (operator === 'NotIn') return !has || !values.includes(labels[key] as string);
      if (operator === 'Exists') return has;
      return !has;
    })
  );
}

/** The labels every namespace carries (the NamespaceDefaultLabelName admission). */
const namespaceLabels = (name: string) => ({ 'kubernetes.io/metadata.name': name });

function peerMatches(peer: Peer, policyNamespace: string, other: Endpoint): boolean {
  if (other.namespace === undefined) return false;
  const namespaceOk = peer.namespaceSelector
    ? selects(peer.namespaceSelector, namespaceLabels(other.namespace))
    : other.namespace === policyNamespace;
  return namespaceOk && (!peer.podSelector || selects(peer.podSelector, other.labels));
}

function portMatches(ports: Port[] | undefined, port: number, protocol: Protocol): boolean {
  if (!ports || ports.length === 0) return true;
  return ports.some((p) => (p.protocol ?? 'TCP') === protocol && (p.port ?? port) === port);
}

/** The policies isolating `pod` in `direction` (empty: the pod is not isolated that way). */
export function isolating(
  policies: NetworkPolicy[],
  pod: Endpoint,
  direction: 'Ingress' | 'Egress',
): NetworkPolicy[] {
  return policies.filter(
    (p) =>
      p.metadata.namespace === pod.namespace &&
      p.spec.policyTypes.includes(direction) &&
      selects(p.spec.podSelector, pod.labels),
  );
}

function admits(
  policies: NetworkPolicy[],
  pod: Endpoint,
  direction: 'Ingress' | 'Egress',
  other: Endpoint,
  port: number,
  protocol: Protocol,
): boolean {
  const applying = isolating(policies, pod, direction);
  if (applying.length === 0) return true;
  return applying.some((p) =>
    ((direction === 'Ingress' ? p.spec.ingress : p.spec.egress) ?? []).some((rule) => {
      const peers = (direction === 'Ingress' ? rule.from : rule.to) ?? [];
      return (
        portMatches(rule.ports, port, protocol) &&
        (peers.length === 0 || peers.some((peer) => peerMatches(peer, p.metadata.namespace, other)))
      );
    }),
  );
}

/** Whether `from` may open a connection to `to` on `port`: both ends' policies must agree. */
export function connects(
  policies: NetworkPolicy[],
  from: Endpoint,
  to: Endpoint,
  port: number,
  protocol: Protocol = 'TCP',
): boolean {
  const out = from.namespace === undefined || admits(policies, from, 'Egress', to, port, protocol);
  return (
    out && (to.namespace === undefined || admits(policies, to, 'Ingress', from, port, protocol))
  );
}

/** Throws when a policy uses a field this model does not evaluate. */
export function assertModelled(policies: NetworkPolicy[]): void {
  for (const p of policies) {
    for (const rule of [...(p.spec.ingress ?? []), ...(p.spec.egress ?? [])]) {
      for (const peer of [...(rule.from ?? []), ...(rule.to ?? [])]) {
        if (peer.ipBlock) throw new Error(`${p.metadata.name}: ipBlock is not modelled`);
      }
      for (const port of rule.ports ?? []) {
        if (typeof port.port !== 'number' || port.endPort !== undefined)
          throw new Error(`${p.metadata.name}: only numeric single ports are modelled`);
      }
    }
  }
}
