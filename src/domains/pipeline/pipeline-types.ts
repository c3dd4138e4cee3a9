import type * as s from 'zapatos/schema';
import type { Narrowed } from '../../db/rows.ts';
import type { Severity } from '../projections/projection-types.ts';
import type { TriageAnswer } from './prompt.ts';

/** One event of an investigation's stream, as the pipeline reads it. */
export interface PipelineEvent {
  seq: number;
  type: string;
  payload: Record<string, unknown>;
  occurredAt: Date;
}

/** What a review proposes; approving it runs the action as an `act` job. */
export type ProposedAction = 'open_case' | 'close_investigation';

export interface ReviewInsert {
  tenantId: string;
  investigationId: string;
  proposedAction: ProposedAction;
  actionParams: Record<string, unknown>;
  rationale: string;
  evidence: unknown[];
  risk: 'low' | 'medium' | 'high';
  confidence: number | null;
  requestedBy: string;
}

export type StoredReview = Pick<
  s.pending_reviews.Selectable,
  'id' | 'proposed_action' | 'decision'
>;

/** A review with what acting on it needs; action_params is only ever written as an object. */
export type ActionableReview = StoredReview &
  Narrowed<
    Pick<
      s.pending_reviews.Selectable,
      'investigation_id' | 'action_params' | 'rationale' | 'decided_by'
    >,
    { action_params: Record<string, unknown> }
  >;

/** The outcome of the triage step, as `triage.completed` records it. */
export interface TriageResult {
  by: 'policy' | 'model';
  verdict: TriageAnswer['verdict'];
  severity: Severity;
  confidence: number;
  rationale: string;
  recommended_action: TriageAnswer['recommended_action'];
}

/** The pipeline's job types (spec §5.2 job_type), each one step of one investigation. */
export const PIPELINE_JOBS = ['triage', 'enrich', 'decide', 'act'] as const;
export type PipelineJob = (typeof PIPELINE_JOBS)[number];

/** A review cannot be acted on: not approved, or not this tenant's. */
export class ReviewNotActionableError extends Error {
  override name = 'ReviewNotActionableError';
}

/**
 * The investigation's read-model row is not folded yet (the projector runs a moment behind the
 * events); the job fails this attempt and the queue runs it again.
 */
export class ProjectionLagError extends Error {
  override name = 'ProjectionLagError';
  constructor(readonly investigationId: string) {
    super(`investigation ${investigationId} is not projected yet`);
  }
}
