import { isUuid } from '../../../contracts/uuid.ts';
import type { StoredEvent } from '../events/event-repository.ts';
import {
  type AnalyzerDelta,
  type Checkpoints,
  type InvestigationAlerts,
  type InvestigationOpen,
  type InvestigationWorkflow,
  type IocDelta,
  type IocType,
  type MetricDelta,
  type Projection,
  type ProjectionChanges,
  type RuleDelta,
  SEVERITIES,
  type Severity,
  STATUSES,
  type Status,
  type StatusOutcome,
  VERDICTS,
  type Verdict,
} from './projection-types.ts';

/**
 * The pure half of the projector: a batch of one tenant's events (ascending by id) becomes the
 * row changes of every projection, aggregated per key so the repository writes a batch with
 * one statement per table. Each projection folds only the events after its own checkpoint.
 *
 * A fold never throws on a malformed payload and never produces a row that would violate a
 * table constraint: one bad event must not stall its tenant's projections for ever (the batch
 * would roll back and be retried without end). What cannot be read is skipped, per projection.
 */
export function foldEvents(
  events: readonly StoredEvent[],
  checkpoints: Checkpoints,
): ProjectionChanges {
  const fold = new Fold();
  for (const event of events) {
    const id = BigInt(event.id);
    const due = (projection: Projection) => id > checkpoints[projection];
    switch (event.type) {
      case 'investigation.opened':
        fold.opened(event, due);
        break;
      case 'alert.received':
        fold.alert(event, due);
        break;
      case 'analyzer.completed':
        if (due('analyzer_stats')) fold.analyzer(event);
        break;
      default:
        if (WORKFLOW_EVENTS.has(event.type) && due('investigations')) fold.workflow(event);
    }
  }
  return fold.changes();
}

const TITLE_MAX = 500;
const RULE_ID_MAX = 200;
const RULE_NAME_MAX = 1000;
const IOC_MAX = 2048;
const ANALYZER_MAX = 200;
const SUMMARY_MAX = 4000;
const HOUR_MS = 3_600_000;

/** The triage pipeline's events on an investigation's own stream (docs/projections.md). */
const WORKFLOW_EVENTS: ReadonlySet<string> = new Set([
  'triage.started',
  'triage.completed',
  'triage.failed',
  'enrichment.completed',
  'decision.made',
  'review.requested',
  'review.approved',
  'review.rejected',
  'investigation.closed',
  'case.opened',
  'action.failed',
]);
const VERDICT_EVENTS: ReadonlySet<string> = new Set([
  'triage.completed',
  'review.rejected',
  'investigation.closed',
]);

type Record_ = Record<string, unknown>;

function object(value: unknown): Record_ | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record_)
    : undefined;
}

/** A string of 1..max characters (trimmed), or undefined. */
function text(value: unknown, max: number): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed.length >= 1 && trimmed.length <= max ? trimmed : undefined;
}

/** Wazuh writes rule and agent ids as strings; a number is accepted as its decimal form. */
function identifier(value: unknown, max: number): string | undefined {
  return typeof value === 'number' && Number.isInteger(value) ? String(value) : text(value, max);
}

export function isSeverity(value: unknown): value is Severity {
  return typeof value === 'string' && (SEVERITIES as readonly string[]).includes(value);
}

/** Severity from a Wazuh rule level (docs/projections.md). */
export function severityOfLevel(level: number): Severity {
  if (level <= 3) return 'info';
  if (level <= 6) return 'low';
  if (level <= 9) return 'medium';
  if (level <= 12) return 'high';
  return 'critical';
}

function isVerdict(value: unknown): value is Verdict {
  return typeof value === 'string' && (VERDICTS as readonly string[]).includes(value);
}

export function maxSeverity(a: Severity, b: Severity): Severity {
  return SEVERITIES.indexOf(a) >= SEVERITIES.indexOf(b) ? a : b;
}

function hourBucket(at: Date): string {
  return new Date(Math.floor(at.getTime() / HOUR_MS) * HOUR_MS).toISOString();
}

function later(a: string, b: string): string {
  return Date.parse(a) >= Date.parse(b) ? a : b;
}

function earlier(a: string, b: string): string {
  return Date.parse(a) <= Date.parse(b) ? a : b;
}

/** The indicators of one Wazuh alert, each once (contract: ip, url and file hash only). */
export function alertIocs(alert: Record_): { type: IocType; value: string }[] {
  const data = object(alert.data);
  const syscheck = object(alert.syscheck);
  const found: { type: IocType; value: string | undefined }[] = [
    { type: 'ip', value: text(data?.srcip, IOC_MAX) },
    { type: 'ip', value: text(data?.dstip, IOC_MAX) },
    { type: 'url', value: text(data?.url, IOC_MAX) },
    {
      type: 'hash',
      value: text(syscheck?.sha256_after, IOC_MAX) ?? text(syscheck?.md5_after, IOC_MAX),
    },
  ];
  const seen = new Set<string>();
  const result: { type: IocType; value: string }[] = [];
  for (const { type, value } of found) {
    if (value === undefined || seen.has(`${type}\n${value}`)) continue;
    seen.add(`${type}\n${value}`);
    result.push({ type, value });
  }
  return result;
}

/** A status move: what one event changes for a row in `from`; undefined when it stays. */
type Move = (from: Status) => Partial<StatusOutcome> | undefined;

/** Closed and resolved are final: only a rejected review that reopens leaves them. */
function isFinal(status: Status): boolean {
  return status === 'closed' || status === 'resolved';
}

function closing(at: string): Move {
  return (from) => (isFinal(from) ? undefined : { status: 'closed', closed_at: at });
}

function statusMove(type: string, payload: Record_, at: string): Move | undefined {
  switch (type) {
    case 'triage.started':
      return (from) => (from === 'open' ? { status: 'triaging' } : undefined);
    case 'review.requested':
      return (from) => (isFinal(from) ? undefined : { status: 'awaiting_review' });
    case 'investigation.closed':
      return closing(at);
    case 'case.opened':
      return (from) => (isFinal(from) ? undefined : { status: 'resolved', resolved_at: at });
    case 'action.failed':
      // The approved action did not happen: the investigation is the analysts' again.
      return (from) => (isFinal(from) ? undefined : { status: 'open' });
    case 'review.rejected':
      // A reopened investigation is open again, so it carries no closing or resolution time.
      return payload.reopen === true
        ? () => ({ status: 'open', closed_at: null, resolved_at: null })
        : closing(at);
    default:
      return undefined;
  }
}

function summaryOf(type: string, payload: Record_): string | undefined {
  if (type === 'triage.completed')
    return text(payload.rationale, Number.POSITIVE_INFINITY)?.slice(0, SUMMARY_MAX);
  const failed =
    type === 'triage.failed'
      ? 'Triage failed'
      : type === 'action.failed'
        ? 'Approved action failed'
        : undefined;
  if (failed === undefined) return undefined;
  // A failure is worth showing even when its reason cannot be read.
  const reason = text(payload.reason, Number.POSITIVE_INFINITY);
  const summary = reason === undefined ? failed : `${failed}: ${reason}`;
  return summary.slice(0, SUMMARY_MAX);
}

/** The investigation a pipeline event is about: its payload says, else its own stream. */
function investigationOf(event: StoredEvent, payload: Record_): string | undefined {
  if (isUuid(payload.investigation_id)) return payload.investigation_id.toLowerCase();
  return event.streamType === 'investigation' && isUuid(event.streamId)
    ? event.streamId.toLowerCase()
    : undefined;
}

function unmoved(id: string, at: string, eventId: string): InvestigationWorkflow {
  const outcomes = Object.fromEntries(STATUSES.map((s) => [s, { status: s }])) as Record<
    Status,
    StatusOutcome
  >;
  return { id, outcomes, verdict: null, summary: null, updated_at: at, last_event_id: eventId };
}

class Fold {
  readonly #opened = new Map<string, InvestigationOpen>();
  readonly #alerts = new Map<string, InvestigationAlerts>();
  readonly #workflow = new Map<string, InvestigationWorkflow>();
  readonly #metrics = new Map<string, MetricDelta>();
  readonly #rules = new Map<string, RuleDelta>();
  readonly #iocs = new Map<string, IocDelta>();
  readonly #analyzers = new Map<string, AnalyzerDelta>();

  opened(event: StoredEvent, due: (p: Projection) => boolean): void {
    const payload = object(event.payload) ?? {};
    const at = event.occurredAt.toISOString();
    if (due('metrics_hourly')) this.#metric(event.occurredAt, 'investigations.opened');
    if (!due('investigations')) return;
    const id = isUuid(payload.investigation_id) ? payload.investigation_id : event.streamId;
    const key = id.toLowerCase();
    // A second opening of the same id restarts the row; alerts folded before it are dropped
    // with it, exactly as the incremental fold of the same events would; so are the pipeline's
    // moves (the opening resets the workflow columns).
    this.#alerts.delete(key);
    this.#workflow.delete(key);
    this.#opened.set(key, {
      id: key,
      title: text(payload.title, Number.POSITIVE_INFINITY)?.slice(0, TITLE_MAX) ?? 'Untitled',
      severity: isSeverity(payload.severity) ? payload.severity : 'info',
      source: text(payload.source, 200) ?? null,
      source_ref: text(payload.source_ref, 500) ?? null,
      opened_at: at,
      last_event_id: event.id,
    });
  }

  alert(event: StoredEvent, due: (p: Projection) => boolean): void {
    const payload = object(event.payload) ?? {};
    const alert = object(payload.alert) ?? {};
    const rule = object(alert.rule) ?? {};
    const level = typeof rule.level === 'number' ? rule.level : undefined;
    const severity: Severity = isSeverity(payload.severity)
      ? payload.severity
      : level !== undefined
        ? severityOfLevel(level)
        : 'info';
    const at = event.occurredAt.toISOString();
    if (due('investigations') && isUuid(payload.investigation_id))
      this.#investigationAlert(payload.investigation_id.toLowerCase(), severity, at, event.id);
    if (due('metrics_hourly')) {
      this.#metric(event.occurredAt, 'alerts.received');
      this.#metric(event.occurredAt, `alerts.${severity}`);
    }
    if (due('rule_stats')) this.#rule(rule, at);
    if (due('ioc_stats')) for (const ioc of alertIocs(alert)) this.#ioc(ioc.type, ioc.value, at);
  }

  /** One pipeline event, applied to every status the row may have been in before the batch. */
  workflow(event: StoredEvent): void {
    const payload = object(event.payload) ?? {};
    const id = investigationOf(event, payload);
    if (id === undefined) return;
    const at = event.occurredAt.toISOString();
    const row = this.#workflow.get(id) ?? unmoved(id, at, event.id);
    const move = statusMove(event.type, payload, at);
    if (move)
      for (const outcome of Object.values(row.outcomes))
        Object.assign(outcome, move(outcome.status));
    if (VERDICT_EVENTS.has(event.type) && isVerdict(payload.verdict)) row.verdict = payload.verdict;
    row.summary = summaryOf(event.type, payload) ?? row.summary;
    row.updated_at = later(row.updated_at, at);
    row.last_event_id = event.id;
    this.#workflow.set(id, row);
  }

  analyzer(event: StoredEvent): void {
    const payload = object(event.payload) ?? {};
    const name = text(payload.analyzer, ANALYZER_MAX);
    if (name === undefined) return;
    const duration = payload.duration_ms;
    const ms =
      typeof duration === 'number' && Number.isFinite(duration) && duration > 0
        ? Math.round(duration)
        : 0;
    const at = event.occurredAt.toISOString();
    const row = this.#analyzers.get(name);
    const failed = payload.success === false ? 1 : 0;
    if (row) {
      row.runs += 1;
      row.failures += failed;
      row.total_duration_ms += ms;
      row.last_run_at = later(row.last_run_at, at);
    } else {
      this.#analyzers.set(name, {
        analyzer: name,
        runs: 1,
        failures: failed,
        total_duration_ms: ms,
        last_run_at: at,
      });
    }
  }

  changes(): ProjectionChanges {
    return {
      opened: [...this.#opened.values()],
      alerts: [...this.#alerts.values()],
      workflow: [...this.#workflow.values()],
      metrics: [...this.#metrics.values()],
      rules: [...this.#rules.values()],
      iocs: [...this.#iocs.values()],
      analyzers: [...this.#analyzers.values()],
    };
  }

  #investigationAlert(id: string, severity: Severity, at: string, eventId: string): void {
    const row = this.#alerts.get(id);
    if (row) {
      row.alerts += 1;
      row.severity = maxSeverity(row.severity, severity);
      row.last_alert_at = later(row.last_alert_at, at);
      row.last_event_id = eventId;
    } else {
      this.#alerts.set(id, { id, alerts: 1, severity, last_alert_at: at, last_event_id: eventId });
    }
  }

  #metric(at: Date, metric: string): void {
    const bucket = hourBucket(at);
    const key = `${metric}\n${bucket}`;
    const row = this.#metrics.get(key);
    if (row) row.value += 1;
    else this.#metrics.set(key, { bucket, metric, value: 1 });
  }

  #rule(rule: Record_, at: string): void {
    const ruleId = identifier(rule.id, RULE_ID_MAX);
    if (ruleId === undefined) return;
    const name = text(rule.description, Number.POSITIVE_INFINITY)?.slice(0, RULE_NAME_MAX) ?? null;
    const row = this.#rules.get(ruleId);
    if (row) {
      row.fired += 1;
      // The latest description wins (rules are renamed between Wazuh versions).
      row.rule_name = name ?? row.rule_name;
      row.last_fired_at = later(row.last_fired_at, at);
    } else {
      this.#rules.set(ruleId, { rule_id: ruleId, rule_name: name, fired: 1, last_fired_at: at });
    }
  }

  #ioc(type: IocType, value: string, at: string): void {
    const key = `${type}\n${value}`;
    const row = this.#iocs.get(key);
    if (row) {
      row.hits += 1;
      row.first_seen_at = earlier(row.first_seen_at, at);
      row.last_seen_at = later(row.last_seen_at, at);
    } else {
      this.#iocs.set(key, {
        ioc_type: type,
        ioc_value: value,
        hits: 1,
        first_seen_at: at,
        last_seen_at: at,
      });
    }
  }
}
