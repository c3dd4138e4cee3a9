import type { BlockList } from 'node:net';
import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import type { Credential } from '../auth/credential.ts';
import type { Identity, Role } from '../auth/identity.ts';
import { identityOf } from '../auth/identity.ts';
import type { AuthConfig, AuthMode } from '../config/index.ts';
import type { AppDatabase } from '../db/pools.ts';
import { parseSessionCookie, SESSION_COOKIE } from '../domains/sessions/session-repository.ts';
import type { AuthService } from '../domains/sessions/session-service.ts';
import { findLogin, findUser, normaliseEmail } from '../domains/users/user-repository.ts';
import type { Logger } from '../log/index.ts';
import { TokenError, type TokenService } from '../tokens/index.ts';
import { ProblemError } from './problem.ts';
import { isTrusted, peerAddress } from './request-id.ts';

declare module 'hono' {
  interface ContextVariableMap {
    identity: Identity;
    /** What the identity was proved with, for work that outlives the request (event streams). */
    credential: Credential;
  }
}

export const CLEAR_SESSION_COOKIE = `${SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Lax`;

export function sessionCookie(value: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${value}; Max-Age=${maxAgeSeconds}; Path=/; HttpOnly; Secure; SameSite=Lax`;
}

export interface AuthenticateDeps {
  mode: AuthMode;
  auth: AuthConfig;
  service: AuthService;
  db: AppDatabase;
  proxies: BlockList;
  logger: Logger;
  tokens: TokenService;
}

/** The user-facing families a bearer token can be presented to, by path. */
function familyOf(path: string): 'mssp' | 'tenant' | undefined {
  if (path.startsWith('/api/mssp/')) return 'mssp';
  if (path.startsWith('/api/tenant/')) return 'tenant';
  return undefined;
}

export function bearerToken(c: Context): string | undefined {
  const header = c.req.header('authorization');
  if (header === undefined) return undefined;
  const match = /^Bearer ([A-Za-z0-9_.-]+)$/.exec(header);
  if (!match?.[1]) throw new ProblemError(401, 'invalid_token', 'Malformed Authorization header');
  return match[1];
}

/**
 * Puts the caller's identity on the context or answers 401/403. A bearer token (minted by
 * svc, spec §5.2) is checked for the family it is presented to. Otherwise internal mode reads
 * only the session cookie (identity headers are ignored) and proxy mode only the trusted
 * headers, and only from a peer inside the trusted CIDRs (spec §5.1).
 */
export function authenticate(deps: AuthenticateDeps): MiddlewareHandler {
  return async (c, next) => {
    const token = bearerToken(c);
    let identity: Identity;
    if (token !== undefined) identity = await fromToken(c, deps, token);
    else if (deps.mode === 'internal') identity = await fromSession(c, deps);
    else identity = await fromProxy(c, deps);
    c.set('identity', identity);
    await next();
  };
}

async function fromToken(c: Context, deps: AuthenticateDeps, token: string): Promise<Identity> {
  const family = familyOf(c.req.path);
  if (!family)
    throw new ProblemError(401, 'invalid_token', 'This endpoint takes a session, not a token');
  const invalid = (reason: string): never => {
    deps.logger.warn({ reason, family }, 'bearer token rejected');
    throw new ProblemError(401, 'invalid_token', 'The token is not valid here');
  };
  try {
    const claims = await deps.tokens.verify(token, { expect: family });
    const userId = claims.sub.slice('user_'.length);
    const tenantId = 'tenant_id' in claims ? claims.tenant_id : null;
    // Tokens cannot be revoked; the user row can: a disabled, deleted or re-roled user's
    // tokens stop working at once.
    const user = await deps.db.withScope(tenantId, (tx) => findUser(tx, userId));
    if (
      !user ||
      user.disabled_at !== null ||
      user.role !== claims.role ||
      user.tenant_id !== tenantId
    ) {
      return invalid('user');
    }
    c.set('credential', {
      kind: 'token',
      userId: user.id,
      role: user.role,
      userTenant: user.tenant_id,
      expiresAt: new Date(claims.exp * 1000),
    });
    return identityOf(user, {
      auth_mode: deps.mode,
      must_change: user.must_change,
      session_id: null,
      via: 'token',
      current_tenant: 'current_tenant' in claims ? claims.current_tenant : null,
    });
  } catch (error) {
    if (error instanceof TokenError) return invalid(error.reason);
    throw error;
  }
}

async function fromSession(c: Context, deps: AuthenticateDeps): Promise<Identity> {
  const raw = getCookie(c, SESSION_COOKIE);
  if (raw === undefined) throw new ProblemError(401, 'unauthenticated', 'Sign in to continue');
  const secret = parseSessionCookie(raw);
  const found = secret ? await deps.service.authenticate(secret) : undefined;
  if (!found) {
    throw new ProblemError(
      401,
      'session_expired',
      'Your session expired. Please sign in again.',
      {},
      {
        'Set-Cookie': CLEAR_SESSION_COOKIE,
      },
    );
  }
  const { identity, session } = found;
  c.set('credential', {
    kind: 'session',
    userId: identity.user_id,
    role: identity.role,
    userTenant: identity.tenant_id,
    sessionId: session.id,
    absoluteExpiry: session.absolute_expiry,
    idleExpiry: session.idle_expiry,
  });
  return identity;
}

async function fromProxy(c: Context, deps: AuthenticateDeps): Promise<Identity> {
  const { trustedHeaderUser, trustedHeaderEmail, trustedHeaderGroups } = deps.auth;
  const email = c.req.header(trustedHeaderEmail);
  const user = c.req.header(trustedHeaderUser);
  const groups = c.req.header(trustedHeaderGroups);
  const peer = peerAddress(c);
  if (!isTrusted(deps.proxies, peer)) {
    if (email !== undefined || user !== undefined || groups !== undefined) {
      deps.logger.warn({ peer }, 'identity headers from an untrusted peer rejected');
      throw new ProblemError(
        403,
        'untrusted_proxy',
        'Identity headers are accepted only from the trusted proxy',
      );
    }
    throw new ProblemError(401, 'unauthenticated', 'Sign in through the identity proxy');
  }
  if (!email)
    throw new ProblemError(
      401,
      'unauthenticated',
      `The proxy sent no ${trustedHeaderEmail} header`,
    );
  const record = await deps.db.withoutTenant((tx) => findLogin(tx, normaliseEmail(email)));
  if (!record || record.disabled_at !== null) {
    throw new ProblemError(403, 'unknown_user', 'This account is not provisioned in svc');
  }
  c.set('credential', {
    kind: 'proxy',
    userId: record.id,
    role: record.role,
    userTenant: record.tenant_id,
  });
  return identityOf(record, {
    auth_mode: 'proxy',
    via: 'proxy',
    must_change: false,
    session_id: null,
    groups: (groups ?? '')
      .split(',')
      .map((g) => g.trim())
      .filter(Boolean),
  });
}

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

/** The service principals of `/api/internal/*` (spec §2.1 rows 2 and 5). */
export type ServicePrincipal =
  | { kind: 'adapter'; tenant_id: string; jti: string }
  | { kind: 'worker'; tenant_id: string; job_id: string; job_type: string; jti: string };

declare module 'hono' {
  interface ContextVariableMap {
    service: ServicePrincipal;
  }
}

/**
 * `/api/internal/*` takes only an adapter or worker token; sessions and proxy headers are
 * never accepted there, so the family is unreachable for people (spec §4.4).
 */
export function authenticateService(tokens: TokenService, logger: Logger): MiddlewareHandler {
  return async (c, next) => {
    const token = bearerToken(c);
    if (token === undefined)
      throw new ProblemError(401, 'unauthenticated', 'A service token is required');
    let principal: ServicePrincipal;
    try {
      principal = await verifyService(tokens, token);
    } catch (error) {
      if (!(error instanceof TokenError)) throw error;
      logger.warn({ reason: error.reason }, 'service token rejected');
      throw new ProblemError(401, 'invalid_token', 'The token is not valid here');
    }
    c.set('service', principal);
    await next();
  };
}

async function verifyService(tokens: TokenService, token: string): Promise<ServicePrincipal> {
  try {
    const a = await tokens.verify(token, { expect: 'adapter' });
    return { kind: 'adapter', tenant_id: a.tenant_id, jti: a.jti };
  } catch (error) {
    if (!(error instanceof TokenError) || error.reason !== 'wrong_kind') throw error;
  }
  const w = await tokens.verify(token, { expect: 'worker' });
  return {
    kind: 'worker',
    tenant_id: w.tenant_id,
    job_id: w.job_id,
    job_type: w.job_type,
    jti: w.jti,
  };
}

/** Declared next to each internal route: which service principals may call it. */
export function requireService(...kinds: ServicePrincipal['kind'][]): MiddlewareHandler {
  return async (c, next) => {
    if (!kinds.includes(c.get('service').kind)) {
      throw new ProblemError(403, 'forbidden', 'This token kind may not call this endpoint');
    }
    await next();
  };
}
