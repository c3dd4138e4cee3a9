/**
 * Which app a request's host asks for (spec §5.9, docs/web.md "Serving"): a customer host
 * `<slug>.<customer domain>` is that tenant's portal, any other host the MSSP console. On the
 * embedded default (no hostnames configured) `<slug>.localhost[:port]` is a customer host too,
 * because browsers resolve every `*.localhost` name to loopback.
 */
export interface HostPolicy {
  /** The tenant slug a customer host names; undefined for any other host. */
  customerSlug(host: string | undefined): string | undefined;
}

// One DNS label, as the CSRF origin policy reads the customer wildcard (src/auth/csrf.ts).
const LABEL = '([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)';
const PORT = '(?::\\d{1,5})?';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function createHostPolicy(options: {
  /** SVC_CUSTOMER_HOSTNAME, e.g. `*.customers.example.com` (optionally with a port). */
  customerHostname: string | undefined;
  /** The embedded default: `<slug>.localhost` names a portal. */
  localSubdomains: boolean;
}): HostPolicy {
  const patterns: RegExp[] = [];
  if (options.customerHostname) {
    const suffix = escapeRegExp(options.customerHostname.slice(1));
    // A pattern without a port matches the host on any port (a proxy may add the default one).
    const port = options.customerHostname.includes(':') ? '' : PORT;
    patterns.push(new RegExp(`^${LABEL}${suffix}${port}$`));
  }
  if (options.localSubdomains) patterns.push(new RegExp(`^${LABEL}\\.localhost${PORT}$`));
  return {
    customerSlug(host) {
      if (!host) return undefined;
      const name = host.toLowerCase();
      for (const pattern of patterns) {
        const slug = pattern.exec(name)?.[1];
        if (slug !== undefined) return slug;
      }
      return undefined;
    },
  };
}
