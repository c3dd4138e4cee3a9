import type { Context, MiddlewareHandler } from 'hono';
import type { Logger } from '../log/index.ts';
import { TokenError, type TokenService } from '../tokens/index.ts';
import { ProblemError } from './problem.ts';

/** The token of an `Authorization: Bearer` header; a malformed header is refused, not ignored. */
export function bearerToken(c: Context): string | undefined {
  const header = c.req.header('authorization');
  if (header === undefined) return undefined;
  const match = /^Bearer ([A-Za-z0-9_.-]+)$/.exec(header);
  if (!match?.[1]) throw new ProblemError(401, 'invalid_token', 'Malformed Authorization header');
  return match[1];
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
