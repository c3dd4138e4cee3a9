import { IntegrationError } from '../integration-error.ts';
import {
  createJsonRequest,
  type IntegrationAuth,
  type IntegrationFetch,
  isRecord,
  malformed,
} from '../integration-http.ts';

/**
 * The tenant's analysis component, Cortex 3, through the subset of its REST API svc uses to
 * enrich an indicator: find an enabled analyzer by name, run it, wait for the report
 * (`waitreport` holds the request until the job ends or `atMost` passes) and reduce the
 * report's summary taxonomies to one verdict.
 */

export type CortexJobStatus = 'Waiting' | 'InProgress' | 'Success' | 'Failure' | 'Deleted';
export type TaxonomyLevel = 'info' | 'safe' | 'suspicious' | 'malicious';

export interface Taxonomy {
  level: TaxonomyLevel;
  namespace: string;
  predicate: string;
  value: string | number;
}

export interface Analyzer {
  /** The id jobs are run against (an analyzer instance of the organisation). */
  id: string;
  /** `AbuseIPDB_1_0`: definition name and version. */
  name: string;
  dataTypeList: string[];
}

export interface CortexObservable {
  dataType: string;
  data: string;
  tlp?: 0 | 1 | 2 | 3 | 4;
  message?: string;
}

export interface CortexJob {
  id: string;
  status: CortexJobStatus;
}

export interface CortexReport {
  jobId: string;
  status: CortexJobStatus;
  taxonomies: Taxonomy[];
  full?: unknown;
  errorMessage?: string;
}

export interface Analysis {
  analyzer: string;
  success: boolean;
  durationMs: number;
  taxonomies: Taxonomy[];
  verdict: TaxonomyLevel;
  errorMessage?: string;
}

export interface CortexClient {
  listAnalyzers(dataType: string): Promise<Analyzer[]>;
  run(analyzerId: string, observable: CortexObservable): Promise<CortexJob>;
  waitReport(jobId: string, atMostSeconds: number): Promise<CortexReport>;
  /**
   * Runs the analyzer named exactly `analyzerName` on the observable and waits for its report.
   * `rejected` when no enabled analyzer of that name takes the observable's data type;
   * `timeout` when the job has not ended after `atMostSeconds` (default 60).
   */
  analyze(
    analyzerName: string,
    observable: CortexObservable,
    options?: { atMostSeconds?: number },
  ): Promise<Analysis>;
}

export interface CortexClientOptions {
  baseUrl: string;
  auth: IntegrationAuth;
  fetch: IntegrationFetch;
  /** Per request, on top of the time waitreport is asked to hold. Default 15 s. */
  timeoutMs?: number;
  /** Injected in tests; default performance.now. */
  now?: () => number;
}

const SERVICE = 'Cortex';
const STATUSES: readonly string[] = ['Waiting', 'InProgress', 'Success', 'Failure', 'Deleted'];
/** Ascending: the verdict is the highest level any taxonomy reports; none at all is `info`. */
const LEVELS: readonly TaxonomyLevel[] = ['info', 'safe', 'suspicious', 'malicious'];

export function verdictOf(taxonomies: Taxonomy[]): TaxonomyLevel {
  let worst = 0;
  for (const t of taxonomies) worst = Math.max(worst, LEVELS.indexOf(t.level));
  return LEVELS[worst] ?? 'info';
}

/** elastic4play writes an entity's id as both `id` and `_id`. */
function idOf(value: Record<string, unknown>): string | undefined {
  const id = value.id ?? value._id;
  return typeof id === 'string' ? id : undefined;
}

function toAnalyzer(value: unknown): Analyzer {
  const id = isRecord(value) ? idOf(value) : undefined;
  if (!isRecord(value) || id === undefined || typeof value.name !== 'string')
    throw malformed(SERVICE, 'analyzer');
  const types = Array.isArray(value.dataTypeList) ? value.dataTypeList : [];
  return {
    id,
    name: value.name,
    dataTypeList: types.filter((t): t is string => typeof t === 'string'),
  };
}

function toJob(value: unknown): CortexJob {
  const id = isRecord(value) ? idOf(value) : undefined;
  if (
    !isRecord(value) ||
    id === undefined ||
    typeof value.status !== 'string' ||
    !STATUSES.includes(value.status)
  )
    throw malformed(SERVICE, 'job');
  return { id, status: value.status as CortexJobStatus };
}

function toTaxonomy(value: unknown): Taxonomy | undefined {
  if (!isRecord(value)) return undefined;
  const level = typeof value.level === 'string' ? value.level.toLowerCase() : '';
  if (!LEVELS.includes(level as TaxonomyLevel)) return undefined;
  const v = value.value;
  return {
    level: level as TaxonomyLevel,
    namespace: String(value.namespace ?? ''),
    predicate: String(value.predicate ?? ''),
    value: typeof v === 'number' ? v : String(v ?? ''),
  };
}

/**
 * A finished job carries `report` = `{summary: {taxonomies}, full, success: true, ...}`, a
 * failed one `{errorMessage, input, success: false}`, a running one the string "Running" or
 * "Waiting".
 */
function toReport(value: unknown): CortexReport {
  const job = toJob(value);
  const report = (value as Record<string, unknown>).report;
  const out: CortexReport = { jobId: job.id, status: job.status, taxonomies: [] };
  if (job.status === 'Success') {
    if (!isRecord(report)) throw malformed(SERVICE, 'report');
    const summary = isRecord(report.summary) ? report.summary : {};
    const raw = Array.isArray(summary.taxonomies) ? summary.taxonomies : [];
    out.taxonomies = raw.map(toTaxonomy).filter((t): t is Taxonomy => t !== undefined);
    out.full = report.full;
  } else if (job.status === 'Failure') {
    out.errorMessage =
      isRecord(report) && typeof report.errorMessage === 'string' ? report.errorMessage : 'error';
  }
  return out;
}

export function createCortexClient(options: CortexClientOptions): CortexClient {
  const request = createJsonRequest({
    service: SERVICE,
    baseUrl: options.baseUrl,
    auth: options.auth,
    fetch: options.fetch,
    timeoutMs: options.timeoutMs ?? 15_000,
  });
  const now = options.now ?? (() => performance.now());

  const client: CortexClient = {
    async listAnalyzers(dataType) {
      const list = await request('GET', `/api/analyzer/type/${encodeURIComponent(dataType)}`);
      if (!Array.isArray(list)) throw malformed(SERVICE, 'analyzer list');
      return list.map(toAnalyzer);
    },

    async run(analyzerId, observable) {
      const job = await request('POST', `/api/analyzer/${encodeURIComponent(analyzerId)}/run`, {
        dataType: observable.dataType,
        data: observable.data,
        tlp: observable.tlp ?? 2,
        ...(observable.message === undefined ? {} : { message: observable.message }),
      });
      return toJob(job);
    },

    async waitReport(jobId, atMostSeconds) {
      const seconds = Math.max(1, Math.ceil(atMostSeconds));
      const path = `/api/job/${encodeURIComponent(jobId)}/waitreport?atMost=${seconds}second`;
      return toReport(await request('GET', path, undefined, seconds * 1000));
    },

    async analyze(analyzerName, observable, { atMostSeconds = 60 } = {}) {
      const started = now();
      const analyzers = await client.listAnalyzers(observable.dataType);
      const analyzer = analyzers.find((a) => a.name === analyzerName);
      if (!analyzer)
        throw new IntegrationError(
          'rejected',
          `${SERVICE} offers no analyzer named ${analyzerName} for data type ${observable.dataType}`,
        );
      const job = await client.run(analyzer.id, observable);
      const report = await client.waitReport(job.id, atMostSeconds);
      if (report.status === 'Waiting' || report.status === 'InProgress')
        throw new IntegrationError(
          'timeout',
          `${SERVICE} job ${job.id} of ${analyzerName} still ${report.status} after ${atMostSeconds} s`,
        );
      const success = report.status === 'Success';
      return {
        analyzer: analyzerName,
        success,
        durationMs: Math.round(now() - started),
        taxonomies: report.taxonomies,
        verdict: success ? verdictOf(report.taxonomies) : 'info',
        ...(report.errorMessage === undefined ? {} : { errorMessage: report.errorMessage }),
      };
    },
  };
  return client;
}
