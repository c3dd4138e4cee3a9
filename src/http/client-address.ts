import { type BlockList, isIP, isIPv6 } from 'node:net';
import type { Context } from 'hono';
import { isTrusted, peerAddress } from './request-id.ts';

/**
 * The address a request came from: the TCP peer, or, when the peer is a trusted proxy, the
 * nearest X-Forwarded-For hop that is not itself a trusted proxy. Used for rate limiting and
 * audit, never for authorization.
 */
export function clientAddress(c: Context, proxies: BlockList): string | null {
  const peer = peerAddress(c) ?? null;
  if (!peer || !isTrusted(proxies, peer)) return peer;
  const hops = (c.req.header('x-forwarded-for') ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i];
    // A hop that is no address (`junk`, `1.2.3.4:80`) must not reach the inet column: the
    // proxy that passed it on is then the nearest address known.
    if (!hop || isIP(hop) === 0) return hops[i + 1] ?? peer;
    if (!isTrusted(proxies, hop)) return hop;
  }
  return peer;
}

/**
 * What an address-based limit counts: an IPv4 address (also when written IPv4-mapped), or the
 * /64 network of an IPv6 address. A single host is routinely given a whole /64, so counting
 * IPv6 addresses one by one would let one machine pose as 2^64 clients.
 */
export function addressBlock(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)?.[1];
  if (mapped) return mapped;
  const bare = address.split('%')[0] ?? '';
  if (!isIPv6(bare)) return address;
  const [head, tail] = bare.split('::');
  // An embedded IPv4 address is the last two groups, so it never reaches the first four.
  const groups = (part: string | undefined) =>
    part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : [];
  const front = groups(head);
  const back = groups(tail);
  const zeros = tail === undefined ? 0 : 8 - front.length - back.length;
  const all = [...front, ...Array<string>(zeros).fill('0'), ...back];
  return `${all
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
