import type * as db from 'zapatos/db';
import type * as s from 'zapatos/schema';
import type { EventType } from '../../../contracts/event-types.ts';
import type { StoredEvent } from '../events/event-repository.ts';

/**
 * One projection (docs/projections.md "Adding a projection"): the events it folds, its fold,
 * its table and the statements that write one batch into it. Its checkpoint row is named after
 * it. Registered once, in projection-registry.ts; the folds, the writes, the checkpoints and
 * the rebuild all walk that list.
 */
export interface ProjectionModule<Name extends string, Changes, Table extends s.Table = s.Table> {
  /** The checkpoint name (projection_checkpoints.projection). */
  readonly name: Name;
  /** The table it keeps, and the columns that order its rows (its key). */
  readonly table: Table;
  readonly key: readonly s.ColumnForTable<Table>[];
  /**
   * What a rebuild does first: `delete` empties the tenant's rows (derived through and
   * through); `in-place` keeps them for the openings to reset (other tables refer to them).
   */
  readonly rebuild: 'delete' | 'in-place';
  /**
   * The event types its fold is given, by their catalog names (contracts/events.ts; an unknown
   * name is a type error); every other event passes it by.
   */
  readonly events: ReadonlySet<EventType>;
  /** A fresh fold for one batch. */
  fold(): Fold<Changes>;
  /** Its statements, in order; each is skipped when all its row lists are empty. */
  readonly writes: readonly Write<Changes>[];
}

/**
 * One batch's fold for one projection: its events after its checkpoint, in id order, become
 * per-key row changes. It never throws on a malformed payload and never produces a row a table
 * constraint would refuse: one bad event must not stall its tenant for ever (the batch would
 * roll back and be retried without end). What cannot be read is skipped.
 */
export interface Fold<Changes> {
  add(event: StoredEvent): void;
  changes(): Changes;
}

/**
 * One set-based statement: $1 is the tenant, $2… each one of `rows`, sent as a JSON array
 * (jsonb_to_recordset), so a batch of up to 1,000 events costs one statement per write.
 */
export interface Write<Changes> {
  /** The prepared statement's label. */
  readonly label: string;
  readonly text: string;
  rows(changes: Changes): readonly (readonly unknown[])[];
}

/** A column as a batch's JSON carries it: timestamps as ISO text, event ids as decimal text. */
type JsonColumn<Column, T> = Column extends 'last_event_id'
  ? string
  : T extends db.TimestampTzString
    ? string
    : T;

/**
 * A change row of one batch: the named columns of the table's generated JSON row type (so a
 * renamed or dropped column is a type error here). Event ids stay text: JSON numbers are
 * doubles, ids are bigint.
 */
export type ChangeRow<Row, K extends keyof Row> = { [P in K]: JsonColumn<P, Row[P]> };

export const SEVERITIES = ['info', 'low', 'medium', 'high', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];

export function isSeverity(value: unknown): value is Severity {
  return typeof value === 'string' && (SEVERITIES as readonly string[]).includes(value);
}

/** The read model's status and verdict values (the CHECKs of sql/0004). */
export const STATUSES = ['open', 'triaging', 'awaiting_review', 'resolved', 'closed'] as const;
export type Status = (typeof STATUSES)[number];
export const VERDICTS = ['true_positive', 'false_positive', 'benign', 'inconclusive'] as const;
export type Verdict = (typeof VERDICTS)[number];

/** One fold transaction's outcome for a tenant. */
export type FoldOutcome =
  /** Another projector (this process or a replica) holds the tenant: it folds instead. */
  | { kind: 'locked' }
  | {
      kind: 'folded';
      events: number;
      lastEventId: bigint;
      caughtUp: boolean;
      /** When each folded event was appended (its recorded_at), in fold order. */
      appendedAt: Date[];
      /** Not caught up: when the first event still to fold was appended. */
      nextAppendedAt?: Date;
    };

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
