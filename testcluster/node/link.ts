// Two real nodes joined by a wire: a veth pair whose ends live in the two nodes' network
// namespaces (never the machine's own), with a route on each side to the other node's Pod /24.
// Pod-to-Pod traffic and Service traffic that kube-proxy DNATs to the other node's Pod cross it
// with the Pods' own addresses, so each node's kube-router judges them by Pod IP as on a real
// cluster. Everything lives on the veth (its addresses and routes), so deleting either end, or
// either namespace, undoes all of it (docs/test-cluster.md "Two nodes and a drain").
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What a link needs of a real node (testcluster/node/real-node.ts RealNode has it). */
export interface LinkableNode {
  readonly name: string;
  readonly netnsName: string;
  readonly netnsPath: string;
  /** The node's Pod /24, `10.244.<n>.0/24`; its gateway `.1` is on the node's bridge. */
  readonly podSubnet: string;
}

export interface NodeLink {
  /** The veth's name in each node's namespace, in the order the nodes were given. */
  readonly devices: readonly [string, string];
  /** Each node's address on the link: its own Pod gateway, unique per node as its /24 is. */
  readonly addresses: readonly [string, string];
  /** Deletes the pair (one end takes the other with it); checks both namespaces are clean. */
  disconnect(): Promise<void>;
}

/** What one node's namespace holds of a link: the device, and routes to the peer's Pods. */
export interface LinkTrace {
  readonly device: boolean;
  readonly routes: readonly string[];
}

/**
 * Joins `a` and `b`. Each node is known across the link by its Pod gateway address
 * (`10.244.<n>.1`), put as a /32 on its end of the veth too:
 *
 * - a Pod's packets to the other node's Pods leave with the Pod's own source address (the CNI
 *   bridge does no masquerading, configs.ts), so the peer's kube-router matches them against
 *   its policies' Pod selectors;
 * - the node's own processes, and kube-proxy's MASQUERADE (which takes the outgoing device's
 *   address), use the gateway address and never the node address 10.200.0.1, which every real
 *   node has: the peer would take a reply to 10.200.0.1 for itself.
 *
 * The route's next hop is the peer's gateway address, on-link; the peer answers ARP for it
 * because the address is its own (on its bridge and its veth).
 */
export async function connectRealNodes(a: LinkableNode, b: LinkableNode): Promise<NodeLink> {
  if (a.netnsPath === b.netnsPath) throw new Error(`link: ${a.name} cannot link to itself`);
  if (a.podSubnet === b.podSubnet) {
    throw new Error(`link: ${a.name} and ${b.name} share Pod subnet ${a.podSubnet}`);
  }
  const id = randomBytes(3).toString('hex');
  // Interface names: at most 15 characters.
  const devices = [`svl${id}a`, `svl${id}b`] as const;
  const gateways = [gatewayOf(a.podSubnet), gatewayOf(b.podSubnet)] as const;
  const ip = (node: LinkableNode, ...args: string[]) =>
    run('nsenter', [`--net=${node.netnsPath}`, 'ip', ...args]);

  const disconnect = async () => {
    // Deleting either end deletes the pair, its addresses and the routes through it.
    for (const [node, device] of [
      [a, devices[0]],
      [b, devices[1]],
    ] as const) {
      if ((await linkTrace(node, device)).device) {
        await ip(node, 'link', 'delete', device).catch(() => undefined);
      }
    }
    const left: string[] = [];
    for (const [node, device, peer] of [
      [a, devices[0], b],
      [b, devices[1], a],
    ] as const) {
      const trace = await linkTrace(node, device, peer.podSubnet);
      if (trace.device || trace.routes.length > 0) {
        left.push(`${node.name}: ${trace.device ? device : ''} ${trace.routes.join('; ')}`);
      }
    }
    if (left.length > 0) throw new Error(`link: still there after disconnect: ${left.join(', ')}`);
  };

  try {
    // Made inside a's namespace with its peer placed straight into b's: the pair never exists
    // in the machine's own namespace.
    await ip(
      a,
      ...['link', 'add', devices[0], 'type', 'veth'],
      ...['peer', 'name', devices[1], 'netns', b.netnsName],
    );
    for (const [node, device, own, peer] of [
      [a, devices[0], gateways[0], b],
      [b, devices[1], gateways[1], a],
    ] as const) {
      await ip(node, 'addr', 'add', `${own}/32`, 'dev', device);
      await ip(node, 'link', 'set', device, 'up');
      await ip(
        node,
        ...['route', 'add', peer.podSubnet, 'via', gatewayOf(peer.podSubnet)],
        ...['dev', device, 'onlink', 'src', own],
      );
    }
  } catch (error) {
    await disconnect().catch(() => undefined);
    throw error;
  }
  return { devices, addresses: gateways, disconnect };
}

/**
 * What `node`'s namespace holds of a link: whether `device` exists, and its routes to
 * `peerSubnet` (any device). A namespace that is gone holds nothing.
 */
export async function linkTrace(
  node: LinkableNode,
  device: string,
  peerSubnet?: string,
): Promise<LinkTrace> {
  const inNs = (...args: string[]) => run('nsenter', [`--net=${node.netnsPath}`, 'ip', ...args]);
  let links: string;
  try {
    links = (await inNs('-o', 'link', 'show')).stdout;
  } catch (error) {
    if (/No such file|ENOENT/.test(String((error as { stderr?: string }).stderr ?? error))) {
      return { device: false, routes: [] };
    }
    throw error;
  }
  // "12: svl…a@if11: <…>": the name ends at '@' for a veth.
  const present = links
    .split('\n')
    .some((line) => line.split(':')[1]?.trim().split('@')[0] === device);
  const routes = peerSubnet
    ? (await inNs('-o', 'route', 'show', peerSubnet)).stdout.split('\n').filter(Boolean)
    : [];
  return { device: present, routes };
}

/** `10.244.7.0/24` → `10.244.7.1` (the CNI bridge's gateway, configs.ts podNetwork). */
function gatewayOf(subnet: string): string {
  const match = /^(\d+\.\d+\.\d+)\.0\/24$/.exec(subnet);
  if (!match) throw new Error(`link: ${subnet} is not a /24`);
  return `${match[1]}.1`;
}
