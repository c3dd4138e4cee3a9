import { randomUUID } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { MiddlewareHandler } from 'hono';
import { withRequestId } from '../log/index.ts';

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function trustedProxies(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [address = '', prefix = ''] = cidr.split('/');
    list.addSubnet(address, Number(prefix), isIP(address) === 6 ? 'ipv6' : 'ipv4');
  }
  return list;
}

export function peerAddress(c: Parameters<MiddlewareHandler>[0]): string | undefined {
  try {
    return getConnInfo(c).remote.address;
  } catch {
    return undefined;
  }
}

export function isTrusted(list: BlockList, address: string | undefined): boolean {
  if (!address) return false;
  const family = isIP(address);
  if (family === 0) return false;
  return list.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

/**
 * Gives every request an id: the proxy's X-Request-Id when the peer is a trusted proxy and
 * the value is well-formed, otherwise a fresh uuid. Echoed on the response; every log line
 * and audit row written while handling the request carries it.
 */
export function requestId(proxies: BlockList): MiddlewareHandler {
  return async (c, next) => {
    const offered = c.req.header('x-request-id');
    const id =
      offered && SAFE_ID.test(offered) && isTrusted(proxies, peerAddress(c))
        ? offered
        : randomUUID();
    c.set('requestId', id);
    c.header('X-Request-Id', id);
    await withRequestId(id, next);
  };
}
