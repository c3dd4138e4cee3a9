import Type, { type TProperties } from 'typebox';
import { ReportDate, ReportFigures, ReportPeriod } from '../report-values.ts';
import { MSSP_OPERATORS } from '../roles.ts';
import { Problem, Uuid } from '../route.ts';
import { Cursor, Limit, msspRoute } from './route.ts';

// Cross-tenant reports (spec §2.2: the mssp_admin's "cross-tenant reporting"; docs/reports.md):
// per tenant and UTC period, read from the report projections through the system gate.

export { ReportDate, ReportFigures, ReportPeriod } from '../report-values.ts';

function closed<P extends TProperties>(properties: P) {
  return Type.Object(properties, { additionalProperties: false });
}

export const TenantReportRow = closed({
  tenant_id: Uuid,
  tenant_slug: Type.String(),
  tenant_name: Type.String(),
  ...ReportFigures.properties,
});

export const ReportsQuery = closed({
  period: Type.Optional(ReportPeriod),
  /** First UTC day of the range (default: 30 days, 12 weeks or 12 months back from `to`). */
  from: Type.Optional(ReportDate),
  /** Last UTC day of the range, inclusive (default: today). */
  to: Type.Optional(ReportDate),
  tenant_id: Type.Optional(Uuid),
  /** `csv`: the whole range as one CSV file (also on `Accept: text/csv`); no paging. */
  format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('csv')])),
  limit: Type.Optional(Limit),
  cursor: Type.Optional(Cursor),
});

export const msspReportsContract = {
  reports: msspRoute('deny', {
    method: 'GET',
    path: '/api/mssp/reports',
    summary:
      'Figures per tenant and UTC period (day, week from Monday, month) from the report projections; one row per tenant and period, tenant by tenant; CSV export (System principal, audited as mssp.reports)',
    roles: MSSP_OPERATORS,
    alternativeMedia: {
      'text/csv': Type.String({
        description:
          '`format=csv` or `Accept: text/csv` (UTF-8): a header row, then one row per tenant and period, every page; text cells starting with =, +, - or @ are prefixed with a quote',
      }),
    },
    query: ReportsQuery,
    responses: {
      200: closed({
        period: ReportPeriod,
        from: ReportDate,
        to: ReportDate,
        items: Type.Array(TenantReportRow),
        next_cursor: Type.Union([Type.String(), Type.Null()]),
      }),
      400: Problem,
    },
  }),
} as const;
