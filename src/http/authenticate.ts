import type { BlockList } from 'node:net';
import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import type { Credential } from '../auth/credential.ts';
import type { Identity } from '../auth/identity.ts';
import { identityOf } from '../auth/identity.ts';
import type { AuthConfig, AuthMode } from '../config/index.ts';
import { parseSessionCookie, SESSION_COOKIE } from '../domains/sessions/session-repository.ts';
import type { AuthService } from '../domains/sessions/session-service.ts';
import { proxyEmail } from '../domains/users/user-repository.ts';
import type { Logger } from '../log/index.ts';
import { TokenError, type TokenService } from '../tokens/index.ts';
import { ProblemError } from './problem.ts';
import { isTrusted, peerAddress } from './request-id.ts';
import { bearerToken } from './service-auth.ts';
import { CLEAR_SESSION_COOKIE } from './session-cookie.ts';

declare module 'hono' {
  interface ContextVariableMap {
    identity: Identity;
    /** What the identity was proved with, for work that outlives the request (event streams). */
    credential: Credential;
  }
}

export interface AuthenticateDeps {
  mode: AuthMode;
  auth: AuthConfig;
  sessions: AuthService;
  proxies: BlockList;
  logger: Logger;
  tokens: TokenService;
  /**
   * Whether the request may go ahead on a session checked a moment ago while the database
   * confirms it with the request's first statement (reads that open no stream): see
   * AuthService.authenticate. Default never.
   */
  confirmLater?: (c: Context) => boolean;
}

/** The user-facing families a bearer token can be presented to, by path. */
function familyOf(path: string): 'mssp' | 'tenant' | undefined {
  if (path.startsWith('/api/mssp/')) return 'mssp';
  if (path.startsWith('/api/tenant/')) return 'tenant';
  return undefined;
}

/**
 * Puts the caller's identity on the context or answers 401/403. A bearer token (minted by
 * svc, spec §5.2) is checked for the family it is presented to. Otherwise internal mode reads
 * only the session cookie (identity headers are ignored) and proxy mode only the trusted
 * headers, and only from a peer inside the trusted CIDRs (spec §5.1).
 *
 * In proxy mode identity headers from an untrusted peer are refused (and logged) before
 * anything else is looked at: whatever else the request carries (a token, a malformed or empty
 * Authorization header), the spoofing attempt is what it is, and must not hide behind an
 * ordinary `invalid_token`. From the trusted proxy, a bearer token wins over the headers: the
 * proxy adds them to every request, including those of an MSSP user's impersonation token.
 */
export function authenticate(deps: AuthenticateDeps): MiddlewareHandler {
  return async (c, next) => {
    if (deps.mode === 'proxy') refuseUntrustedIdentity(c, deps);
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
    const user = await deps.sessions.tokenUser(userId, tenantId);
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
      // The password is for internal mode (spec §5.10 step 3 sets it while the proxy still
      // authenticates): in proxy mode nobody could change it, since /api/auth/* is 404 there.
      must_change: deps.mode === 'internal' && user.must_change,
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
  const confirmLater = deps.confirmLater?.(c) ?? false;
  const found = secret ? await deps.sessions.authenticate(secret, { confirmLater }) : undefined;
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

/** At most this much of a refused header value goes into the log line. */
const LOGGED_VALUE_CHARS = 300;

/** 403 untrusted_proxy, logged, when any identity header comes from outside the trusted CIDRs. */
function refuseUntrustedIdentity(c: Context, deps: AuthenticateDeps): void {
  const peer = peerAddress(c);
  if (isTrusted(deps.proxies, peer)) return;
  const names = [
    deps.auth.trustedHeaderUser,
    deps.auth.trustedHeaderEmail,
    deps.auth.trustedHeaderGroups,
  ];
  const sent = names.filter((name) => c.req.header(name) !== undefined);
  if (sent.length === 0) return;
  deps.logger.warn(
    {
      peer,
      headers: sent,
      claimed_email: c.req.header(deps.auth.trustedHeaderEmail)?.slice(0, LOGGED_VALUE_CHARS),
      authorization: c.req.header('authorization') !== undefined,
    },
    'identity headers from an untrusted peer rejected',
  );
  throw new ProblemError(
    403,
    'untrusted_proxy',
    'Identity headers are accepted only from the trusted proxy',
  );
}

async function fromProxy(c: Context, deps: AuthenticateDeps): Promise<Identity> {
  const { trustedHeaderEmail, trustedHeaderGroups } = deps.auth;
  const email = c.req.header(trustedHeaderEmail);
  const groups = c.req.header(trustedHeaderGroups);
  const peer = peerAddress(c);
  // Identity headers from an untrusted peer were refused before (refuseUntrustedIdentity).
  if (!isTrusted(deps.proxies, peer))
    throw new ProblemError(401, 'unauthenticated', 'Sign in through the identity proxy');
  if (!email)
    throw new ProblemError(
      401,
      'unauthenticated',
      `The proxy sent no ${trustedHeaderEmail} header`,
    );
  // Exactly an address or nothing: a value with an invisible or foreign character around it
  // is never trimmed into someone's account.
  const key = proxyEmail(email);
  if (key === undefined) {
    deps.logger.warn(
      { peer, header: trustedHeaderEmail, value: email.slice(0, LOGGED_VALUE_CHARS) },
      'identity header is not an email address',
    );
    throw new ProblemError(
      403,
      'invalid_identity_header',
      `The proxy's ${trustedHeaderEmail} header is not an email address`,
    );
  }
  const record = await deps.sessions.proxyUser(key);
  if (!record || record.disabled_at !== null) {
    throw new ProblemError(403, 'unknown_user', 'This account is not provisioned in svc');
  }
  if (record.tenant_suspended) {
    throw new ProblemError(
      403,
      'tenant_suspended',
      'This organisation is suspended. Contact your service provider.',
    );
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
