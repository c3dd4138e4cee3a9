import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { contract, Problem } from '../../../contracts/index.ts';
import pkg from '../../../package.json' with { type: 'json' };
import { checkCsrf, type OriginPolicy } from '../../auth/csrf.ts';
import type { DeviceCookies } from '../../auth/device-cookie.ts';
import { createRateLimiter } from '../../auth/rate-limit.ts';
import type { AuthConfig, AuthMode } from '../../config/index.ts';
import type { AdapterService } from '../../domains/adapter/adapter-service.ts';
import type { AuditService } from '../../domains/audit/audit-service.ts';
import type { BrandingService } from '../../domains/branding/branding-service.ts';
import type { EnrollmentService } from '../../domains/enrollment/enrollment-service.ts';
import type { IngestService } from '../../domains/ingest/ingest-service.ts';
import type { DeskService } from '../../domains/investigations/desk-service.ts';
import type { InvestigationService } from '../../domains/investigations/investigation-service.ts';
import type { LlmService } from '../../domains/llm/llm-service.ts';
import type { NotificationService } from '../../domains/notifications/notification-service.ts';
import type { ReportService } from '../../domains/reports/report-service.ts';
import type { AuthService } from '../../domains/sessions/session-service.ts';
import type { SettingsService } from '../../domains/settings/settings-service.ts';
import type { TenantConfigService } from '../../domains/tenants/tenant-config-service.ts';
import type { TenantService } from '../../domains/tenants/tenant-service.ts';
import type { CrossTenantTriageService } from '../../domains/triage/cross-tenant-service.ts';
import type { TriageService } from '../../domains/triage/triage-service.ts';
import type { UserLifecycle } from '../../domains/users/user-lifecycle.ts';
import type { UserService } from '../../domains/users/user-service.ts';
import { DatabaseUnavailableError } from '../../faults/unavailable.ts';
import type { Logger } from '../../log/index.ts';
import { countingRefusals } from '../../metrics/counted.ts';
import { type Metrics, NO_METRICS } from '../../metrics/metrics.ts';
import type { TokenService } from '../../tokens/index.ts';
import { type AllowedMethods, allowedMethods } from '../allowed-methods.ts';
import { authRoutes } from '../auth/routes.ts';
import { authenticate } from '../authenticate.ts';
import { limitBody, MAX_BODY_BYTES } from '../body-limit.ts';
import { compilePath } from '../contract.ts';
import { domainProblem } from '../domain-problems.ts';
import { type StreamDeps, settleStreams } from '../event-stream.ts';
import { requireFamily, requirePasswordCurrent } from '../guards.ts';
import type { HostPolicy } from '../hosts.ts';
import { INTERNAL_BODY_LIMITS, internalRoutes } from '../internal/routes.ts';
import { brandingRoutes } from '../mssp/branding.ts';
import { configRoutes } from '../mssp/config.ts';
import { crossTenantRoutes } from '../mssp/cross-tenant.ts';
import { enrollmentRoutes } from '../mssp/enrollment.ts';
import { incidentRoutes } from '../mssp/incidents.ts';
import { llmRoutes } from '../mssp/llm.ts';
import { notificationRoutes } from '../mssp/notifications.ts';
import { reportRoutes } from '../mssp/reports.ts';
import { msspRoutes } from '../mssp/routes.ts';
import { settingsRoutes } from '../mssp/settings.ts';
import { triageRoutes } from '../mssp/triage.ts';
import { userLifecycleRoutes } from '../mssp/user-lifecycle.ts';
import { userManagementRoutes } from '../mssp/user-management.ts';
import { msspUserRoutes } from '../mssp/users.ts';
import { openApiDocument, referencePage } from '../openapi.ts';
import { ProblemError, problem } from '../problem.ts';
import { publicRoutes } from '../public/routes.ts';
import { peerAddress, requestId, trustedProxies } from '../request-id.ts';
import { authenticateService } from '../service-auth.ts';
import { tenantRoutes } from '../tenant/routes.ts';
import { type WebDeps, webRoutes } from '../web/spa.ts';

declare module 'hono' {
  interface ContextVariableMap {
    requestId: string;
  }
}

/** The domain services the routers call; built once in src/app/compose.ts. */
export interface ApiServices {
  sessions: AuthService;
  users: UserService;
  userLifecycle: UserLifecycle;
  settings: SettingsService;
  tenants: TenantService;
  audit: AuditService;
  adapter: AdapterService;
  ingest: IngestService;
  triage: TriageService;
  crossTenant: CrossTenantTriageService;
  /** The analyst's desk on one incident, and the customer's detail (docs/investigations.md). */
  desk: DeskService;
  investigations: InvestigationService;
  branding: BrandingService;
  llm: LlmService;
  tenantConfig: TenantConfigService;
  enrollment: EnrollmentService;
  notifications: NotificationService;
  reports: ReportService;
}

/** What the API needs beyond health: present in `svc serve`, absent in bare HTTP tests. */
export interface ApiDeps {
  auth: AuthConfig;
  origins: OriginPolicy;
  tokens: TokenService;
  /** The sign-in device cookies (docs/auth.md "Device cookie"). */
  devices: DeviceCookies;
  /** The hub and credential watch of the SSE endpoints (spec §5.7 item 8). */
  streams: StreamDeps;
  /** One connection and one transaction per authenticated request (src/db/unit-of-work.ts). */
  unitOfWork: <T>(fn: () => Promise<T>) => Promise<T>;
  /** The install's first edge port: tenants answer with their ports, not the pair index. */
  edgePortBase: number;
  /** Which tenant's portal a host names (the public branding lookup). */
  hosts: HostPolicy;
  services: ApiServices;
  now: () => Date;
}

export interface AppDeps {
  authMode: AuthMode;
  trustedProxyCidrs: readonly string[];
  logger: Logger;
  /** True when the database answers as svc_app. */
  databaseReady: () => Promise<boolean>;
  /** Requests by route template and the sign-in limiters' refusals; default none recorded. */
  metrics?: Pick<Metrics, 'httpRequest' | 'rateLimited'>;
  api?: ApiDeps;
  /** The built consoles, served for every other GET; absent in bare HTTP tests. */
  web?: WebDeps;
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The internal-auth endpoints of spec §4.1; in proxy mode each answers 404 (spec §7). */
const INTERNAL_AUTH_PATHS = ['/api/auth/*', '/api/mssp/users/:id/password/reset'];

/**
 * Configuration svc starts with but that cannot work as meant: logged once at start and listed
 * on /healthz, whose status stays `ok` (readiness must not pull every replica, and with it the
 * adapters' ingest and the service tokens, for what an operator has to fix).
 */
interface HealthWarning {
  code: 'no_trusted_proxies';
  message: string;
}

function healthWarnings(deps: AppDeps): HealthWarning[] {
  if (deps.authMode !== 'proxy' || deps.trustedProxyCidrs.length > 0) return [];
  return [
    {
      code: 'no_trusted_proxies',
      message:
        'SVC_AUTH_MODE=proxy but SVC_TRUSTED_PROXY_CIDRS is empty: identity headers are refused from every peer, so no user can sign in',
    },
  ];
}

export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  const proxies = trustedProxies(deps.trustedProxyCidrs);
  const warnings = healthWarnings(deps);
  for (const warning of warnings) deps.logger.warn({ code: warning.code }, warning.message);
  app.use(requestId(proxies));
  app.use(countRequests(deps.metrics ?? NO_METRICS, routeTemplates(contract)));
  app.use(requestLog(deps.logger));
  // Before every route, authentication and CSRF: no request body is ever held past the limit
  // (1 MiB; the adapter's alert batches 4 MiB).
  app.use(limitBody(MAX_BODY_BYTES, INTERNAL_BODY_LIMITS));
  // A known path asked with a method it does not answer is 405 with Allow (RFC 9110 §15.5.6),
  // before authentication: which routes exist is public (the OpenAPI document), so a wrong
  // method is the answer whoever asks. Filled in once every route is registered.
  let methods: AllowedMethods | undefined;
  app.use(async (c, next) => {
    if (!methods || methods.answers(c.req.method, c.req.path)) return next();
    const allow = methods.allowed(c.req.path);
    if (allow.length > 0) return methodNotAllowed(c, allow);
    return next();
  });
  mountPublic(app, deps, warnings);
  if (deps.api) mountApi(app, deps, deps.api, proxies);
  if (deps.web) app.route('/', webRoutes(deps.web));
  methods = allowedMethods(app, contract);
  app.notFound((c) => problem(c, 404, 'not_found', 'Not Found'));
  app.onError(answerError(deps.logger));
  return app;
}

/** Each contract route's Hono path → its contract path (`/api/mssp/tenants/{tenant_id}`). */
function routeTemplates(families: typeof contract): ReadonlyMap<string, string> {
  const templates = new Map<string, string>();
  for (const routes of Object.values(families)) {
    for (const r of Object.values(routes)) templates.set(compilePath(r.path).honoPath, r.path);
  }
  return templates;
}

/**
 * GET and HEAD requests other than the event streams and the GETs that write (`writes`, an
 * audited reveal): a session checked a moment ago may serve them while the database confirms it
 * in the same round trip as their first statement. A stream (and anything that changes state)
 * waits for the check: its effects outlast the transaction.
 */
function readsWithoutStream(families: typeof contract): (c: Context) => boolean {
  const streams: RegExp[] = [];
  for (const routes of Object.values(families)) {
    for (const r of Object.values(routes) as { path: string; stream?: string; writes?: true }[]) {
      if (r.stream || r.writes) streams.push(compilePath(r.path).pattern);
    }
  }
  return (c) => {
    const method = c.req.method;
    if (method !== 'GET' && method !== 'HEAD') return false;
    const path = c.req.path;
    return !streams.some((pattern) => pattern.test(path));
  };
}

/**
 * `svc_http_requests_total` and its latency by route template: the contract path a request
 * matched (other routes by their Hono pattern), never the raw URL, so the label set is bounded
 * by the routes svc has. Middleware is registered for ALL methods and is skipped; a request no
 * route answers is `unmatched`. A stream counts until its response opens.
 */
function countRequests(
  metrics: Pick<Metrics, 'httpRequest'>,
  templates: ReadonlyMap<string, string>,
): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    await next();
    metrics.httpRequest({
      route: routeTemplate(c, templates),
      method: c.req.method,
      status: c.res.status,
      seconds: (performance.now() - started) / 1000,
    });
  };
}

function routeTemplate(c: Context, templates: ReadonlyMap<string, string>): string {
  const route = matchedRoutes(c).find((r) => r.method !== 'ALL');
  if (!route) return 'unmatched';
  // The consoles' catch-all matches every GET: it names the request only when it served a page
  // (not an unknown /api path, nor one a middleware refused first).
  if (route.path.includes('*') && c.res.status >= 400) return 'unmatched';
  return templates.get(route.path) ?? route.path;
}

function requestLog(logger: Logger): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    await next();
    logger.info(
      {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        duration_ms: Math.round((performance.now() - started) * 10) / 10,
        remote: peerAddress(c),
      },
      'request',
    );
  };
}

function methodNotAllowed(c: Context, allow: string[]) {
  c.header('Allow', allow.join(', '));
  return problem(c, 405, 'method_not_allowed', 'Method Not Allowed');
}

/** Health and the contract: public and identical in both modes. */
function mountPublic(app: Hono, deps: AppDeps, warnings: HealthWarning[]): void {
  app.get('/healthz', async (c) => {
    const ready = await deps.databaseReady();
    return c.json(
      {
        status: ready ? 'ok' : 'degraded',
        auth_mode: deps.authMode,
        database: { ready },
        ...(warnings.length > 0 ? { warnings } : {}),
      },
      ready ? 200 : 503,
    );
  });
  const openapi = openApiDocument(contract, Problem, pkg.version);
  app.get('/api/openapi.json', (c) => c.json(openapi));
  app.get('/api/docs', (c) => c.html(referencePage(openapi)));
}

/**
 * Spec §5.6, both modes, before anything else looks at the request. The service family
 * accepts nothing a browser attaches by itself (only bearer tokens), so it is exempt.
 */
function csrf(origins: OriginPolicy, logger: Logger): MiddlewareHandler {
  return async (c, next) => {
    if (STATE_CHANGING.has(c.req.method) && !c.req.path.startsWith('/api/internal/')) {
      const verdict = checkCsrf(origins, c.req.header('origin'), c.req.header('referer'));
      if (!verdict.ok) {
        logger.warn({ reason: verdict.reason, origin: c.req.header('origin') }, 'csrf rejected');
        throw new ProblemError(403, 'csrf_rejected', 'Cross-site request refused', {
          detail: verdict.reason,
        });
      }
    }
    await next();
  };
}

function mountApi(
  app: Hono,
  deps: AppDeps,
  api: ApiDeps,
  proxies: ReturnType<typeof trustedProxies>,
): void {
  const { services } = api;
  app.use(csrf(api.origins, deps.logger));
  const auth = authRoutes({
    service: services.sessions,
    perIp: countingRefusals(
      createRateLimiter(api.auth.loginRateLimitPerIp, () => api.now().getTime()),
      'login_ip',
      deps.metrics ?? NO_METRICS,
    ),
    perEmail: countingRefusals(
      createRateLimiter(api.auth.loginRateLimitPerEmail, () => api.now().getTime()),
      'login_email',
      deps.metrics ?? NO_METRICS,
    ),
    proxies,
    devices: api.devices,
    now: api.now,
    branding: (host) => services.branding.readPublic(api.hosts.customerSlug(host)),
  });
  const internal = internalRoutes(services.adapter, services.ingest);
  // The adapter's bootstrap exchange authenticates with its own credential, not a token.
  app.route('/', internal.public);
  app.route('/', publicRoutes({ branding: services.branding, hosts: api.hosts }));
  if (deps.authMode === 'internal') app.route('/', auth.public);
  else {
    for (const path of INTERNAL_AUTH_PATHS) {
      app.all(path, (c) => problem(c, 404, 'not_found', 'Not Found'));
    }
  }
  const user = authenticate({
    mode: deps.authMode,
    auth: api.auth,
    sessions: services.sessions,
    proxies,
    logger: deps.logger,
    tokens: api.tokens,
    confirmLater: readsWithoutStream(contract),
  });
  // One connection and one transaction per authenticated request: the session check, the
  // identity, the tenant context and the handler's queries (src/db/unit-of-work.ts).
  const unit: MiddlewareHandler = (_c, next) => api.unitOfWork(() => next());
  // Outside the unit of work, so it runs after the commit: a sign-out, password change or
  // reset, deactivation, role change or suspension answers once this process's event streams
  // of that credential have ended (docs/auth.md; src/http/event-stream.ts).
  const revoking: MiddlewareHandler = async (c, next) => {
    await next();
    if (STATE_CHANGING.has(c.req.method) && c.res.status < 400) await settleStreams(api.streams);
  };
  app.use('/api/auth/*', revoking, unit, user, requirePasswordCurrent());
  app.use('/api/mssp/*', revoking, unit, user, requirePasswordCurrent(), requireFamily('mssp'));
  app.use('/api/tenant/*', unit, user, requirePasswordCurrent(), requireFamily('tenant'));
  app.use('/api/internal/*', authenticateService(api.tokens, deps.logger));
  app.route('/', internal.authenticated);
  app.route(
    '/',
    msspRoutes({
      tenants: services.tenants,
      ingest: services.ingest,
      audit: services.audit,
      streams: api.streams,
      edgePortBase: api.edgePortBase,
    }),
  );
  app.route('/', userManagementRoutes(services.users));
  app.route('/', userLifecycleRoutes(services.userLifecycle));
  app.route('/', settingsRoutes(services.settings));
  app.route('/', triageRoutes(services.triage));
  app.route('/', crossTenantRoutes(services.crossTenant));
  app.route('/', incidentRoutes(services.desk));
  app.route('/', reportRoutes(services.reports));
  app.route('/', llmRoutes(services.llm));
  app.route('/', notificationRoutes(services.notifications));
  app.route('/', brandingRoutes(services.branding));
  app.route('/', configRoutes(services.tenantConfig));
  app.route('/', enrollmentRoutes(services.enrollment));
  app.route('/', tenantRoutes({ ...services, streams: api.streams }));
  if (deps.authMode === 'internal') {
    app.route('/', auth.authenticated);
    app.route('/', msspUserRoutes(services.users));
  }
}

function answerError(logger: Logger) {
  return (error: Error, c: Context) => {
    if (error instanceof DatabaseUnavailableError) {
      logger.warn({ err: error.cause }, 'database unavailable');
      c.header('Retry-After', '1');
      return problem(c, 503, error.code, error.message);
    }
    const refusal = domainProblem(error, c);
    if (refusal) {
      for (const [name, value] of Object.entries(refusal.headers ?? {})) c.header(name, value);
      return problem(c, refusal.status, refusal.code, refusal.title, refusal.extra);
    }
    if (error instanceof ProblemError) {
      for (const [name, value] of Object.entries(error.headers)) c.header(name, value);
      return problem(c, error.status, error.code, error.title, error.extra);
    }
    logger.error({ err: error }, 'unhandled error');
    return problem(c, 500, 'internal', 'Internal Server Error');
  };
}
