import type { BlockList } from 'node:net';
import { Hono } from 'hono';
import Type from 'typebox';
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
import { readJson } from '../body.ts';
import { clientAddress } from '../client-address.ts';
import { ProblemError } from '../problem.ts';

const LoginBody = Type.Object(
  {
    email: Type.String({ minLength: 3, maxLength: 254 }),
    password: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH * 4 }),
  },
  { additionalProperties: false },
);

const ChangeBody = Type.Object(
  {
    current_password: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH * 4 }),
    new_password: Type.String({ maxLength: MAX_PASSWORD_LENGTH * 4 }),
  },
  { additionalProperties: false },
);

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

/** `/api/auth/*` for internal mode (spec §4.1); in proxy mode this router is not mounted. */
export function authRoutes(deps: AuthRoutesDeps): { public: Hono; authenticated: Hono } {
  const open = new Hono();
  open.post('/api/auth/login', async (c) => {
    const body = await readJson(c, LoginBody);
    const ip = clientAddress(c, deps.proxies);
    // Both limits count before any database lookup (spec §5.5), IP first.
    for (const decision of [
      deps.perIp.hit(`ip:${ip ?? 'unknown'}`),
      deps.perEmail.hit(`email:${normaliseEmail(body.email)}`),
    ]) {
      if (!decision.allowed) {
        throw new ProblemError(
          429,
          'rate_limited',
          'Too many sign-in attempts. Try again later.',
          {
            retry_after: decision.retryAfter,
          },
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
    return c.json({
      identity: result.identity,
      must_change: result.identity.must_change,
      next: result.identity.must_change ? '/account/password' : null,
      session: {
        absolute_expiry: result.session.absolute_expiry.toISOString(),
        idle_expiry: result.session.idle_expiry.toISOString(),
      },
    });
  });

  const authed = new Hono();
  authed.get('/api/auth/me', (c) => c.json({ identity: c.get('identity') }));

  authed.post('/api/auth/logout', async (c) => {
    await deps.service.logout(c.get('identity'));
    c.header('Set-Cookie', CLEAR_SESSION_COOKIE);
    return c.body(null, 204);
  });

  authed.post('/api/auth/password/change', async (c) => {
    const body = await readJson(c, ChangeBody);
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
    return c.json({ must_change: false, revoked_sessions: result.revokedSessions });
  });
  return { public: open, authenticated: authed };
}
