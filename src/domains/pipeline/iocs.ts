import { BlockList, isIPv4, isIPv6 } from 'node:net';

/**
 * Indicators of compromise in Wazuh alerts, and the recognizers for the text shapes they take
 * (redaction reuses the address, email and hostname recognizers, so "what counts as an IP" is
 * decided once). Every recognizer is linear in its input: each pattern can only start where a
 * token starts (a lookbehind refuses the middle of a run), so a 64 KiB string without a match
 * costs one pass, not one pass per position.
 */

export type IocType = 'ip' | 'domain' | 'url' | 'hash' | 'email';

export interface Ioc {
  type: IocType;
  value: string;
  /**
   * A private, loopback, link-local, shared or multicast address, or a name under an internal
   * suffix (.local, .internal, …): kept for the analyst, never sent to an analyzer (no
   * reputation source knows it, and asking would leak the customer's internal names).
   */
  internal?: true;
}

/** One recognized token in a string: `text` is `source.slice(start, end)`. */
export interface TextMatch {
  start: number;
  end: number;
  text: string;
}

const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';
const IPV4 = new RegExp(`(?<![0-9.])${OCTET}(?:\\.${OCTET}){3}(?![0-9]|\\.[0-9])`, 'g');
/** A token of hex digits, dots and at least one colon; `isIPv6` decides (times like 13:45:01 fail). */
const IPV6_CANDIDATE = /(?<![\w:.])[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*/g;
const EMAIL =
  /(?<![\p{L}\p{N}._%+-])[\p{L}\p{N}._%+-]+@(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?\.)+\p{L}{2,63}(?![\p{L}\p{N}-])/gu;
const DOMAIN =
  /(?<![\p{L}\p{N}_.-])(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?\.){1,126}\p{L}{2,63}(?![\p{L}\p{N}_-]|\.[\p{L}\p{N}])/gu;
const URL_TOKEN = /(?<![\p{L}\p{N}])(?:https?|ftp):\/\/[^\s"'<>\\^`{|}]+/giu;
const HASH =
  /(?<![0-9A-Za-z_])(?:[0-9A-Fa-f]{64}|[0-9A-Fa-f]{40}|[0-9A-Fa-f]{32})(?![0-9A-Za-z_])/g;

/**
 * Two-label names count as domains only under these suffixes: `auth.log`, `item.php` and
 * `README.md` have the same shape as `example.com`, and a full TLD list would still take
 * `.sh`, `.py` or `.md` for countries.
 */
const COMMON_TLDS = new Set(
  (
    'com net org edu gov mil int io co info biz me app dev cloud online site xyz top ru cn de ' +
    'uk fr nl eu us ca au jp br in it es ch se no tk local lan internal corp home ' +
    'localdomain arpa'
  ).split(' '),
);
/** Last labels that name files more often than zones: `nginx.conf.bak` is not a host. */
const FILE_EXTENSIONS = new Set(
  (
    'log txt conf cfg ini bak old tmp swp pid lock sock gz bz xz zip tar tgz rpm deb jar war ' +
    'php py pl rb sh js ts json xml yml yaml html htm css exe dll so sys bat ps md pem crt ' +
    'key csr service socket timer db sqlite'
  ).split(' '),
);
/** Suffixes that never resolve on the internet (RFC 6762, RFC 8375, common practice). */
const INTERNAL_SUFFIXES = [
  '.local',
  '.internal',
  '.lan',
  '.corp',
  '.home',
  '.localdomain',
  '.home.arpa',
];

const INTERNAL_ADDRESSES = (() => {
  const list = new BlockList();
  for (const [net, prefix] of [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.168.0.0', 16],
    ['224.0.0.0', 3],
  ] as const)
    list.addSubnet(net, prefix, 'ipv4');
  for (const [net, prefix] of [
    ['::', 127],
    ['fc00::', 7],
    ['fe80::', 10],
    ['ff00::', 8],
  ] as const)
    list.addSubnet(net, prefix, 'ipv6');
  return list;
})();

function* matchesOf(re: RegExp, text: string): Generator<TextMatch> {
  for (const m of text.matchAll(re)) {
    if (m[0].length > 0) yield { start: m.index, end: m.index + m[0].length, text: m[0] };
  }
}

/** IPv4 and IPv6 addresses (an IPv6 token's trailing sentence dot is not part of it). */
export function findIps(text: string): TextMatch[] {
  const out = [...matchesOf(IPV4, text)];
  if (!text.includes(':')) return out;
  for (const m of matchesOf(IPV6_CANDIDATE, text)) {
    const token = m.text.replace(/\.+$/, '');
    if (isIPv6(token)) out.push({ start: m.start, end: m.start + token.length, text: token });
  }
  return out;
}

export function findEmails(text: string): TextMatch[] {
  return text.includes('@') ? [...matchesOf(EMAIL, text)] : [];
}

/**
 * Host names with a domain shape: three or more labels ending in a lower- or upper-case
 * alphabetic label that is not a file extension, or two labels under a COMMON_TLDS suffix.
 * Mixed-case last labels (`org.example.MyClass`) are class names, not hosts.
 */
export function findDomains(text: string): TextMatch[] {
  if (!text.includes('.')) return [];
  return [...matchesOf(DOMAIN, text)].filter((m) => isDomainShaped(m.text));
}

function isDomainShaped(name: string): boolean {
  const labels = name.split('.');
  const last = labels[labels.length - 1] ?? '';
  if (last !== last.toLowerCase() && last !== last.toUpperCase()) return false;
  const tld = last.toLowerCase();
  if (FILE_EXTENSIONS.has(tld)) return false;
  return labels.length >= 3 || COMMON_TLDS.has(tld);
}

/** http, https and ftp URLs; trailing sentence punctuation is not part of them. */
export function findUrls(text: string): TextMatch[] {
  if (!text.includes('://')) return [];
  return [...matchesOf(URL_TOKEN, text)].map((m) => {
    const url = m.text.replace(/[.,;:!?)\]}]+$/, '');
    return { start: m.start, end: m.start + url.length, text: url };
  });
}

/** MD5, SHA-1 and SHA-256 digests in hex: whole tokens of exactly 32, 40 or 64 hex digits. */
export function findHashes(text: string): TextMatch[] {
  return [...matchesOf(HASH, text)];
}

export function isInternalIp(ip: string): boolean {
  if (isIPv4(ip)) return INTERNAL_ADDRESSES.check(ip, 'ipv4');
  if (!isIPv6(ip)) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  return mapped ? INTERNAL_ADDRESSES.check(mapped, 'ipv4') : INTERNAL_ADDRESSES.check(ip, 'ipv6');
}

export function isInternalDomain(domain: string): boolean {
  const name = domain.toLowerCase();
  return name === 'localhost' || INTERNAL_SUFFIXES.some((suffix) => name.endsWith(suffix));
}

/**
 * The indicators of a set of alerts, each once (first seen first): from the structured fields
 * (`data.srcip`, `data.dstip`, an absolute `data.url`, `syscheck.md5_after/sha1_after/
 * sha256_after`) and from `full_log` (URLs with their host, emails, IP addresses, hashes,
 * domains). A token inside a URL or an email is not reported again on its own. `agent.ip` is
 * the monitored host itself, not an indicator. Domains, emails and hashes are lower-cased.
 */
export function extractIocs(alerts: readonly unknown[]): Ioc[] {
  const found = new Map<string, Ioc>();
  const add = (type: IocType, raw: string) => {
    const value = type === 'url' || type === 'ip' ? raw : raw.toLowerCase().replace(/\.$/, '');
    const key = `${type}:${type === 'ip' ? value.toLowerCase() : value}`;
    if (found.has(key)) return;
    const internal =
      type === 'ip' ? isInternalIp(value) : type === 'domain' && isInternalDomain(value);
    found.set(key, internal ? { type, value, internal: true } : { type, value });
  };
  for (const alert of alerts) {
    structuredIocs(alert, add);
    const log = field(alert, 'full_log');
    if (typeof log === 'string') textIocs(log, add);
  }
  return [...found.values()];
}

/** The indicators an analyzer may be asked about: internal ones stay inside svc. */
export function publicIocs(iocs: readonly Ioc[]): Ioc[] {
  return iocs.filter((ioc) => !ioc.internal);
}

type AddIoc = (type: IocType, value: string) => void;

function structuredIocs(alert: unknown, add: AddIoc): void {
  for (const path of ['data.srcip', 'data.dstip']) {
    const ip = field(alert, path);
    if (typeof ip === 'string' && (isIPv4(ip) || isIPv6(ip))) add('ip', ip);
  }
  const url = field(alert, 'data.url');
  if (typeof url === 'string') urlIocs(url, add);
  for (const [path, length] of [
    ['syscheck.md5_after', 32],
    ['syscheck.sha1_after', 40],
    ['syscheck.sha256_after', 64],
  ] as const) {
    const hash = field(alert, path);
    if (typeof hash === 'string' && hash.length === length && /^[0-9A-Fa-f]+$/.test(hash)) {
      add('hash', hash);
    }
  }
}

/** An absolute URL and its host; Wazuh's `data.url` is often a bare path, which names no host. */
function urlIocs(text: string, add: AddIoc): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return;
  }
  if (!['http:', 'https:', 'ftp:'].includes(url.protocol) || url.hostname === '') return;
  add('url', text);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIPv4(host) || isIPv6(host)) add('ip', host);
  else if (findDomains(host).some((m) => m.text === host)) add('domain', host);
}

function textIocs(text: string, add: AddIoc): void {
  const claimed: TextMatch[] = [];
  for (const m of findUrls(text)) {
    claimed.push(m);
    urlIocs(m.text, add);
  }
  for (const m of findEmails(text)) {
    claimed.push(m);
    add('email', m.text);
  }
  const free = (m: TextMatch) => !claimed.some((c) => m.start < c.end && c.start < m.end);
  for (const m of findIps(text)) if (free(m)) add('ip', m.text);
  for (const m of findHashes(text)) if (free(m)) add('hash', m.text);
  for (const m of findDomains(text)) if (free(m)) add('domain', m.text);
}

/** The value at a dotted path of plain objects, or undefined. */
export function field(value: unknown, path: string): unknown {
  let at = value;
  for (const key of path.split('.')) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}
