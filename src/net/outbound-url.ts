import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import tls from 'node:tls';

/**
 * The one rule for URLs svc or a tenant's data plane calls out to (tenant LLM base URL, the
 * external analyzer, integration endpoints): never a target inside the cluster, the node or the
 * cloud's metadata service, unless the install allows it explicitly (SVC_OUTBOUND_ALLOW_CIDRS,
 * SVC_OUTBOUND_ALLOW_HOSTS). `checkOutboundUrl` is the configuration-time check;
 * `safeFetch` repeats it at request time on the resolved addresses and on every redirect.
 */
export interface OutboundPolicy {
  /** CIDRs whose addresses are allowed although internal (e.g. an in-house LLM gateway). */
  allowCidrs: readonly string[];
  /** Host names allowed whatever they resolve to: `llm.corp.example` or `*.corp.example`. */
  allowHosts: readonly string[];
  /** PEM certificates trusted for HTTPS in addition to the system roots. */
  ca?: string | undefined;
}

export const STRICT_OUTBOUND: OutboundPolicy = { allowCidrs: [], allowHosts: [] };

export class OutboundUrlError extends Error {
  override name = 'OutboundUrlError';
}

/** Special-purpose ranges (RFC 6890 and successors): nothing an outbound call should reach. */
const V4_INTERNAL: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata 169.254.169.254
  ['172.16.0.0', 12], // RFC 1918
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // RFC 1918
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];
/**
 * IPv4-mapped addresses (::ffff:a.b.c.d) need no entry: BlockList checks them against the IPv4
 * rules. NAT64 and 6to4 addresses embed an IPv4 address, checked by embeddedIpv4 below.
 */
const V6_INTERNAL: Array<[string, number]> = [
  ['::', 96], // unspecified, loopback, deprecated IPv4-compatible
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001::', 32], // Teredo (embeds an obfuscated IPv4 address)
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local (fd00:ec2::254 is AWS metadata)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];
const INTERNAL = new BlockList();
for (const [net, bits] of V4_INTERNAL) INTERNAL.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of V6_INTERNAL) INTERNAL.addSubnet(net, bits, 'ipv6');

/** Suffixes that only resolve inside a cluster, a node or a private network. */
const INTERNAL_SUFFIXES = [
  '.localhost',
  '.local',
  '.localdomain',
  '.internal',
  '.svc',
  '.home.arpa',
];

function allowList(policy: OutboundPolicy): BlockList {
  const list = new BlockList();
  for (const cidr of policy.allowCidrs) {
    const [net = '', bits = ''] = cidr.split('/');
    list.addSubnet(net, Number(bits), isIP(net) === 6 ? 'ipv6' : 'ipv4');
  }
  return list;
}

/** The 16 bytes of an IPv6 address (isIP has accepted it). */
function ipv6Bytes(address: string): number[] {
  let text = address;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = [...h, ...Array(8 - h.length - t.length).fill(0), ...t] as number[];
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

/** The IPv4 address a NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address carries. */
function embeddedIpv4(address: string): string | undefined {
  const b = ipv6Bytes(address);
  const prefix = (bytes: number[]) => bytes.every((v, i) => b[i] === v);
  if (prefix([0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0])) return b.slice(12).join('.');
  if (prefix([0x20, 0x02])) return b.slice(2, 6).join('.');
  return undefined;
}

/** True for loopback, link-local, private, metadata and other special-purpose addresses. */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true; // not an address at all: refuse rather than guess
  if (family === 4) return INTERNAL.check(address, 'ipv4');
  const embedded = embeddedIpv4(address);
  return embedded === undefined
    ? INTERNAL.check(address, 'ipv6')
    : INTERNAL.check(embedded, 'ipv4');
}

/** Why a host name is internal, or undefined. `name` is lower-case, without a trailing dot. */
function internalName(name: string): string | undefined {
  if (!name.includes('.')) return 'a single-label host name resolves inside the cluster or node';
  if (name.startsWith('kubernetes')) return 'the Kubernetes API is not an outbound target';
  if (INTERNAL_SUFFIXES.some((s) => name.endsWith(s))) return 'a cluster- or node-internal name';
  // <service>.<namespace>.svc.<cluster domain> for a cluster domain other than cluster.local
  if (name.split('.').indexOf('svc') >= 2) return 'a Kubernetes service name';
  return undefined;
}

function hostAllowed(name: string, policy: OutboundPolicy): boolean {
  return policy.allowHosts.some((h) =>
    h.startsWith('*.') ? name.endsWith(h.slice(1)) && name.length > h.length - 1 : name === h,
  );
}

/** The address a URL hostname denotes, or undefined for a name (brackets of IPv6 removed). */
function addressOf(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) === 0 ? undefined : bare;
}

/**
 * Parses and checks an outbound URL: syntax, scheme, port, no credentials in it, and a host
 * that is neither an internal name nor an internal address. The WHATWG parser has already
 * normalised decimal, octal and hex IPv4 forms (`http://2130706433/`, `0x7f.1`) and IPv6
 * literals, so the check sees the address the client would connect to. Throws OutboundUrlError.
 */
export function checkOutboundUrl(
  text: string,
  policy: OutboundPolicy,
  schemes: readonly string[] = ['https:', 'http:'],
): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new OutboundUrlError('not a valid URL (syntax, host or port 1-65535)');
  }
  if (!schemes.includes(url.protocol))
    throw new OutboundUrlError(`scheme must be ${schemes.map((s) => s.slice(0, -1)).join(' or ')}`);
  if (url.port === '0') throw new OutboundUrlError('port must be 1-65535');
  if (url.username || url.password)
    throw new OutboundUrlError('credentials do not belong in the URL');
  const name = url.hostname.replace(/\.$/, '');
  if (name === '') throw new OutboundUrlError('the URL has no host');
  const address = addressOf(name);
  if (address !== undefined) {
    if (
      isInternalAddress(address) &&
      !allowList(policy).check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4')
    )
      throw new OutboundUrlError(
        `${address} is a loopback, link-local, private or otherwise internal address`,
      );
    return url;
  }
  const why = internalName(name);
  if (why && !hostAllowed(name, policy)) throw new OutboundUrlError(`${name}: ${why}`);
  return url;
}

export type Resolve = (host: string) => Promise<Array<{ address: string; family: number }>>;

const systemResolve: Resolve = (host) => dnsLookup(host, { all: true, verbatim: true });

/**
 * A connect-time lookup that resolves once, refuses when ANY address is internal (a name that
 * resolves to a public and a private address is how DNS rebinding slips through), and hands the
 * socket exactly the addresses it checked.
 */
function guardedLookup(policy: OutboundPolicy, resolve: Resolve): LookupFunction {
  const allowed = allowList(policy);
  return (hostname, options, callback) => {
    const name = hostname.replace(/\.$/, '').toLowerCase();
    resolve(name).then(
      (addresses) => {
        const trusted = hostAllowed(name, policy);
        const bad = addresses.find(
          (a) =>
            isInternalAddress(a.address) &&
            !allowed.check(a.address, a.family === 6 ? 'ipv6' : 'ipv4'),
        );
        if (addresses.length === 0 || (bad && !trusted)) {
          callback(
            new OutboundUrlError(
              `${name} resolves to internal address ${bad?.address ?? '(none)'}`,
            ),
            '',
            4,
          );
        } else if (options.all) {
          (callback as unknown as (e: null, a: typeof addresses) => void)(null, addresses);
        } else {
          callback(null, addresses[0]?.address ?? '', addresses[0]?.family ?? 4);
        }
      },
      (error: Error) => callback(error, '', 4),
    );
  };
}

export interface SafeFetchInit {
  method?: string;
  headers?: Record<string, string>;
  /** Replayable on a 307/308 redirect, so no streams. */
  body?: string | Uint8Array;
  signal?: AbortSignal;
  /** Default 5. */
  maxRedirects?: number;
  /** Name resolution; default the system resolver. */
  resolve?: Resolve;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

function once(
  url: URL,
  init: SafeFetchInit,
  method: string,
  body: string | Uint8Array | undefined,
  headers: Record<string, string>,
  lookup: LookupFunction,
  ca: string | undefined,
): Promise<http.IncomingMessage> {
  const secure = url.protocol === 'https:';
  const client = secure ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      url,
      {
        method,
        headers,
        lookup,
        ...(init.signal ? { signal: init.signal } : {}),
        // Extra roots add to the system's, never replace them.
        ...(secure && ca ? { ca: [...tls.rootCertificates, ca] } : {}),
      },
      resolve,
    );
    req.on('error', reject);
    req.end(body);
  });
}

function toResponse(res: http.IncomingMessage): Response {
  const headers = new Headers();
  for (const [k, v] of Object.entries(res.headers)) {
    for (const value of Array.isArray(v) ? v : v === undefined ? [] : [v]) headers.append(k, value);
  }
  const status = res.statusCode ?? 502;
  if (NULL_BODY.has(status)) res.resume();
  return new Response(NULL_BODY.has(status) ? null : (Readable.toWeb(res) as ReadableStream), {
    status,
    statusText: res.statusMessage ?? '',
    headers,
  });
}

/**
 * `fetch` for outbound calls on behalf of a tenant (the LLM pipeline): the URL is checked, the
 * name resolved and every address checked at connect time, redirects are followed by hand
 * (at most `maxRedirects`) and each hop is checked the same way; an Authorization header is
 * not carried to another origin. Throws OutboundUrlError when a target is refused.
 */
export async function safeFetch(
  input: string,
  init: SafeFetchInit = {},
  policy: OutboundPolicy = STRICT_OUTBOUND,
): Promise<Response> {
  const lookup = guardedLookup(policy, init.resolve ?? systemResolve);
  let url = checkOutboundUrl(input, policy);
  let method = (init.method ?? 'GET').toUpperCase();
  let body = init.body;
  let headers = { ...init.headers };
  for (let hop = 0; ; hop++) {
    const res = await once(url, init, method, body, headers, lookup, policy.ca);
    const location = res.headers.location;
    if (!REDIRECTS.has(res.statusCode ?? 0) || location === undefined) return toResponse(res);
    res.resume();
    if (hop >= (init.maxRedirects ?? 5)) throw new OutboundUrlError('too many redirects');
    const next = checkOutboundUrl(new URL(location, url).href, policy);
    if (next.origin !== url.origin) {
      headers = Object.fromEntries(
        Object.entries(headers).filter(([k]) => k.toLowerCase() !== 'authorization'),
      );
    }
    if (
      res.statusCode === 303 ||
      (res.statusCode !== 307 && res.statusCode !== 308 && method === 'POST')
    ) {
      method = 'GET';
      body = undefined;
    }
    url = next;
  }
}
