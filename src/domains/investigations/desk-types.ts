import type { Static, StaticDecode } from 'typebox';
import type {
  AlertDocument,
  AlertSummary,
  IncidentDetail,
  TimelineEntry,
} from '../../../contracts/mssp/incidents.ts';
import type { IncidentDetail as CustomerIncidentDetail } from '../../../contracts/tenant.ts';
import { DomainError } from '../domain-error.ts';

// Decoded: timestamps are Dates, written as the contract's text by the HTTP layer.
export type DetailBody = StaticDecode<typeof IncidentDetail>;
export type CustomerDetailBody = StaticDecode<typeof CustomerIncidentDetail>;
export type AlertSummaryBody = StaticDecode<typeof AlertSummary>;
export type AlertDocumentBody = StaticDecode<typeof AlertDocument>;
export type TimelineBody = StaticDecode<typeof TimelineEntry>;
export type TimelineActor = Static<typeof TimelineEntry>['actor'];

/** The MSSP user doing the work, and the tenant an impersonation token acts for (null: none). */
export interface Worker {
  userId: string;
  actingAs: string | null;
}

/** What an analyst changes on an investigation (docs/investigations.md "Work"). */
export type WorkAction =
  | { kind: 'assign'; assigneeId: string | null }
  | { kind: 'note'; body: string; visibility: 'internal' | 'shared' }
  | { kind: 'close'; verdict: 'true_positive' | 'false_positive' | 'benign'; reason: string }
  | { kind: 'reopen'; reason: string }
  | {
      kind: 'severity';
      severity: 'info' | 'low' | 'medium' | 'high' | 'critical';
      reason: string;
    };

export class InvestigationNotFoundError extends DomainError {
  override name = 'InvestigationNotFoundError';
  readonly code = 'investigation_not_found';
  constructor(readonly investigationId: string) {
    super('No such incident in this tenant');
  }
}

export class AlertNotFoundError extends DomainError {
  override name = 'AlertNotFoundError';
  readonly code = 'alert_not_found';
  constructor(readonly alertId: string) {
    super('No such alert in this incident');
  }
}

/** The edit named a stream position that is no longer the stream's last. */
export class StaleVersionError extends DomainError {
  override name = 'StaleVersionError';
  readonly code = 'stale_version';
  constructor(
    readonly expected: number,
    readonly current: number,
  ) {
    super('The incident changed since you read it: reload and try again');
  }
}

/** Closing what is closed (or resolved) already. */
export class InvestigationAlreadyClosedError extends DomainError {
  override name = 'InvestigationAlreadyClosedError';
  readonly code = 'investigation_already_closed';
  constructor(readonly status: string) {
    super('The incident is closed already');
  }
}

/** Reopening what is not closed or resolved. */
export class InvestigationNotClosedError extends DomainError {
  override name = 'InvestigationNotClosedError';
  readonly code = 'investigation_not_closed';
  constructor(readonly status: string) {
    super('Only a closed or resolved incident can be reopened');
  }
}

/** The assignee is no active MSSP user who may work incidents. */
export class InvalidAssigneeError extends DomainError {
  override name = 'InvalidAssigneeError';
  readonly code = 'invalid_assignee';
  constructor(readonly assigneeId: string) {
    super('The assignee must be an active analyst, mssp_admin or platform_admin');
  }
}
