import type { Context, MiddlewareHandler } from 'hono';
import type { Role } from '../auth/identity.ts';
import { ProblemError } from './problem.ts';

/** Routes a user with must_change may still call (spec §5.4 item 4, §4.1). */
const MUST_CHANGE_ALLOWED = new Set([
  'POST /api/auth/password/change',
  'POST /api/auth/logout',
  'GET /api/auth/me',
]);

export function requirePasswordCurrent(): MiddlewareHandler {
  return async (c, next) => {
    if (
      c.get('identity').must_change &&
      !MUST_CHANGE_ALLOWED.has(`${c.req.method} ${c.req.path}`)
    ) {
      throw new ProblemError(
        403,
        'password_change_required',
        'Your administrator requires a new password',
        {
          next: '/account/password',
        },
      );
    }
    await next();
  };
}

/** Declared next to each route: which roles may call it. */
export function requireRole(...roles: Role[]): MiddlewareHandler {
  return async (c, next) => {
    if (!roles.includes(c.get('identity').role)) {
      throw new ProblemError(403, 'forbidden', 'Your role does not allow this action');
    }
    await next();
  };
}

/**
 * The family boundary of spec §4: `/api/mssp/*` serves MSSP staff only, `/api/tenant/*` the
 * customer_viewer only (an MSSP user reaches a tenant through impersonation on the MSSP side,
 * never through the tenant family).
 */
export function requireFamily(family: 'mssp' | 'tenant'): MiddlewareHandler {
  return async (c, next) => {
    if (c.get('identity').user_type !== family) {
      throw new ProblemError(
        403,
        'wrong_family',
        `This API is for ${family === 'mssp' ? 'MSSP staff' : 'customers'}`,
      );
    }
    await next();
  };
}

/**
 * The tenant a handler acts on, checked once more against an impersonation token's tenant.
 * The rule itself is the route-level guard (`impersonation.ts`, deny by default); this second
 * check keeps a handler that picks its tenant from elsewhere from drifting past it.
 */
export function tenantOfRequest(c: Context, tenantId: string): string {
  const current = c.get('identity').current_tenant;
  if (current !== null && current !== tenantId) {
    throw new ProblemError(
      403,
      'outside_impersonated_tenant',
      'This token acts for another tenant',
    );
  }
  return tenantId;
}
