import type { BlockList } from 'node:net';
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
    if (hop && !isTrusted(proxies, hop)) return hop;
  }
  return peer;
}
