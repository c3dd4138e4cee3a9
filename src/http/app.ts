import { Hono } from 'hono';
import type { AuthMode } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import { problem } from './problem.ts';
import { peerAddress, requestId, trustedProxies } from './request-id.ts';

declare module 'hono' {
  interface ContextVariableMap {
    requestId: string;
  }
}

export interface AppDeps {
  authMode: AuthMode;
  trustedProxyCidrs: readonly string[];
  logger: Logger;
  /** True when the database answers as svc_app. */
  databaseReady: () => Promise<boolean>;
}

export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  app.use(requestId(trustedProxies(deps.trustedProxyCidrs)));
  app.use(async (c, next) => {
    const started = performance.now();
    await next();
    deps.logger.info(
      {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        duration_ms: Math.round((performance.now() - started) * 10) / 10,
        remote: peerAddress(c),
      },
      'request',
    );
  });

  app.get('/healthz', async (c) => {
    const ready = await deps.databaseReady();
    return c.json(
      { status: ready ? 'ok' : 'degraded', auth_mode: deps.authMode, database: { ready } },
      ready ? 200 : 503,
    );
  });

  app.notFound((c) => problem(c, 404, 'not_found', 'Not Found'));
  app.onError((error, c) => {
    deps.logger.error({ err: error }, 'unhandled error');
    return problem(c, 500, 'internal', 'Internal Server Error');
  });
  return app;
}
