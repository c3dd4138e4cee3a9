import type { Static } from 'typebox';
import {
  createSvcClient,
  type Identity,
  type Problem,
  type ProblemStatus,
} from '../../contracts/index.ts';

export type SignedInIdentity = Static<typeof Identity>;

/** The server answered with a problem (RFC 9457): what query code throws for a non-2xx. */
export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem;
  constructor(status: number, problem: Problem) {
    super(problem.title);
    this.name = 'ApiError';
    this.status = status;
    this.problem = problem;
  }
}

/** No answer at all (offline, DNS, the server down): the page keeps what the user typed. */
export class NetworkError extends Error {
  constructor(cause: unknown) {
    super('network error', { cause });
    this.name = 'NetworkError';
  }
}

/**
 * The session as the SDK sees it. While a session is signed in, a 401 on any call means it
 * ended (revoked, idle or absolute expiry): the auth provider registers what happens then
 * (spec §5.9 item 7). A 401 to sign-in itself is a wrong password, never an expiry.
 */
let sessionActive = false;
let onSessionExpired: () => void = () => undefined;

/** Called by the auth provider: on sign-in and first load (true), on sign-out (false). */
export function trackSession(active: boolean, onExpired?: () => void): void {
  sessionActive = active;
  if (onExpired) onSessionExpired = onExpired;
}

async function browserFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(input, { ...init, credentials: 'same-origin' });
  } catch (error) {
    throw new NetworkError(error);
  }
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  if (res.status === 401 && sessionActive && !url.includes('/api/auth/login')) {
    sessionActive = false;
    onSessionExpired();
  }
  return res;
}

/**
 * The typed SDK from contracts/, same-origin: the browser keeps the svc_session cookie
 * (HttpOnly), so the SDK's own cookie jar is off, and the browser adds Origin for CSRF.
 */
export const svc = createSvcClient({ baseUrl: '', cookies: false, fetch: browserFetch });

type Success<R> = Exclude<R, { status: ProblemStatus }>;

/** The body of a 2xx answer; any problem becomes an ApiError (what TanStack Query expects). */
export async function ok<R extends { status: number; body: unknown }>(
  call: Promise<R>,
): Promise<Success<R>['body']> {
  const res = await call;
  if (res.status >= 200 && res.status < 300) return res.body as Success<R>['body'];
  throw new ApiError(res.status, res.body as Problem);
}
