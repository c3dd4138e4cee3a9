import type { Static } from 'typebox';
import type {
  AlertBatchBody,
  IngestCheckpoint,
  WazuhAlert as WazuhAlertSchema,
} from '../../../contracts/internal.ts';
import { DomainError } from '../domain-error.ts';

export type WazuhAlert = Static<typeof WazuhAlertSchema>;
export type Checkpoint = Static<typeof IngestCheckpoint>;
export type AlertBatch = Static<typeof AlertBatchBody>;

/** The one source ingest knows today; `ingest_checkpoints.source` and event payloads name it. */
export const WAZUH = 'wazuh';

/** Who appends ingest's events (`events.actor`). */
export const INGEST_ACTOR = 'adapter';

/** An alert joins its (rule, agent) group when it is at most this long after the group's last. */
export const GROUP_WINDOW_MS = 30 * 60 * 1000;

/** `investigations.title` holds at most 500 characters. */
export const MAX_TITLE_CHARS = 500;

export interface IngestOutcome {
  /** Alerts new to the store, written now. */
  accepted: number;
  /** Alerts already stored, or repeated earlier in the same batch. */
  duplicates: number;
  checkpoint: Checkpoint;
  /** Investigations this batch opened. */
  opened: number;
}

export interface CheckpointView {
  checkpoint: Checkpoint | null;
  alertsTotal: number;
}

/** One alert the contract admits but the rules refuse (no such day, too large). */
export interface AlertProblem {
  path: string;
  message: string;
}

/** The batch breaks a rule the contract's schema cannot state; nothing was written. */
export class InvalidAlertsError extends DomainError {
  override name = 'InvalidAlertsError';
  readonly code = 'validation_failed';
  constructor(readonly problems: AlertProblem[]) {
    super(`invalid alerts: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`);
  }
}

/** The tenant's token bucket is short of this batch; nothing was written. */
export class IngestRateLimitedError extends DomainError {
  override name = 'IngestRateLimitedError';
  readonly code = 'ingest_rate_limited';
  constructor(readonly retryAfterSeconds: number) {
    super(`ingest rate limit: retry after ${retryAfterSeconds}s`);
  }
}

/** The (rule, agent) pair an alert is grouped by. */
export interface GroupKey {
  ruleId: string;
  agentId: string;
}

/** A group as ingest reads and writes it (`alert_groups`). */
export interface AlertGroup extends GroupKey {
  investigationId: string;
  lastAlertAt: number;
  alertCount: number;
  closed: boolean;
}

/** A tenant's adapter as its operator sees it (MSSP tenant detail, `svc tenants get`). */
export interface AdapterActivity {
  version: string;
  firstSeenAt: Date;
  lastSeenAt: Date;
  /** The status map of its last heartbeat (docs/adapter.md). */
  status: Record<string, string | number | boolean | null>;
  /** Alerts it delivered that were new. */
  alertsTotal: number;
  /** When its checkpoint last moved; null before its first batch. */
  checkpointAt: Date | null;
}
