import type { Static } from 'typebox';
import type {
  ReportFigures,
  ReportPeriod,
  TenantReportRow,
} from '../../../contracts/mssp/reports.ts';
import { DomainError } from '../domain-error.ts';

export type Period = Static<typeof ReportPeriod>;
export type Figures = Static<typeof ReportFigures>;
export type TenantReport = Static<typeof TenantReportRow>;

/** A report's range: whole UTC days, `to` inclusive (YYYY-MM-DD). */
export interface ReportRange {
  period: Period;
  from: string;
  to: string;
}

/** Where a page of the cross-tenant report resumes: after this tenant's period. */
export interface ReportPosition {
  tenantId: string;
  periodStart: string;
}

/**
 * A range the report refuses (docs/reports.md "Ranges"): a day the calendar lacks, `from`
 * after `to`, or more periods than one report covers.
 */
export class InvalidReportRangeError extends DomainError {
  override name = 'InvalidReportRangeError';
  readonly code: 'invalid_report_date' | 'report_range_inverted' | 'report_range_too_long';
  constructor(code: InvalidReportRangeError['code'], message: string) {
    super(message);
    this.code = code;
  }
}
