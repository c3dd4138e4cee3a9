import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { contract, Problem } from '../../contracts/index.ts';
import pkg from '../../package.json' with { type: 'json' };
import { checkCsrf, type OriginPolicy } from '../auth/csrf.ts';
import type { PasswordHasher } from '../auth/passwords.ts';
import { createRateLimiter } from '../auth/rate-limit.ts';
import type { SecretStore } from '../cluster/secrets.ts';
import type { AuthConfig, AuthMode } from '../config/index.ts';
import type { AppDatabase } from '../db/pools.ts';
import type { SystemGate } from '../db/system-gate.ts';
import { DatabaseUnavailableError } from '../db/unavailable.ts';
import type { EventHub } from '../domains/events/index.ts';
import type { AuthService } from '../domains/sessions/session-service.ts';
import type { ValuesPreview } from '../domains/tenants/tenant-config.ts';
import type { Logger } from '../log/index.ts';
import type { OutboundPolicy } from '../net/outbound-url.ts';
import type { ChartCatalog } from '../orchestrator/catalog.ts';
import type { TokenService } from '../tokens/index.ts';
import { allowedMethods } from './allowed-methods.ts';
import { authRoutes } from './auth/routes.ts';
import {
  authenticate,
  authenticateService,
  requireFamily,
  requirePasswordCurrent,
} from './authenticate.ts';
import { limitBody } from './body-limit.ts';
import { internalRoutes } from './internal/routes.ts';
import { msspRoutes } from './mssp/routes.ts';
import { triageRoutes } from './mssp/triage.ts';
import { userManagementRoutes } from './mssp/user-management.ts';
import { msspUserRoutes } from './mssp/users.ts';
import { openApiDocument, referencePage } from './openapi.ts';
import { ProblemError, problem } from './problem.ts';
import { peerAddress, requestId, trustedProxies } from './request-id.ts';
import { tenantRoutes } from './tenant/routes.ts';

declare module 'hono' {
  interface ContextVariableMap {
    requestId: string;
  }
}

/** What the API needs beyond health: present in `svc serve`, absent in bare HTTP tests. */
export interface ApiDeps {
  auth: AuthConfig;
  db: AppDatabase;
  system: SystemGate;
  service: AuthService;
  hasher: PasswordHasher;
  origins: OriginPolicy;
  tokens: TokenService;
  /** Tenant-scoped event fan-out for the SSE endpoints (spec §5.7 item 8). */
  events: EventHub;
  /** Secrets in the install namespace; absent when svc runs without a cluster. */
  secrets?: SecretStore | undefined;
  /** The orchestrator's side of the tenant endpoints; absent when svc runs without a cluster. */
  tenancy?: TenancyDeps | undefined;
  /** Internal targets tenant URLs may name (SVC_OUTBOUND_ALLOW_*); none when absent. */
  outbound?: OutboundPolicy | undefined;
  now: () => Date;
}

export interface TenancyDeps {
  /** Wake the orchestrator: new work was just recorded. */
  kick(): void;
  systemVersion: string;
  edgePortBase: number;
  decommissionGraceMs: number;
  catalog: ChartCatalog;
  /** Renders a new tenant's package values as the orchestrator will (creation validates them). */
  previewValues?: ValuesPreview | undefined;
}

export interface AppDeps {
  authMode: AuthMode;
  trustedProxyCidrs: readonly string[];
  logger: Logger;
  /** True when the database answers as svc_app. */
  databaseReady: () => Promise<boolean>;
  api?: ApiDeps;
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The internal-auth endpoints of spec §4.1; in proxy mode each answers 404 (spec §7). */
const INTERNAL_AUTH_PATHS = ['/api/auth/*', '/api/mssp/users/:id/password/reset'];

export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  const proxies = trustedProxies(deps.trustedProxyCidrs);
  app.use(requestId(proxies));
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
  // Before every route, authentication and CSRF: no request body is ever held past the limit.
  app.use(limitBody());
  // A known path asked with a method it does not answer is 405 with Allow (RFC 9110 §15.5.6),
  // before authentication: which routes exist is public (the OpenAPI document), so a wrong
  // method is the answer whoever asks. Filled in once every route is registered.
  let allowed: (pathname: string) => string[] = () => [];
  const methodNotAllowed = (c: Context, allow: string[]) => {
    c.header('Allow', allow.join(', '));
    return problem(c, 405, 'method_not_allowed', 'Method Not Allowed');
  };
  app.use(async (c, next) => {
    const allow = allowed(c.req.path);
    if (allow.length > 0 && !allow.includes(c.req.method)) return methodNotAllowed(c, allow);
    return next();
  });

  app.get('/healthz', async (c) => {
    const ready = await deps.databaseReady();
    return c.json(
      { status: ready ? 'ok' : 'degraded', auth_mode: deps.authMode, database: { ready } },
      ready ? 200 : 503,
    );
  });

  // Public and identical in both modes, so integrators can read the contract before signing in.
  const openapi = openApiDocument(contract, Problem, pkg.version);
  app.get('/api/openapi.json', (c) => c.json(openapi));
  app.get('/api/docs', (c) => c.html(referencePage(openapi)));

  const api = deps.api;
  if (api) {
    // Spec §5.6, both modes, before anything else looks at the request. The service family
    // accepts nothing a browser attaches by itself (only bearer tokens), so it is exempt.
    app.use(async (c, next) => {
      if (STATE_CHANGING.has(c.req.method) && !c.req.path.startsWith('/api/internal/')) {
        const verdict = checkCsrf(api.origins, c.req.header('origin'), c.req.header('referer'));
        if (!verdict.ok) {
          deps.logger.warn(
            { reason: verdict.reason, origin: c.req.header('origin') },
            'csrf rejected',
          );
          throw new ProblemError(403, 'csrf_rejected', 'Cross-site request refused', {
            detail: verdict.reason,
          });
        }
      }
      await next();
    });

    const routes = authRoutes({
      service: api.service,
      perIp: createRateLimiter(api.auth.loginRateLimitPerIp, () => api.now().getTime()),
      perEmail: createRateLimiter(api.auth.loginRateLimitPerEmail, () => api.now().getTime()),
      proxies,
      now: api.now,
    });
    const internal = internalRoutes(api);
    // The adapter's bootstrap exchange authenticates with its own credential, not a token.
    app.route('/', internal.public);
    if (deps.authMode === 'internal') {
      app.route('/', routes.public);
    } else {
      for (const path of INTERNAL_AUTH_PATHS) {
        app.all(path, (c) => problem(c, 404, 'not_found', 'Not Found'));
      }
    }
    const user = authenticate({
      mode: deps.authMode,
      auth: api.auth,
      service: api.service,
      db: api.db,
      proxies,
      logger: deps.logger,
      tokens: api.tokens,
    });
    // One connection and one transaction per authenticated request: the session check, the
    // identity, the tenant context and the handler's queries (src/db/unit-of-work.ts).
    const unit: MiddlewareHandler = (_c, next) => api.db.unitOfWork(() => next());
    app.use('/api/auth/*', unit, user, requirePasswordCurrent());
    app.use('/api/mssp/*', unit, user, requirePasswordCurrent(), requireFamily('mssp'));
    app.use('/api/tenant/*', unit, user, requirePasswordCurrent(), requireFamily('tenant'));
    app.use('/api/internal/*', authenticateService(api.tokens, deps.logger));
    app.route('/', internal.authenticated);
    app.route('/', msspRoutes(api));
    app.route('/', userManagementRoutes(api, deps.authMode));
    app.route('/', triageRoutes(api));
    app.route('/', tenantRoutes(api));
    if (deps.authMode === 'internal') {
      app.route('/', routes.authenticated);
      app.route(
        '/',
        msspUserRoutes({ db: api.db, system: api.system, hasher: api.hasher, now: api.now }),
      );
    }
  }

  allowed = allowedMethods(app, contract);
  app.notFound((c) => problem(c, 404, 'not_found', 'Not Found'));
  app.onError((error, c) => {
    if (error instanceof DatabaseUnavailableError) {
      deps.logger.warn({ err: error.cause }, 'database unavailable');
      c.header('Retry-After', '1');
      return problem(c, 503, error.code, error.message);
    }
    if (error instanceof ProblemError) {
      for (const [name, value] of Object.entries(error.headers)) c.header(name, value);
      return problem(c, error.status, error.code, error.title, error.extra);
    }
    deps.logger.error({ err: error }, 'unhandled error');
    return problem(c, 500, 'internal', 'Internal Server Error');
  });
  return app;
}
