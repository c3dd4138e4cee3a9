import type { BlockList } from 'node:net';
import { Hono } from 'hono';
import { authContract } from '../../../contracts/auth.ts';
import {
  HasherBusyError,
  MAX_PASSWORD_LENGTH,
  MIN_PASSWORD_LENGTH,
  passwordLength,
} from '../../auth/passwords.ts';
import type { createRateLimiter } from '../../auth/rate-limit.ts';
import type { AuthService } from '../../auth/service.ts';
import { encodeSessionId } from '../../auth/sessions.ts';
import { normaliseEmail } from '../../auth/users.ts';
import { CLEAR_SESSION_COOKIE, sessionCookie } from '../authenticate.ts';
import { clientAddress } from '../client-address.ts';
import { implement } from '../contract.ts';
import { ProblemError } from '../problem.ts';

type Limiter = ReturnType<typeof createRateLimiter>;

export interface AuthRoutesDeps {
  service: AuthService;
  perIp: Limiter;
  perEmail: Limiter;
  proxies: BlockList;
  now: () => Date;
}

/** Raises the validation problem for a password outside 12..1024 code points. */
export function checkNewPassword(password: string, field: string): void {
  const length = passwordLength(password);
  if (length < MIN_PASSWORD_LENGTH || length > MAX_PASSWORD_LENGTH) {
    throw new ProblemError(400, 'validation_failed', 'Request body failed validation', {
      errors: [
        {
          path: `/${field}`,
          message: `must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`,
        },
      ],
    });
  }
}

function busy(error: unknown): never {
  if (error instanceof HasherBusyError) {
    throw new ProblemError(
      503,
      'auth_busy',
      'Too many sign-ins at once. Try again.',
      {},
      { 'Retry-After': '1' },
    );
  }
  throw error;
}

/** `/api/auth/*` for internal mode (spec §4.1); in proxy mode these routes are not mounted. */
export function authRoutes(deps: AuthRoutesDeps): { public: Hono; authenticated: Hono } {
  const open = new Hono();
  implement(
    open,
    authContract.login,
    [],
  )(async (c, { body }) => {
    const ip = clientAddress(c, deps.proxies);
    // Both limits count before any database lookup (spec §5.5), IP first.
    const decisions = [
      deps.perIp.hit(`ip:${ip ?? 'unknown'}`),
      deps.perEmail.hit(`email:${normaliseEmail(body.email)}`),
    ];
    for (const decision of decisions) {
      if (!decision.allowed) {
        throw new ProblemError(
          429,
          'rate_limited',
          'Too many sign-in attempts. Try again later.',
          { retry_after: decision.retryAfter },
          { 'Retry-After': String(decision.retryAfter) },
        );
      }
    }
    const result = await deps.service
      .login({
        email: body.email,
        password: body.password,
        ip,
        userAgent: c.req.header('user-agent') ?? null,
      })
      .catch(busy);
    if (result.kind === 'invalid') {
      throw new ProblemError(401, 'invalid_credentials', 'Email or password is incorrect.');
    }
    if (result.kind === 'locked') {
      throw new ProblemError(423, 'account_locked', 'This account is temporarily locked.', {
        unlock_at: result.unlockAt.toISOString(),
      });
    }
    const maxAge = Math.floor(
      (result.session.absolute_expiry.getTime() - deps.now().getTime()) / 1000,
    );
    c.header('Set-Cookie', sessionCookie(encodeSessionId(result.session.id), maxAge));
    c.header('Cache-Control', 'no-store');
    return {
      status: 200,
      body: {
        identity: result.identity,
        must_change: result.identity.must_change,
        next: result.identity.must_change ? '/account/password' : null,
        session: {
          absolute_expiry: result.session.absolute_expiry.toISOString(),
          idle_expiry: result.session.idle_expiry.toISOString(),
        },
      },
    };
  });

  const authed = new Hono();
  implement(
    authed,
    authContract.me,
    [],
  )(async (c) => ({
    status: 200,
    body: { identity: c.get('identity') },
  }));

  implement(
    authed,
    authContract.logout,
    [],
  )(async (c) => {
    await deps.service.logout(c.get('identity'));
    c.header('Set-Cookie', CLEAR_SESSION_COOKIE);
    return { status: 204, body: null };
  });

  implement(
    authed,
    authContract.changePassword,
    [],
  )(async (c, { body }) => {
    checkNewPassword(body.new_password, 'new_password');
    const result = await deps.service
      .changePassword(c.get('identity'), body.current_password, body.new_password)
      .catch(busy);
    if (result.kind === 'wrong_password') {
      throw new ProblemError(
        403,
        'current_password_incorrect',
        'The current password is incorrect.',
      );
    }
    if (result.kind === 'unchanged') {
      throw new ProblemError(
        400,
        'password_unchanged',
        'Choose a password different from the current one.',
      );
    }
    return { status: 200, body: { must_change: false, revoked_sessions: result.revokedSessions } };
  });
  return { public: open, authenticated: authed };
}
