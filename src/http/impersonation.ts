import type { MiddlewareHandler } from 'hono';
import type { Route } from '../../contracts/route.ts';
import { ProblemError } from './problem.ts';

const MSSP_PREFIX = '/api/mssp/';

function outside(detail: string): ProblemError {
  return new ProblemError(
    403,
    'outside_impersonated_tenant',
    'An impersonation token is limited to its tenant',
    { detail },
  );
}

/**
 * The impersonation rule of spec §5.2 as one guard, deny by default: on an `/api/mssp/*` route,
 * a token that acts for a tenant passes only when the route declares `own_tenant` and the
 * tenant the request targets is provably the token's own — the `tenant_id` path parameter, or
 * else the `tenant_id` query parameter (absent: the token's tenant). Routes that find their
 * tenant some other way (say, through a user id) cannot prove it before the lookup, so they
 * declare `deny`: a lookup before the refusal would already be an existence oracle.
 *
 * Returns undefined for routes outside the MSSP family. Throws at registration for an MSSP
 * route that declares nothing, or declares `own_tenant` without naming a tenant.
 */
export function impersonationGuard(
  r: Route,
  params: (pathname: string) => Record<string, string> | undefined,
): MiddlewareHandler | undefined {
  if (!r.path.startsWith(MSSP_PREFIX)) return undefined;
  const declared = r.impersonation;
  if (declared === undefined) {
    throw new Error(`${r.method} ${r.path}: an MSSP route must declare its impersonation rule`);
  }
  const fromPath = r.path.includes('{tenant_id}');
  const fromQuery = !fromPath && hasTenantQuery(r);
  if (declared === 'own_tenant' && !fromPath && !fromQuery) {
    throw new Error(`${r.method} ${r.path}: own_tenant needs a tenant_id path or query parameter`);
  }
  return async (c, next) => {
    const current = c.get('identity').current_tenant;
    if (current !== null) {
      if (declared === 'deny') throw outside('This endpoint does not accept impersonation tokens');
      const target = fromPath
        ? params(c.req.path)?.tenant_id
        : // The same (first) value the query validation hands the handler.
          (c.req.query('tenant_id') ?? current);
      if (target !== current) throw outside('This token acts for another tenant');
    }
    await next();
  };
}

function hasTenantQuery(r: Route): boolean {
  const properties = (r.query as { properties?: Record<string, unknown> } | undefined)?.properties;
  return properties !== undefined && 'tenant_id' in properties;
}
