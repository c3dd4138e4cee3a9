import type { Hono } from 'hono';
import type { Family } from '../../contracts/route.ts';
import { compilePath } from './contract.ts';

/**
 * The methods each path answers, from the contract routes actually registered on `app` (so a
 * route absent in proxy mode is not offered). Matching uses the contract's own path matcher,
 * so `/tenants/{id}` and `/tenants/{id}:decommission` stay distinct paths. GET implies HEAD,
 * which Hono answers from the GET handler.
 */
export function allowedMethods(
  app: Hono,
  families: Record<string, Family>,
): (pathname: string) => string[] {
  const registered = new Set(app.routes.map((r) => `${r.method} ${r.path}`));
  const paths = new Map<string, { match: (p: string) => unknown; methods: Set<string> }>();
  for (const routes of Object.values(families)) {
    for (const r of Object.values(routes)) {
      const { honoPath, match } = compilePath(r.path);
      if (!registered.has(`${r.method} ${honoPath}`)) continue;
      const entry = paths.get(r.path) ?? { match, methods: new Set<string>() };
      entry.methods.add(r.method);
      if (r.method === 'GET') entry.methods.add('HEAD');
      paths.set(r.path, entry);
    }
  }
  return (pathname) => {
    const methods = new Set<string>();
    for (const { match, methods: own } of paths.values()) {
      if (match(pathname)) for (const m of own) methods.add(m);
    }
    return [...methods].sort();
  };
}
