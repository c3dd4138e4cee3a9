import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Hono } from 'hono';
import pg from 'pg';
import { TenantState } from '../../contracts/mssp.ts';
import { createOriginPolicy, type OriginPolicy } from '../auth/csrf.ts';
import { createDeviceCookies, type DeviceCookies, deriveDeviceKey } from '../auth/device-cookie.ts';
import { createPasswordHasher, type HashParams, type PasswordHasher } from '../auth/passwords.ts';
import { createNamespaceStore } from '../cluster/namespaces.ts';
import { createSecretStore, loadKubeConfig, type SecretStore } from '../cluster/secrets.ts';
import type { Config } from '../config/index.ts';
import { openWorkerLiveness } from '../db/job-queue-liveness.ts';
import { migrate } from '../db/migrate.ts';
import { type AppDatabase, createAppDatabase } from '../db/pools.ts';
import { type DatabaseRuntime, openDatabase } from '../db/runtime.ts';
import { createSystemGate, type SystemGate } from '../db/system-gate.ts';
import { clientConfig, type DatabaseTarget } from '../db/target.ts';
import { afterCommit } from '../db/unit-of-work.ts';
import {
  createAdapterService,
  issueBootstrapCredential,
} from '../domains/adapter/adapter-service.ts';
import { type AuditRetention, createAuditRetention } from '../domains/audit/audit-retention.ts';
import { createAuditService } from '../domains/audit/audit-service.ts';
import { createBrandingService } from '../domains/branding/branding-service.ts';
import { createEnrollmentService } from '../domains/enrollment/enrollment-service.ts';
import { createEventHub, type EventHub } from '../domains/events/index.ts';
import { createIngestService } from '../domains/ingest/ingest-service.ts';
import { createIngestRateLimiter } from '../domains/ingest/rate-limit.ts';
import { createDeskService } from '../domains/investigations/desk-service.ts';
import { createInvestigationService } from '../domains/investigations/investigation-service.ts';
import { queueDepth } from '../domains/jobs/job-repository.ts';
import { createJobService } from '../domains/jobs/job-service.ts';
import { createLlmService, type LlmService } from '../domains/llm/llm-service.ts';
import {
  createNotificationService,
  type NotificationService,
} from '../domains/notifications/notification-service.ts';
import { createTenantComponents } from '../domains/pipeline/components.ts';
import {
  createPipelineService,
  type PipelineService,
} from '../domains/pipeline/pipeline-service.ts';
import { checkPolicy } from '../domains/pipeline/redaction.ts';
import {
  createProjectionService,
  type ProjectionService,
} from '../domains/projections/projection-service.ts';
import {
  createProvisioningService,
  tenantTransitions,
} from '../domains/provisioning/provisioning-service.ts';
import { createReportService } from '../domains/reports/report-service.ts';
import {
  type CredentialWatch,
  createCredentialWatch,
} from '../domains/sessions/credential-watch.ts';
import { countLiveSessions, purgeEndedSessions } from '../domains/sessions/session-repository.ts';
import { createAuthService } from '../domains/sessions/session-service.ts';
import { readAuditRetentionDays } from '../domains/settings/settings-repository.ts';
import { createSettingsService } from '../domains/settings/settings-service.ts';
import { createTenantConfigService } from '../domains/tenants/tenant-config-service.ts';
import { countByState } from '../domains/tenants/tenant-repository.ts';
import { createTenantService } from '../domains/tenants/tenant-service.ts';
import { createJobSuspensionGate } from '../domains/tenants/tenant-suspension.ts';
import { createCrossTenantTriageService } from '../domains/triage/cross-tenant-service.ts';
import { createTriageService } from '../domains/triage/triage-service.ts';
import { createUserLifecycle } from '../domains/users/user-lifecycle.ts';
import { createUserService } from '../domains/users/user-service.ts';
import { createHostPolicy } from '../http/hosts.ts';
import { type ApiServices, createApp } from '../http/server/app.ts';
import { WEB_DIST_DIR } from '../http/web/spa.ts';
import type { Logger } from '../log/index.ts';
import {
  countingIngest,
  countingPurges,
  countingSignIns,
  countingTakes,
} from '../metrics/counted.ts';
import {
  createMetricsRegistry,
  type MetricsRegistry,
  type ScrapeSources,
} from '../metrics/registry.ts';
import { type OutboundPolicy, type SafeFetchInit, safeFetch } from '../net/outbound-url.ts';
import type { OrchestratorDeps, OrchestratorTiming, TenancyDeps } from '../orchestrator/context.ts';
import { enrollmentCluster } from '../orchestrator/enrollment-cluster.ts';
import { ensureInstall } from '../orchestrator/install.ts';
import { createOrchestrator } from '../orchestrator/orchestrator.ts';
import { loadTenantCatalog } from '../orchestrator/package-source.ts';
import { orchestratorDeps, SYSTEM_VERSION, type TenancyRuntime } from '../orchestrator/runtime.ts';
import { createTenantLocks } from '../orchestrator/tenant-locks.ts';
import { valuesPreview } from '../orchestrator/values-preview.ts';
import { createProjector, type Projector } from '../projector/projector.ts';
import {
  createTokenService,
  loadOrCreateSigningKey,
  type SigningKey,
  signingKeyFromPem,
  type TokenService,
} from '../tokens/index.ts';
import { auditPurgeSchedule } from '../workers/jobs/audit-purge.ts';
import { pipelineJobs } from '../workers/jobs/pipeline-jobs.ts';
import { webhookJobs, webhookSweepSchedule } from '../workers/jobs/webhook-jobs.ts';
import {
  createWorkerRuntime,
  type JobHandler,
  type Schedule,
  type WorkerRuntime,
} from '../workers/runtime.ts';

/**
 * The object graph of one svc process, built here once: `svc serve`, `svc orchestrator`, the
 * operator commands, the tests' harnesses and every benchmark take their parts from it.
 */
export interface CoreInput {
  config: Config;
  logger: Logger;
  target: DatabaseTarget;
  /** Tests move time by hand; everything else reads the wall clock. */
  now?: () => Date;
  /** Production hashes with PASSWORD_PARAMS; tests that do not test hashing pass cheaper ones. */
  hashParams?: HashParams;
  signingKey?: SigningKey;
  poolSize?: number;
  /** A pool the caller already holds (a test database's), instead of a new one. */
  db?: AppDatabase;
  /** The process's metrics; default a fresh registry without process metrics. */
  metrics?: MetricsRegistry;
}

export interface Core {
  config: Config;
  logger: Logger;
  target: DatabaseTarget;
  now: () => Date;
  db: AppDatabase;
  system: SystemGate;
  hasher: PasswordHasher;
  tokens: TokenService;
  /** Signs and checks the sign-in device cookies (docs/auth.md "Device cookie"). */
  devices: DeviceCookies;
  /** One registry per process: every part records into it, `/metrics` reads it. */
  metrics: MetricsRegistry;
  close(): Promise<void>;
}

export async function composeCore(input: CoreInput): Promise<Core> {
  const { config } = input;
  const now = input.now ?? (() => new Date());
  // First, so an unreadable key leaves no pool behind.
  const key = input.signingKey ?? (await signingKey(config));
  const db = input.db ?? createAppDatabase(input.target, input.poolSize);
  const system = createSystemGate(input.target);
  const hasher = createPasswordHasher({
    concurrency: config.auth.hashConcurrency,
    queue: config.auth.hashQueue,
    ...(input.hashParams ? { params: input.hashParams } : {}),
  });
  return {
    config,
    logger: input.logger,
    target: input.target,
    now,
    db,
    system,
    hasher,
    tokens: createTokenService({ key, now }),
    devices: createDeviceCookies({ key: await deriveDeviceKey(key.privateKey), now }),
    metrics: input.metrics ?? createMetricsRegistry(),
    close: async () => {
      // A borrowed pool stays open: its owner closes it.
      await Promise.all([input.db ? undefined : db.close(), system.close()]);
    },
  };
}

async function signingKey(config: Config): Promise<SigningKey> {
  const source = config.tokenKey;
  if (source.kind === 'pem') return signingKeyFromPem(source.pem, 'SVC_TOKEN_SIGNING_KEY');
  if (source.kind === 'file') {
    return signingKeyFromPem(await readFile(source.path, 'utf8'), source.path);
  }
  return loadOrCreateSigningKey(config.dataDir);
}

export interface ApiInput {
  /** Which browser origins may change state (CSRF); from the configured hostnames otherwise. */
  origins?: OriginPolicy;
  /** Install-namespace Secrets (tenant creation); absent when svc has no cluster. */
  secrets?: SecretStore | undefined;
  /** The orchestrator's side of the tenant operations; absent when svc has no cluster. */
  tenancy?: TenancyDeps | undefined;
  /** The event hub's heartbeat (tests use a short one). */
  heartbeatMs?: number;
  /** The embedded database answers loopback origins when no hostname is configured. */
  embedded?: boolean;
  /** `<slug>.localhost` names a portal; default: on the embedded database without hostnames. */
  localSubdomains?: boolean;
  /** The built consoles; default web/dist of this checkout. */
  webRoot?: string;
}

export interface Api {
  app: Hono;
  services: ApiServices;
  events: EventHub;
  watch: CredentialWatch;
  origins: OriginPolicy;
  close(): Promise<void>;
}

/** Every domain service the API calls, over the core's database, gate, hasher and clock. */
export function composeServices(core: Core, input: ApiInput = {}): ApiServices {
  const { db, system, hasher, now, tokens, config, metrics } = core;
  const authMode = config.authMode;
  const policy = outboundPolicy(config);
  const tenantConfig = createTenantConfigService({
    db,
    secrets: input.secrets,
    checks: { outbound: config.outbound, preview: input.tenancy?.previewValues },
    kick: input.tenancy ? () => input.tenancy?.kick() : undefined,
  });
  return {
    sessions: countingSignIns(createAuthService({ db, hasher, now, authMode, metrics }), metrics),
    users: createUserService({ db, system, hasher, now, authMode }),
    userLifecycle: createUserLifecycle({ db, now }),
    settings: createSettingsService({ db, now }),
    tenants: createTenantService({
      db,
      system,
      tokens,
      secrets: input.secrets,
      checks: { outbound: config.outbound, preview: input.tenancy?.previewValues },
      issueBootstrapCredential,
      decommissionGraceMs:
        input.tenancy?.decommissionGraceMs ?? config.orchestrator.decommissionGraceMs,
      upgrades: input.tenancy,
      transitions: tenantTransitions,
      kick: () => input.tenancy?.kick(),
    }),
    audit: createAuditService({ db, system }),
    adapter: createAdapterService({ db, tokens, now }),
    ingest: countingIngest(
      createIngestService({
        db,
        limiter: countingTakes(
          createIngestRateLimiter(config.ingest, () => now().getTime()),
          'ingest',
          metrics,
        ),
        triageDelayMs: config.worker.triageDelayMs,
        now,
      }),
      metrics,
    ),
    triage: createTriageService({ db, now }),
    crossTenant: createCrossTenantTriageService({ system }),
    // Work answers read-your-writes: the request folds the tenant's events itself.
    desk: createDeskService({ db, readModel: createProjectionService({ db, system }) }),
    investigations: createInvestigationService({ db, now }),
    reports: createReportService({ db, system, now }),
    branding: createBrandingService({ db, revise: tenantConfig.brandingChanged }),
    tenantConfig,
    llm: composeLlm(core, input.secrets, policy),
    enrollment: createEnrollmentService({
      db,
      secrets: input.secrets,
      cluster: input.tenancy?.enrollment,
      now,
    }),
    notifications: composeNotifications(core, input.secrets, policy),
  };
}

/** The HTTP app over the core: routes, their services and the event hub for the streams. */
export async function composeApi(core: Core, input: ApiInput = {}): Promise<Api> {
  const { config, logger, db } = core;
  const events = await createEventHub({
    target: core.target,
    db,
    ...(input.heartbeatMs !== undefined ? { heartbeatMs: input.heartbeatMs } : {}),
    onError: (error, context) => logger.warn({ err: error, context }, 'event hub recovered'),
  });
  const watch = createCredentialWatch({ db, now: core.now, authMode: config.authMode });
  // Revocation notices reach the watch on the hub's LISTEN connection, in commit order with
  // the event notices (docs/auth.md, open event streams); after a lost connection every credential
  // is re-read.
  events.watch({
    notice: () => undefined,
    revocation: (hint) => watch.revoked(hint),
    reconnected: () => watch.recheckAll(),
  });
  const localDefault =
    (input.embedded ?? false) && !config.auth.msspHostname && !config.auth.customerHostname;
  const origins =
    input.origins ??
    createOriginPolicy({
      msspHostname: config.auth.msspHostname,
      customerHostname: config.auth.customerHostname,
      allowLoopback: localDefault,
    });
  const hosts = createHostPolicy({
    customerHostname: config.auth.customerHostname,
    localSubdomains: input.localSubdomains ?? localDefault,
  });
  const services = composeServices(core, input);
  core.metrics.read(scrapeSources(core, events));
  const app = createApp({
    authMode: config.authMode,
    trustedProxyCidrs: config.trustedProxyCidrs,
    logger,
    metrics: core.metrics,
    databaseReady: db.ping,
    api: {
      auth: config.auth,
      origins,
      tokens: core.tokens,
      devices: core.devices,
      streams: { events, watch },
      unitOfWork: db.unitOfWork,
      edgePortBase: input.tenancy?.edgePortBase ?? config.orchestrator.edgePortBase,
      hosts,
      services,
      now: core.now,
    },
    web: { root: input.webRoot ?? WEB_DIST_DIR, hosts },
  });
  return {
    app,
    services,
    events,
    watch,
    origins,
    close: () => events.close(),
  };
}

/**
 * What an API process reports at scrape time: install-wide counts read as svc_app (every API
 * replica reports the same figures; aggregate them with max) and this process's SSE streams.
 */
function scrapeSources(core: Core, events: EventHub): ScrapeSources {
  const { db, now } = core;
  const states = TenantState.anyOf.map((literal) => literal.const);
  return {
    sessionsLive: () => db.withoutTenant((tx) => countLiveSessions(tx, now())),
    tenantsByState: async () => {
      const rows = await db.withoutTenant((tx) => countByState(tx));
      const counts = Object.fromEntries(states.map((state): [string, number] => [state, 0]));
      for (const row of rows) counts[row.state] = row.n;
      return counts;
    },
    jobQueue: () => db.withoutTenant((tx) => queueDepth(tx)),
    sseSubscribers: () => events.status().subscribers,
  };
}

export interface OrchestrationInput {
  kubeConfig: KubeConfig;
  /** Install-namespace Secrets; shared with tenant creation. */
  secrets: SecretStore;
  /** The identity helm acts as; default helm's own (in-cluster or $KUBECONFIG). */
  kubeconfigPath?: string | undefined;
  /** Timings the configuration does not expose (tests shorten them all). */
  timing?: Partial<OrchestratorTiming> | undefined;
  /** Start the loop (false: the caller drives runOnce, as tests do); default the configuration. */
  run?: boolean | undefined;
  /** Wraps the assembled dependencies (the provisioning benchmark times the cluster calls). */
  instrument?: ((deps: OrchestratorDeps) => OrchestratorDeps) | undefined;
}

/**
 * The orchestrator over the core: the install record, the chart catalog, its dependencies,
 * the per-tenant locks and the loop, plus what the tenant service needs from it.
 */
export async function composeOrchestration(
  core: Core,
  input: OrchestrationInput,
): Promise<TenancyRuntime> {
  const { config } = core;
  const o = config.orchestrator;
  const install = await ensureInstall(core.target, config.install);
  const catalog = await loadTenantCatalog({
    orchestrator: o,
    dataDir: config.dataDir,
    logger: core.logger,
  });
  const provisioning = createProvisioningService({
    db: core.db,
    system: core.system,
    issueBootstrapCredential,
  });
  const assembled = orchestratorDeps({ ...core, ...input, install, catalog, provisioning });
  const deps = input.instrument ? input.instrument(assembled) : assembled;
  const locks = createTenantLocks(core.target);
  const orchestrator = createOrchestrator({ ...deps, locks, concurrency: o.concurrency });
  if (input.run ?? o.enabled) orchestrator.start();
  return {
    orchestrator,
    deps,
    api: {
      // A request's writes commit when it ends (one unit of work): wake the orchestrator after.
      kick: () => afterCommit(() => orchestrator.kick()),
      systemVersion: SYSTEM_VERSION,
      edgePortBase: o.edgePortBase,
      decommissionGraceMs: deps.timing.decommissionGraceMs,
      catalog,
      previewValues: valuesPreview(deps),
      enrollment: enrollmentCluster(deps),
    },
    async stop() {
      await orchestrator.stop();
      await locks.close();
    },
  };
}

/** The cluster side when svc has a cluster (in-cluster or KUBECONFIG): Secrets and orchestrator. */
export async function composeTenancy(
  core: Core,
  input: { run?: boolean } = {},
): Promise<{ secrets: SecretStore; tenancy: TenancyRuntime } | undefined> {
  const kubeConfig = loadKubeConfig();
  if (!kubeConfig) return undefined;
  const secrets = createSecretStore(kubeConfig, core.config.installNamespace);
  const tenancy = await composeOrchestration(core, { kubeConfig, secrets, run: input.run });
  return { secrets, tenancy };
}

/** The audit retention purge over the core's gate and clock (the schedule, `svc audit purge`). */
export function composeAuditRetention(
  core: Core,
  input: { batchSize?: number } = {},
): AuditRetention {
  return countingPurges(
    createAuditRetention({
      system: core.system,
      now: core.now,
      retentionDays: readAuditRetentionDays,
      purgeSessions: purgeEndedSessions,
      ...input,
    }),
    core.metrics,
  );
}

/** The projections domain over the core (the projector's folds, `svc projections rebuild`). */
export function composeProjections(
  core: Core,
  input: { batchSize?: number } = {},
): ProjectionService {
  return createProjectionService({ db: core.db, system: core.system, ...input });
}

export interface ProjectorInput {
  /** The process's event hub (composeApi's); without one the projector opens its own. */
  events?: EventHub | undefined;
  /** Start the loop (false: the caller starts it); default the configuration (SVC_PROJECTOR). */
  run?: boolean | undefined;
  /** Tests shorten the sweep and the batch. */
  sweepMs?: number;
  batchSize?: number;
}

export interface ProjectorRuntime {
  projector: Projector;
  projections: ProjectionService;
  stop(): Promise<void>;
}

/** The projector over the core: folds every tenant's new events into the projections. */
export async function composeProjector(
  core: Core,
  input: ProjectorInput = {},
): Promise<ProjectorRuntime> {
  const { config, logger } = core;
  const events =
    input.events ??
    (await createEventHub({
      target: core.target,
      db: core.db,
      onError: (error, context) => logger.warn({ err: error, context }, 'event hub recovered'),
    }));
  const own = input.events ? undefined : events;
  const projections = composeProjections(
    core,
    input.batchSize !== undefined ? { batchSize: input.batchSize } : {},
  );
  const projector = createProjector({
    projections,
    events,
    logger,
    sweepMs: input.sweepMs ?? config.projector.sweepMs,
    concurrency: config.projector.concurrency,
    metrics: core.metrics,
  });
  core.metrics.read({ projectorLag: () => projector.lag(0) });
  try {
    if (input.run ?? config.projector.enabled) await projector.start();
  } catch (error) {
    await own?.close();
    throw error;
  }
  return {
    projector,
    projections,
    async stop() {
      await projector.stop();
      await own?.close();
    },
  };
}

/** The outbound policy with its extra CA read (once per composition; a bad path fails start). */
function outboundPolicy(config: Config): OutboundPolicy {
  const { caFile, ...rest } = config.outbound;
  return caFile ? { ...rest, ca: readFileSync(caFile, 'utf8') } : rest;
}

/**
 * The LLM domain: tenant settings over the install defaults, keys from the install
 * namespace's Secrets, calls under the outbound policy. Built here only, so the API and the
 * pipeline of one `svc serve` can share one instance (one key cache) instead of two copies.
 */
function composeLlm(
  core: Core,
  secrets: SecretStore | undefined,
  policy: OutboundPolicy,
): LlmService {
  const { config } = core;
  return createLlmService({
    db: core.db,
    secrets,
    defaults: config.orchestrator.defaultLlm,
    fetch: (url, init) => safeFetch(url, init, policy),
    now: core.now,
    prices: config.worker.llmPrices,
    timeoutMs: config.worker.llmTimeoutMs,
    logger: core.logger,
    checkPolicy,
    metrics: core.metrics,
  });
}

/**
 * Outbound webhooks: signing secrets in the install namespace's Secrets (none without a
 * cluster: docs/notifications.md), every send under the outbound policy.
 */
export function composeNotifications(
  core: Core,
  secrets: SecretStore | undefined,
  policy: OutboundPolicy = outboundPolicy(core.config),
): NotificationService {
  return createNotificationService({
    db: core.db,
    secrets,
    policy,
    now: core.now,
    logger: core.logger,
  });
}

export interface PipelineInput {
  /** The cluster holding the install's and tenants' Secrets; default the ambient kubeconfig. */
  kubeConfig?: KubeConfig | undefined;
  /** An LLM service composed already (the API's, in `svc serve`); default a new one. */
  llm?: LlmService | undefined;
}

/**
 * The triage pipeline over the core: the LLM domain (tenant settings over the install
 * defaults, keys from the install namespace's Secrets, calls under the outbound policy) and the
 * tenant components (cases, analysis) resolved per job.
 */
export function composePipeline(core: Core, input: PipelineInput = {}): PipelineService {
  const { config, db } = core;
  const kubeConfig = 'kubeConfig' in input ? input.kubeConfig : loadKubeConfig();
  const namespaces = kubeConfig ? createNamespaceStore(kubeConfig) : undefined;
  const policy = outboundPolicy(config);
  const outbound = (url: string, init: SafeFetchInit) => safeFetch(url, init, policy);
  const llm =
    input.llm ??
    composeLlm(
      core,
      kubeConfig ? createSecretStore(kubeConfig, config.installNamespace) : undefined,
      policy,
    );
  const components = createTenantComponents({
    db,
    installNamespace: config.installNamespace,
    readSecret: namespaces ? (ns, name) => namespaces.readSecret(ns, name) : undefined,
    fetch: { inCluster: (url, init) => fetch(url, init), outbound },
  });
  return createPipelineService({ db, llm, components });
}

export interface WorkersInput {
  /** The job table; default every svc job (the pipeline's, composePipeline). */
  pipeline?: PipelineInput;
  jobs?: Readonly<Record<string, JobHandler>>;
  /** Install-scoped work on a clock; default the daily audit retention purge. */
  schedules?: readonly Schedule[];
  /** Start taking jobs (false: the caller starts them); default true. */
  run?: boolean;
  concurrency?: number;
  /** Default SVC_WORKER_REAP_EVERY / SVC_WORKER_REAP_GRACE (config.worker); tests shorten them. */
  reapEveryMs?: number;
  reapGraceMs?: number;
  pollIntervalMs?: number;
}

export interface Workers {
  runtime: WorkerRuntime;
  /** False once the liveness connection is lost (job-queue-liveness.ts `lost`). */
  healthy(): boolean;
  stop(): Promise<void>;
}

/**
 * The job workers over the core: a queue pool of svc_app connections (the queue's own
 * traffic, kept apart from the handlers' pool), liveness locks, and the Worker-JWT dispatch.
 */
export async function composeWorkers(core: Core, input: WorkersInput = {}): Promise<Workers> {
  const { config, logger } = core;
  const concurrency = input.concurrency ?? config.worker.concurrency;
  // Direct even behind a pooler (docs/operations.md "Connection pooling"): graphile-worker
  // LISTENs for new jobs on this pool and prepares its statements, the liveness lock is a
  // session advisory lock.
  const app = clientConfig(core.target, 'app');
  const pool = new pg.Pool({ ...app, application_name: 'svc-worker', max: concurrency + 2 });
  // A dropped connection is the queue's to retry; it must not crash the process.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  const liveness = await openWorkerLiveness(app);
  const jobService = createJobService({ db: core.db });
  // The signing secrets' Secrets, as the pipeline reads the tenants' keys: the ambient cluster.
  const kubeConfig = loadKubeConfig();
  const notifications = composeNotifications(
    core,
    kubeConfig ? createSecretStore(kubeConfig, config.installNamespace) : undefined,
  );
  const runtime = createWorkerRuntime({
    pool,
    tokens: core.tokens,
    jobs: input.jobs ?? {
      ...pipelineJobs(
        composePipeline(core, input.pipeline),
        createJobSuspensionGate({ db: core.db }),
      ),
      ...webhookJobs(notifications),
    },
    schedules: input.schedules ?? [
      auditPurgeSchedule(composeAuditRetention(core), logger),
      webhookSweepSchedule(notifications, logger),
    ],
    refusals: { record: (refusal) => jobService.recordRefusal(refusal) },
    metrics: core.metrics,
    liveness,
    logger,
    concurrency,
    reapEveryMs: input.reapEveryMs ?? config.worker.reapEveryMs,
    reapGraceMs: input.reapGraceMs ?? config.worker.reapGraceMs,
    ...(input.pollIntervalMs !== undefined ? { pollIntervalMs: input.pollIntervalMs } : {}),
  });
  try {
    if (input.run ?? true) await runtime.start();
  } catch (error) {
    await liveness.close();
    await pool.end();
    throw error;
  }
  return {
    runtime,
    healthy: () => !liveness.lost(),
    async stop() {
      await runtime.stop();
      await pool.end();
    },
  };
}

export interface OpenOptions {
  /**
   * `always` for the server roles; `embedded` for the operator commands: the embedded database
   * is svc's own (an account can be made before the first start: docs/operations.md), an external
   * one is left to `svc migrate`.
   */
  migrate?: 'always' | 'embedded';
  poolSize?: number;
  /** The server roles: Node's process metrics (`svc_process_*`, `svc_nodejs_*`) too. */
  processMetrics?: boolean;
}

function poolSizeOption(poolSize: number | undefined): { poolSize?: number } {
  return poolSize === undefined ? {} : { poolSize };
}

/** A process's database: embedded or external, migrated, with the core over it. */
export async function openCore(
  config: Config,
  logger: Logger,
  options: OpenOptions = {},
): Promise<Core & { runtime: DatabaseRuntime }> {
  const runtime = await openDatabase(config, logger);
  try {
    if ((options.migrate ?? 'always') === 'always' || runtime.embedded) {
      const result = await migrate(clientConfig(runtime.target, 'admin'));
      logger.info(
        { applied: result.applied, compatibility_synced: result.compatibilitySynced },
        'migrated',
      );
    }
    const core = await composeCore({
      config,
      logger,
      target: runtime.target,
      // The command's own size (a one-off command's 2), else SVC_DATABASE_POOL_MAX, else 10.
      ...poolSizeOption(options.poolSize ?? config.database.poolMax),
      metrics: createMetricsRegistry({ processMetrics: options.processMetrics ?? false }),
    });
    return {
      ...core,
      runtime,
      close: async () => {
        await core.close();
        await runtime.stop();
      },
    };
  } catch (error) {
    await runtime.stop();
    throw error;
  }
}
