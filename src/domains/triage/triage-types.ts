import type * as s from 'zapatos/schema';
import type { Narrowed } from '../../db/rows.ts';
import { DomainError } from '../domain-error.ts';

/** A proposed action awaiting (or past) a human decision. */
export type Review = Narrowed<
  Pick<
    s.pending_reviews.Selectable,
    | 'id'
    | 'investigation_id'
    | 'proposed_action'
    | 'action_params'
    | 'rationale'
    | 'evidence'
    | 'risk'
    | 'confidence'
    | 'requested_by'
    | 'requested_at'
    | 'expires_at'
    | 'decision'
    | 'decided_by'
    | 'decided_at'
    | 'decision_note'
  >,
  /** Written only as a JSON object (default '{}'). */
  { action_params: Record<string, unknown> }
>;

/** An investigation as the MSSP incident list shows it. */
export type IncidentSummary = Pick<
  s.investigations.Selectable,
  | 'id'
  | 'title'
  | 'status'
  | 'severity'
  | 'verdict'
  | 'opened_at'
  | 'updated_at'
  | 'alert_count'
  | 'last_alert_at'
  | 'assignee_id'
>;

/**
 * The MSSP incident lists' filters (docs/investigations.md "Queues"); each absent one matches
 * everything. `assigneeId` is the caller's own id for "assigned to me".
 */
export interface TenantIncidentFilters {
  status?: string | undefined;
  severity?: string | undefined;
  assigneeId?: string | undefined;
  unassigned?: boolean | undefined;
  /** Opened at or after / strictly before, as the client sent them (RFC 3339). */
  openedAfter?: string | undefined;
  openedBefore?: string | undefined;
}

export type ReviewDecision = 'approved' | 'rejected';

/** What an analyst may judge an investigation to be when rejecting a proposal. */
export type AnalystVerdict = 'true_positive' | 'false_positive' | 'benign' | 'inconclusive';

/** The MSSP user deciding, and the tenant an impersonation token acts for (null: none). */
export interface Decider {
  userId: string;
  actingAs: string | null;
}

export class ReviewNotFoundError extends DomainError {
  override name = 'ReviewNotFoundError';
  readonly code = 'review_not_found';
  constructor(readonly reviewId: string) {
    super('No such review in this tenant');
  }
}

/** A review is decided once; an expired one cannot be decided at all. */
export class ReviewClosedError extends DomainError {
  override name = 'ReviewClosedError';
  readonly code = 'review_closed';
  constructor(
    readonly reviewId: string,
    /** The earlier decision, or 'expired'. */
    readonly decision: string,
  ) {
    super('This review was already decided or has expired');
  }
}

/** Which tenant a row of a cross-tenant list belongs to. */
export interface TenantTag {
  tenant_id: s.tenants.Selectable['id'];
  /** The tenant's `slug`. */
  tenant_slug: s.tenants.Selectable['slug'];
}

/** An incident in the MSSP's list across tenants. */
export type FleetIncident = IncidentSummary & TenantTag;

/** An open review in the MSSP's queue across tenants. */
export type FleetReview = Review & TenantTag;

/** The cross-tenant incident list's filters; each absent one matches everything. */
export interface FleetIncidentFilters extends TenantIncidentFilters {
  tenantId?: string | undefined;
}
