import type { BlockList } from 'node:net';
import { Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import { authContract } from '../../../contracts/auth.ts';
import { DEVICE_COOKIE, type DeviceCookies } from '../../auth/device-cookie.ts';
import { createFairShare } from '../../auth/fair-share.ts';
import { passwordWeakness } from '../../auth/password-policy.ts';
import {
  HasherBusyError,
  MAX_PASSWORD_LENGTH,
  MIN_PASSWORD_LENGTH,
  passwordLength,
} from '../../auth/passwords.ts';
import type { RateLimiter } from '../../auth/rate-limit.ts';
import type { PublicBrandingBody } from '../../domains/branding/branding-types.ts';
import type { AuthService } from '../../domains/sessions/session-service.ts';
import { normaliseEmail } from '../../domains/users/user-repository.ts';
import { addressBlock, clientAddress } from '../client-address.ts';
import { implement } from '../contract.ts';
import { ProblemError } from '../problem.ts';
import { CLEAR_SESSION_COOKIE, sessionCookie } from '../session-cookie.ts';

/**
 * Places in the password hasher (running or queued) one client address may hold at once:
 * two lets a person retry while the first attempt is still hashing.
 */
export const HASHES_PER_ADDRESS = 2;
/**
 * Device-lane places (docs/auth.md "Device cookie") one account may hold at once, whatever
 * number of its device cookies ask: someone minting cookies for their own account cannot
 * crowd the lane out for other accounts' devices.
 */
export const DEVICE_HASHES_PER_ACCOUNT = 2;

export interface AuthRoutesDeps {
  service: AuthService;
  perIp: RateLimiter;
  perEmail: RateLimiter;
  proxies: BlockList;
  devices: DeviceCookies;
  now: () => Date;
  /** The sign-in page's branding for a host: the same lookup as GET /api/public/branding. */
  branding: (host: string) => Promise<PublicBrandingBody>;
}

/** Raises the problem for a password outside 12..1024 code points or one password-policy.ts refuses. */
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
  const weakness = passwordWeakness(password);
  if (weakness) {
    throw new ProblemError(400, 'password_too_weak', 'This password is too easy to guess.', {
      reason: weakness,
    });
  }
}

function rateLimited(retryAfter: number): ProblemError {
  return new ProblemError(
    429,
    'rate_limited',
    'Too many sign-in attempts. Try again later.',
    { retry_after: retryAfter },
    { 'Retry-After': String(retryAfter) },
  );
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
  const hashShare = createFairShare(HASHES_PER_ADDRESS);
  const deviceShare = createFairShare(DEVICE_HASHES_PER_ACCOUNT);
  /** Holds one of the address's hasher places while `work` runs, or refuses with 429. */
  async function hashingFor<T>(
    block: string,
    work: () => Promise<T>,
    share = hashShare,
  ): Promise<T> {
    const release = share.acquire(block);
    if (!release) throw rateLimited(1);
    try {
      return await work();
    } finally {
      release();
    }
  }

  const open = new Hono();
  // GET /api/public/branding answers for the Host the request came to; this one for a host
  // named in the query (docs/auth.md names it), e.g. a sign-in page served from another origin.
  implement(
    open,
    authContract.branding,
    [],
  )(async (c, { query }) => {
    c.header('Cache-Control', 'no-cache');
    return { status: 200, body: await deps.branding(query.host) };
  });

  // An attempt without a device cookie is anonymous whatever its body says. When its address
  // already holds its share (429) or the hasher's anonymous lane is full (503), it is refused
  // before its body is read and validated: the cheapest answer there is, so a flood's cost to
  // the event loop stays small (docs/auth.md "Device cookie"). Like a malformed body it is then
  // counted by no limit: it is not known to be a sign-in attempt and it reached nothing. One with a
  // cookie is decided in the handler, once the email the cookie must name is known.
  open.post('/api/auth/login', async (c, next) => {
    if (getCookie(c, DEVICE_COOKIE) === undefined) {
      const share = hashShare.acquire(addressBlock(clientAddress(c, deps.proxies) ?? 'unknown'));
      if (!share) throw rateLimited(1);
      share();
      if (!deps.service.acceptsAnonymous()) busy(new HasherBusyError());
    }
    await next();
  });
  implement(
    open,
    authContract.login,
    [],
  )(async (c, { body }) => {
    const ip = clientAddress(c, deps.proxies);
    const block = addressBlock(ip ?? 'unknown');
    const email = normaliseEmail(body.email);
    const attempt = (trustedDevice: boolean) =>
      deps.service.login({
        email: body.email,
        password: body.password,
        ip,
        userAgent: c.req.header('user-agent') ?? null,
        trustedDevice,
      });
    // A browser that signed in to this account before skips the anonymous limits and queue:
    // its own failure budget and the database lockout bound its guesses instead.
    const device = deps.devices.trusted(getCookie(c, DEVICE_COOKIE), email);
    let result: Awaited<ReturnType<typeof attempt>>;
    if (device) {
      result = await hashingFor(email, () => attempt(true), deviceShare).catch(busy);
      if (result.kind === 'invalid' || result.kind === 'locked') deps.devices.failed(device);
    } else {
      // Both limits count before any database lookup (spec §5.5), IP first. An attempt counts
      // against the email only once the address was admitted, so a flood from one address
      // cannot spend a victim's per-email budget beyond what the per-IP limit lets through.
      const byIp = deps.perIp.hit(`ip:${block}`);
      if (!byIp.allowed) throw rateLimited(byIp.retryAfter);
      result = await hashingFor(block, () => {
        const byEmail = deps.perEmail.hit(`email:${email}`);
        if (!byEmail.allowed) throw rateLimited(byEmail.retryAfter);
        return attempt(false);
      }).catch(busy);
    }
    if (result.kind === 'invalid') {
      throw new ProblemError(401, 'invalid_credentials', 'Email or password is incorrect.');
    }
    if (result.kind === 'suspended') {
      throw new ProblemError(
        403,
        'tenant_suspended',
        'This organisation is suspended. Contact your service provider.',
      );
    }
    if (result.kind === 'locked') {
      throw new ProblemError(423, 'account_locked', 'This account is temporarily locked.', {
        unlock_at: result.unlockAt,
      });
    }
    const maxAge = Math.floor(
      (result.session.absolute_expiry.getTime() - deps.now().getTime()) / 1000,
    );
    c.header('Set-Cookie', sessionCookie(result.secret, maxAge));
    // A device already trusted keeps its cookie (and its failure count).
    if (!device)
      c.header('Set-Cookie', deps.devices.header(deps.devices.issue(email)), { append: true });
    c.header('Cache-Control', 'no-store');
    return {
      status: 200,
      body: {
        identity: result.identity,
        must_change: result.identity.must_change,
        next: result.identity.must_change ? '/account/password' : null,
        session: {
          absolute_expiry: result.session.absolute_expiry,
          idle_expiry: result.session.idle_expiry,
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
    const block = addressBlock(clientAddress(c, deps.proxies) ?? 'unknown');
    const result = await hashingFor(block, () =>
      deps.service.changePassword(c.get('identity'), body.current_password, body.new_password),
    ).catch(busy);
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
