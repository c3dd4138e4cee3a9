import { Hono } from 'hono';
import { internalContract } from '../../../contracts/internal.ts';
import {
  exchangeBootstrapCredential,
  readAdapterConfig,
  recordHeartbeat,
} from '../../domains/adapter/index.ts';
import type { ApiDeps } from '../app.ts';
import { requireService } from '../authenticate.ts';
import { implement } from '../contract.ts';
import { ProblemError } from '../problem.ts';

/** A genuine token whose tenant is gone: refused like any other invalid token (docs/tokens.md). */
function tenantGone(): ProblemError {
  return new ProblemError(401, 'invalid_token', 'The token is not valid here');
}

/** `/api/internal/*` (spec §4.4): adapter and worker tokens, tenant from the token. */
export function internalRoutes(api: ApiDeps): { public: Hono; authenticated: Hono } {
  return { public: publicRoutes(api), authenticated: adapterRoutes(api) };
}

/** Mounted before the service-token middleware: the credential in the body is the proof. */
function publicRoutes(api: ApiDeps): Hono {
  const app = new Hono();
  implement(
    app,
    internalContract.bootstrap,
    [],
  )(async (c, { body }) => {
    const tenantId = body.tenant_id.toLowerCase();
    const minted = await exchangeBootstrapCredential(api, tenantId, body.credential);
    // One answer for an unknown tenant, a deleted one and a wrong credential: no enumeration.
    if (!minted) {
      throw new ProblemError(
        401,
        'invalid_bootstrap_credential',
        'The tenant id or bootstrap credential is not valid',
      );
    }
    c.header('Cache-Control', 'no-store');
    return {
      status: 200,
      body: { token: minted.token, expires_at: minted.expiresAt.toISOString() },
    };
  });
  return app;
}

/** Mounted after `authenticateService`; the tenant is always the token's, never the request's. */
function adapterRoutes(api: ApiDeps): Hono {
  const app = new Hono();
  const adapterOnly = requireService('adapter');

  implement(app, internalContract.health, [adapterOnly])(async (c, { body }) => {
    const { tenant_id: tenantId, jti } = c.get('service');
    const outcome = await api.db.withTenant(tenantId, (tx) =>
      recordHeartbeat(tx, {
        tenantId,
        version: body.version,
        status: body.status ?? {},
        at: api.now(),
        jti,
      }),
    );
    if (!outcome) throw tenantGone();
    return {
      status: 200,
      body: { tenant_state: outcome.tenantState, activated: outcome.activated },
    };
  });

  implement(app, internalContract.config, [adapterOnly])(async (c) => {
    const { tenant_id: tenantId } = c.get('service');
    const config = await api.db.withTenant(tenantId, (tx) => readAdapterConfig(tx, tenantId));
    if (!config) throw tenantGone();
    c.header('Cache-Control', 'no-store');
    return { status: 200, body: config };
  });

  return app;
}
