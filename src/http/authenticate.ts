import type { BlockList } from 'node:net';
import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import type { Identity, Role } from '../auth/identity.ts';
import { identityOf } from '../auth/identity.ts';
import type { AuthService } from '../auth/service.ts';
import { decodeSessionId, SESSION_COOKIE } from '../auth/sessions.ts';
import { findLogin, normaliseEmail } from '../auth/users.ts';
import type { AuthConfig, AuthMode } from '../config/index.ts';
import type { AppDatabase } from '../db/pools.ts';
import type { Logger } from '../log/index.ts';
import { ProblemError } from './problem.ts';
import { isTrusted, peerAddress } from './request-id.ts';

declare module 'hono' {
  interface ContextVariableMap {
    identity: Identity;
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
}

/**
 * Puts the caller's identity on the context or answers 401/403. Internal mode reads only the
 * session cookie (identity headers are ignored); proxy mode reads only the trusted headers,
 * and only from a peer inside the trusted CIDRs (spec §5.1).
 */
export function authenticate(deps: AuthenticateDeps): MiddlewareHandler {
  return async (c, next) => {
    const identity =
      deps.mode === 'internal' ? await fromSession(c, deps) : await fromProxy(c, deps);
    c.set('identity', identity);
    await next();
  };
}

async function fromSession(c: Context, deps: AuthenticateDeps): Promise<Identity> {
  const raw = getCookie(c, SESSION_COOKIE);
  if (raw === undefined) throw new ProblemError(401, 'unauthenticated', 'Sign in to continue');
  const id = decodeSessionId(raw);
  const found = id ? await deps.service.authenticate(id) : undefined;
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
  return found.identity;
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
