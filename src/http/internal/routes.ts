import { Hono } from 'hono';
import { internalContract } from '../../../contracts/internal.ts';
import type { AdapterService } from '../../domains/adapter/adapter-service.ts';
import {
  AdapterTenantGoneError,
  InvalidBootstrapCredentialError,
} from '../../domains/adapter/adapter-types.ts';
import { implement } from '../contract.ts';
import { ProblemError } from '../problem.ts';
import { requireService } from '../service-auth.ts';

/** `/api/internal/*` (spec §4.4): adapter and worker tokens, tenant from the token. */
export function internalRoutes(adapter: AdapterService): { public: Hono; authenticated: Hono } {
  return { public: publicRoutes(adapter), authenticated: adapterRoutes(adapter) };
}

/** The adapter domain's refusals as the problems of docs/tokens.md. */
async function problems<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    // One answer for an unknown tenant, a deleted one and a wrong credential: no enumeration.
    if (error instanceof InvalidBootstrapCredentialError)
      throw new ProblemError(401, 'invalid_bootstrap_credential', error.message);
    // A genuine token whose tenant is gone is refused like any other invalid token.
    if (error instanceof AdapterTenantGoneError)
      throw new ProblemError(401, 'invalid_token', 'The token is not valid here');
    throw error;
  }
}

/** Mounted before the service-token middleware: the credential in the body is the proof. */
function publicRoutes(adapter: AdapterService): Hono {
  const app = new Hono();
  implement(
    app,
    internalContract.bootstrap,
    [],
  )(async (c, { body }) => {
    const tenantId = body.tenant_id.toLowerCase();
    const minted = await problems(adapter.exchangeBootstrapCredential(tenantId, body.credential));
    c.header('Cache-Control', 'no-store');
    return {
      status: 200,
      body: { token: minted.token, expires_at: minted.expiresAt.toISOString() },
    };
  });
  return app;
}

/** Mounted after `authenticateService`; the tenant is always the token's, never the request's. */
function adapterRoutes(adapter: AdapterService): Hono {
  const app = new Hono();
  const adapterOnly = requireService('adapter');

  implement(app, internalContract.health, [adapterOnly])(async (c, { body }) => {
    const { tenant_id: tenantId, jti } = c.get('service');
    const outcome = await problems(
      adapter.recordHeartbeat({ tenantId, version: body.version, status: body.status ?? {}, jti }),
    );
    return {
      status: 200,
      body: { tenant_state: outcome.tenantState, activated: outcome.activated },
    };
  });

  implement(app, internalContract.config, [adapterOnly])(async (c) => {
    const config = await problems(adapter.readConfig(c.get('service').tenant_id));
    c.header('Cache-Control', 'no-store');
    return { status: 200, body: config };
  });

  return app;
}
