import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import type { Metrics } from './metrics.ts';

/** One sample of a gauge read at scrape time. */
export interface GaugeSample {
  labels?: Record<string, string>;
  value: number;
}

/**
 * Values only the database or the process knows at the moment of a scrape. Each is read
 * once per scrape, bounded by the read timeout; a process supplies the ones it has.
 */
export interface ScrapeSources {
  /** Sessions neither revoked nor expired, install-wide. */
  sessionsLive: () => Promise<number>;
  /** Tenants per lifecycle state, install-wide (every known state, zeros included). */
  tenantsByState: () => Promise<Record<string, number>>;
  /** graphile-worker jobs by task and state (ready, scheduled, locked, failed). */
  jobQueue: () => Promise<{ task: string; state: string; jobs: number }[]>;
  /** Server-sent-event subscribers connected to this process. */
  sseSubscribers: () => number;
  /**
   * This process's projector: tenants with events not yet folded, and the worst one's lag (the
   * age of its oldest unfolded event, s). Per-tenant figures are no label (1,000 tenants): the
   * projector names the worst in its log (docs/projections.md "Lag").
   */
  projectorLag?: () => { behind: number; maxSeconds: number };
}

export interface MetricsRegistry extends Metrics {
  /** Adds (or replaces) scrape-time sources; a gauge without one shows no sample. */
  read(sources: Partial<ScrapeSources>): void;
  /** The Prometheus text exposition of everything registered. */
  scrape(): Promise<{ contentType: string; body: string }>;
}

export interface MetricsOptions {
  /** Node process metrics (CPU, memory, event loop, GC) as `svc_*`: one process, one set. */
  processMetrics?: boolean;
  /** How long one scrape-time read may take before its gauge is left out. Default 2 s. */
  readTimeoutMs?: number;
}

const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const STEP_BUCKETS = [0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1200];
const JOB_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const PROJECTION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900];

/**
 * One registry per process (never prom-client's global one, so a test can build several apps
 * side by side): the counters and histograms the parts record into, and the gauges read at
 * scrape time.
 */
export function createMetricsRegistry(options: MetricsOptions = {}): MetricsRegistry {
  const registry = new Registry();
  const registers = [registry];
  if (options.processMetrics) collectDefaultMetrics({ register: registry, prefix: 'svc_' });
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Counter<L>({ name, help, labelNames, registers });
  const histogram = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    buckets: number[],
  ) => new Histogram<L>({ name, help, labelNames, buckets, registers });

  const requests = counter('svc_http_requests_total', 'HTTP requests answered on the API port', [
    'route',
    'method',
    'status',
  ]);
  const latency = histogram(
    'svc_http_request_duration_seconds',
    'Time to the response headers of an API request (a stream counts until it opens)',
    ['route', 'method', 'status'],
    LATENCY_BUCKETS,
  );
  const signIns = counter('svc_sign_ins_total', 'Password sign-in attempts by outcome', [
    'outcome',
  ]);
  const lockouts = counter('svc_lockouts_total', 'Accounts locked after repeated failures', []);
  const limited = counter('svc_rate_limited_total', 'Requests refused by a rate limiter', [
    'limiter',
  ]);
  const steps = histogram(
    'svc_provisioning_step_duration_seconds',
    'Provisioning steps run by the orchestrator, by step and outcome',
    ['step', 'outcome'],
    STEP_BUCKETS,
  );
  const kubeRequests = counter(
    'svc_kube_requests_total',
    'Requests sent to the Kubernetes API server by the orchestrator, by verb and resource',
    ['verb', 'resource'],
  );
  const jobs = histogram(
    'svc_job_duration_seconds',
    'Job attempts run by this process, by task and outcome',
    ['task', 'outcome'],
    JOB_BUCKETS,
  );
  const jobsFailed = counter('svc_jobs_failed_total', 'Jobs that used their last attempt', [
    'task',
  ]);
  const alerts = counter('svc_ingest_alerts_total', 'Alerts of adapter batches by outcome', [
    'outcome',
  ]);
  const tokens = counter('svc_llm_tokens_total', 'LLM tokens used, by tenant id and kind', [
    'tenant',
    'kind',
  ]);
  const cost = counter('svc_llm_cost_usd_total', 'LLM cost in USD (SVC_LLM_PRICES) by tenant id', [
    'tenant',
  ]);
  const sessionsPurged = counter(
    'svc_sessions_purged_total',
    'Sessions deleted by the retention purge (ended before its cutoff)',
    [],
  );
  const projectionDelay = histogram(
    'svc_projection_delay_seconds',
    "Events folded by this process's projector: from the event's append to the fold's commit",
    [],
    PROJECTION_BUCKETS,
  );
  const readErrors = counter(
    'svc_metrics_read_errors_total',
    'Scrape-time reads that failed or timed out (their gauge was left out of that scrape)',
    ['gauge'],
  );

  const sources: Partial<ScrapeSources> = {};
  const timeoutMs = options.readTimeoutMs ?? 2_000;
  const refreshes: (() => Promise<void>)[] = [];
  const gauge = (name: string, help: string, read: () => Promise<GaugeSample[] | undefined>) => {
    const metric = scrapeGauge(name, help);
    registry.registerMetric(metric);
    refreshes.push(async () => {
      try {
        metric.samples = await withTimeout(read(), timeoutMs);
      } catch {
        metric.samples = undefined;
        readErrors.inc({ gauge: name });
      }
    });
  };
  gauge('svc_sessions_live', 'Sessions neither revoked nor expired (install-wide)', async () => {
    const read = sources.sessionsLive;
    return read && [{ value: await read() }];
  });
  gauge('svc_tenants', 'Tenants by lifecycle state (install-wide)', async () => {
    const read = sources.tenantsByState;
    if (!read) return undefined;
    return Object.entries(await read()).map(([state, value]) => ({ labels: { state }, value }));
  });
  gauge('svc_job_queue_jobs', 'Jobs in the queue by task and state (install-wide)', async () => {
    const read = sources.jobQueue;
    if (!read) return undefined;
    return (await read()).map(({ task, state, jobs }) => ({
      labels: { task, state },
      value: jobs,
    }));
  });
  gauge(
    'svc_projection_lag_seconds',
    "Age of the oldest event not yet folded, worst tenant this process's projector knows of (0: caught up)",
    async () => {
      const read = sources.projectorLag;
      return read && [{ value: read().maxSeconds }];
    },
  );
  gauge(
    'svc_projection_tenants_behind',
    "Tenants with events this process's projector has not folded yet",
    async () => {
      const read = sources.projectorLag;
      return read && [{ value: read().behind }];
    },
  );
  gauge('svc_sse_subscribers', 'Event-stream subscribers connected to this process', async () => {
    const read = sources.sseSubscribers;
    return read && [{ value: read() }];
  });

  return {
    httpRequest({ route, method, status, seconds }) {
      const labels = {
        route,
        method: HTTP_METHODS.has(method) ? method : 'OTHER',
        status: String(status),
      };
      requests.inc(labels);
      latency.observe(labels, seconds);
    },
    signIn: (outcome) => signIns.inc({ outcome }),
    lockout: () => lockouts.inc(),
    rateLimited: (limiter) => limited.inc({ limiter }),
    provisioningStep: (step, outcome, seconds) => steps.observe({ step, outcome }, seconds),
    kubeRequest: (verb, resource) => kubeRequests.inc({ verb, resource }),
    jobRun: (task, outcome, seconds) => jobs.observe({ task, outcome }, seconds),
    jobFailed: (task) => jobsFailed.inc({ task }),
    alerts(outcome, count) {
      if (count > 0) alerts.inc({ outcome }, count);
    },
    llmUsage(tenant, usage) {
      tokens.inc({ tenant, kind: 'input' }, usage.inputTokens);
      tokens.inc({ tenant, kind: 'output' }, usage.outputTokens);
      cost.inc({ tenant }, usage.cost);
    },
    sessionsPurged(count) {
      if (count > 0) sessionsPurged.inc(count);
    },
    projectionFolded(delays) {
      for (const seconds of delays) projectionDelay.observe(seconds);
    },
    read: (added) => Object.assign(sources, added),
    async scrape() {
      // The reads first, so a failure shows in this scrape's error counter.
      await Promise.all(refreshes.map((refresh) => refresh()));
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

type RegisteredMetric = Parameters<Registry['registerMetric']>[0];

/**
 * A gauge showing the samples of the last read. Written against prom-client's metric shape
 * rather than its Gauge: a Gauge without labels always shows a value (0 after a reset), and a
 * failed read must show none (stale in Prometheus, not a false zero).
 */
function scrapeGauge(
  name: string,
  help: string,
): RegisteredMetric & { samples: GaugeSample[] | undefined } {
  const metric = {
    name,
    help,
    type: 'gauge',
    aggregator: 'sum',
    samples: undefined as GaugeSample[] | undefined,
    get: async () => ({
      name,
      help,
      type: 'gauge',
      aggregator: 'sum',
      values: (metric.samples ?? []).map((s) => ({ labels: s.labels ?? {}, value: s.value })),
    }),
  };
  return metric as unknown as RegisteredMetric & { samples: GaugeSample[] | undefined };
}

/** The read's value, or a rejection after `ms` (the read itself is left to finish). */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`read took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
