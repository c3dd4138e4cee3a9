import { Hono } from 'hono';
import {
  internalContract,
  MAX_ALERT_BATCH_BODY_BYTES,
  MAX_ALERTS_PER_BATCH,
} from '../../../contracts/internal.ts';
import type { AdapterService } from '../../domains/adapter/adapter-service.ts';
import type { IngestService } from '../../domains/ingest/ingest-service.ts';
import type { RouteBodyLimit } from '../body-limit.ts';
import { implement } from '../contract.ts';
import { ProblemError } from '../problem.ts';
import { requireService } from '../service-auth.ts';

/** `/api/internal/*` (spec §4.4): adapter and worker tokens, tenant from the token. */
export function internalRoutes(
  adapter: AdapterService,
  ingest: IngestService,
): { public: Hono; authenticated: Hono } {
  return { public: publicRoutes(adapter), authenticated: adapterRoutes(adapter, ingest) };
}

/** The alert batch route reads up to 4 MiB (500 alerts); every other route the global 1 MiB. */
export const INTERNAL_BODY_LIMITS: readonly RouteBodyLimit[] = [
  {
    method: internalContract.alerts.method,
    path: internalContract.alerts.path,
    max: MAX_ALERT_BATCH_BODY_BYTES,
  },
];

/** More alerts than a batch may hold is 413, before the schema would call it a 400. */
function refuseLargeBatch(value: unknown): void {
  const alerts = (value as { alerts?: unknown } | null)?.alerts;
  if (Array.isArray(alerts) && alerts.length > MAX_ALERTS_PER_BATCH) {
    throw new ProblemError(413, 'batch_too_large', 'Too many alerts in one batch', {
      detail: `A batch holds at most ${MAX_ALERTS_PER_BATCH} alerts; this one has ${alerts.length}`,
    });
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
    const minted = await adapter.exchangeBootstrapCredential(tenantId, body.credential);
    c.header('Cache-Control', 'no-store');
    return {
      status: 200,
      body: { token: minted.token, expires_at: minted.expiresAt },
    };
  });
  return app;
}

/** Mounted after `authenticateService`; the tenant is always the token's, never the request's. */
function adapterRoutes(adapter: AdapterService, ingest: IngestService): Hono {
  const app = new Hono();
  const adapterOnly = requireService('adapter');

  implement(app, internalContract.health, [adapterOnly])(async (c, { body }) => {
    const { tenant_id: tenantId, jti } = c.get('service');
    const outcome = await adapter.recordHeartbeat({
      tenantId,
      version: body.version,
      status: body.status ?? {},
      jti,
    });
    return {
      status: 200,
      body: { tenant_state: outcome.tenantState, activated: outcome.activated },
    };
  });

  implement(app, internalContract.config, [adapterOnly])(async (c) => {
    const config = await adapter.readConfig(c.get('service').tenant_id);
    c.header('Cache-Control', 'no-store');
    return { status: 200, body: config };
  });

  implement(app, internalContract.alerts, [adapterOnly], { bodyPrecheck: refuseLargeBatch })(
    async (c, { body }) => {
      const outcome = await ingest.ingest(c.get('service').tenant_id, body);
      return {
        status: 200,
        body: {
          accepted: outcome.accepted,
          duplicates: outcome.duplicates,
          checkpoint: outcome.checkpoint,
        },
      };
    },
  );

  implement(app, internalContract.checkpoint, [adapterOnly])(async (c) => {
    const view = await ingest.readCheckpoint(c.get('service').tenant_id);
    c.header('Cache-Control', 'no-store');
    return { status: 200, body: { checkpoint: view.checkpoint, alerts_total: view.alertsTotal } };
  });

  return app;
}
