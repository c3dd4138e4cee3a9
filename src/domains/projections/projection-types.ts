import type * as s from 'zapatos/schema';

/** The projections a tenant's events are folded into, each with its own checkpoint row. */
export const PROJECTIONS = [
  'investigations',
  'metrics_hourly',
  'rule_stats',
  'ioc_stats',
  'analyzer_stats',
] as const;
export type Projection = (typeof PROJECTIONS)[number];

/** Where each projection of one tenant got to: the last event id folded (0n: none). */
export type Checkpoints = Record<Projection, bigint>;

export const SEVERITIES = ['info', 'low', 'medium', 'high', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** The read model's status and verdict values (the CHECKs of sql/0004). */
export const STATUSES = ['open', 'triaging', 'awaiting_review', 'resolved', 'closed'] as const;
export type Status = (typeof STATUSES)[number];
export const VERDICTS = ['true_positive', 'false_positive', 'benign', 'inconclusive'] as const;
export type Verdict = (typeof VERDICTS)[number];

/**
 * A new (or, on a second `investigation.opened` for the same id, restarted) investigation row.
 * Timestamps are ISO strings: the changes travel to SQL as one JSON document per statement.
 */
export interface InvestigationOpen {
  id: string;
  title: string;
  severity: Severity;
  source: string | null;
  source_ref: string | null;
  opened_at: string;
  last_event_id: string;
}

/** What a batch's alert.received events add to one investigation. */
export interface InvestigationAlerts {
  id: string;
  alerts: number;
  severity: Severity;
  last_alert_at: string;
  last_event_id: string;
}

/**
 * Where a batch's pipeline events leave an investigation that was in one status before the
 * batch. A timestamp key present sets the column (null clears it); absent leaves it.
 */
export interface StatusOutcome {
  status: Status;
  closed_at?: string | null;
  resolved_at?: string | null;
}

/**
 * What a batch's pipeline events (triage, reviews, closing, cases) do to one investigation.
 * A status move depends on the status before it, which only the table knows when the batch
 * starts, so the fold gives the outcome for every status the row may be in; the statement
 * picks the row's own. Verdict and summary do not depend on it: the latest readable one wins.
 */
export interface InvestigationWorkflow {
  id: string;
  outcomes: Record<Status, StatusOutcome>;
  verdict: Verdict | null;
  summary: string | null;
  updated_at: string;
  last_event_id: string;
}

export interface MetricDelta {
  bucket: string;
  metric: string;
  value: number;
}

export interface RuleDelta {
  rule_id: string;
  rule_name: string | null;
  fired: number;
  last_fired_at: string;
}

export type IocType = s.ioc_stats.Selectable['ioc_type'];

export interface IocDelta {
  ioc_type: IocType;
  ioc_value: string;
  hits: number;
  first_seen_at: string;
  last_seen_at: string;
}

export interface AnalyzerDelta {
  analyzer: string;
  runs: number;
  failures: number;
  total_duration_ms: number;
  last_run_at: string;
}

/**
 * The row changes of one batch, one entry per key (so each upsert touches a row once).
 * Investigations opened in the batch are written before the alerts and pipeline events that
 * follow them; those two go to the table in one statement.
 */
export interface ProjectionChanges {
  opened: InvestigationOpen[];
  alerts: InvestigationAlerts[];
  workflow: InvestigationWorkflow[];
  metrics: MetricDelta[];
  rules: RuleDelta[];
  iocs: IocDelta[];
  analyzers: AnalyzerDelta[];
}

/** One fold transaction's outcome for a tenant. */
export type FoldOutcome =
  /** Another projector (this process or a replica) holds the tenant: it folds instead. */
  { kind: 'locked' } | { kind: 'folded'; events: number; lastEventId: bigint; caughtUp: boolean };

export interface RebuildResult {
  tenantId: string;
  events: number;
  lastEventId: bigint;
}

/** The checkpoint moved under a fold that held the tenant lock: a second writer exists. */
export class CheckpointConflictError extends Error {
  override name = 'CheckpointConflictError';
  constructor(readonly tenantId: string) {
    super(`tenant ${tenantId}: a projection checkpoint moved during the fold; rolled back`);
  }
}
