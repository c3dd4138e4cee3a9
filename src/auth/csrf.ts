/**
 * Spec §5.6: the origins a state-changing request may come from. Derived from the MSSP host
 * and the wildcard customer host; loopback origins only in the local default (no hostnames
 * configured, embedded database).
 */
export interface OriginPolicy {
  allows(origin: string): boolean;
  describe(): string[];
}

// `<slug>.localhost` too: the local portal of a tenant (browsers resolve it to loopback).
const LOOPBACK =
  /^http:\/\/(([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)?localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/;
const LABEL = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function createOriginPolicy(options: {
  msspHostname: string | undefined;
  customerHostname: string | undefined;
  allowLoopback: boolean;
}): OriginPolicy {
  const exact = new Set<string>();
  if (options.msspHostname) exact.add(`https://${options.msspHostname}`);
  // "*.customers.example.com" matches exactly one DNS label in place of the star.
  const wildcard = options.customerHostname
    ? new RegExp(`^https://${LABEL}${escapeRegExp(options.customerHostname.slice(1))}$`)
    : undefined;
  return {
    allows(origin) {
      if (exact.has(origin)) return true;
      if (wildcard?.test(origin)) return true;
      return options.allowLoopback && LOOPBACK.test(origin);
    },
    describe: () => [
      ...exact,
      ...(options.customerHostname ? [`https://${options.customerHostname}`] : []),
      ...(options.allowLoopback
        ? ['http://localhost:*', 'http://*.localhost:*', 'http://127.0.0.1:*', 'http://[::1]:*']
        : []),
    ],
  };
}

export type CsrfVerdict = { ok: true } | { ok: false; reason: string };

/** Origin if present, else Referer's origin, else refuse (spec §5.6 items 1-3). */
export function checkCsrf(
  policy: OriginPolicy,
  origin: string | undefined,
  referer: string | undefined,
): CsrfVerdict {
  if (origin !== undefined) {
    return policy.allows(origin) ? { ok: true } : { ok: false, reason: 'origin not allowed' };
  }
  if (referer !== undefined) {
    let refererOrigin: string;
    try {
      refererOrigin = new URL(referer).origin;
    } catch {
      return { ok: false, reason: 'malformed referer' };
    }
    return policy.allows(refererOrigin)
      ? { ok: true }
      : { ok: false, reason: 'referer not allowed' };
  }
  return { ok: false, reason: 'neither origin nor referer' };
}
