import dns from 'node:dns';

/**
 * Preloaded into a program under test (`NODE_OPTIONS=--import <this file>`), it stands in for
 * the cluster's DNS: the in-cluster names a tenant's pods use (`monitor-indexer`,
 * `*.svc`, `*.svc.cluster.local`) resolve to loopback, where the test runs the stand-in. So a
 * client verifies a certificate issued for those names exactly as it would in the cluster,
 * without a SAN for 127.0.0.1. Every other name resolves as usual. Node's net module reads
 * `dns.lookup` at each connect, so replacing the export is enough.
 */
const original = dns.lookup;
const inCluster = (host: string) =>
  host === 'monitor-indexer' || /\.svc$/.test(host) || /\.svc\.cluster\.local$/.test(host);

function lookup(hostname: string, ...rest: unknown[]): void {
  const callback = rest.at(-1) as (...args: unknown[]) => void;
  if (!inCluster(hostname)) {
    (original as (...args: unknown[]) => void)(hostname, ...rest);
    return;
  }
  const options = (rest.length > 1 ? rest[0] : {}) as number | { all?: boolean };
  const all = typeof options === 'object' && options?.all === true;
  process.nextTick(() =>
    all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4),
  );
}

dns.lookup = lookup as typeof dns.lookup;
