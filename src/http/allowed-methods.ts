import type { Hono } from 'hono';
import type { Family } from '../../contracts/route.ts';
import { compilePath } from './contract.ts';

export interface AllowedMethods {
  /** Whether some registered route answers this method on this path: one pattern test. */
  answers(method: string, pathname: string): boolean;
  /** Every method the path answers (for the Allow header of a 405). */
  allowed(pathname: string): string[];
}

/**
 * The methods each path answers, from the contract routes actually registered on `app` (so a
 * route absent in proxy mode is not offered). Matching uses the contract's own path patterns,
 * so `/tenants/{id}` and `/tenants/{id}:decommission` stay distinct paths. GET implies HEAD,
 * which Hono answers from the GET handler. Every request asks `answers` (one combined pattern
 * per method); only a refused one pays for the full list.
 */
export function allowedMethods(app: Hono, families: Record<string, Family>): AllowedMethods {
  const registered = new Set(app.routes.map((r) => `${r.method} ${r.path}`));
  const byMethod = new Map<string, RegExp[]>();
  for (const routes of Object.values(families)) {
    for (const r of Object.values(routes)) {
      const { honoPath, pattern } = compilePath(r.path);
      if (!registered.has(`${r.method} ${honoPath}`)) continue;
      for (const method of r.method === 'GET' ? ['GET', 'HEAD'] : [r.method]) {
        byMethod.set(method, [...(byMethod.get(method) ?? []), pattern]);
      }
    }
  }
  const combined = new Map(
    [...byMethod].map(([method, patterns]) => [
      method,
      new RegExp(patterns.map((p) => `(?:${p.source})`).join('|')),
    ]),
  );
  return {
    answers: (method, pathname) => combined.get(method)?.test(pathname) ?? false,
    allowed: (pathname) =>
      [...byMethod]
        .filter(([, patterns]) => patterns.some((p) => p.test(pathname)))
        .map(([method]) => method)
        .sort(),
  };
}
