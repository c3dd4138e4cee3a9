import { Hono } from 'hono';
import { msspReportsContract as contract } from '../../../contracts/mssp.ts';
import { reportCsv } from '../../domains/reports/report-csv.ts';
import type { ReportService } from '../../domains/reports/report-service.ts';
import { implement } from '../contract.ts';
import { DEFAULT_LIMIT, decodeCursor, nextCursor } from '../cursor.ts';

/** The client asked for the CSV file: `format=csv`, or `Accept` naming text/csv before JSON. */
function wantsCsv(format: string | undefined, accept: string | undefined): boolean {
  if (format !== undefined) return format === 'csv';
  const media = (accept ?? '').toLowerCase();
  const csv = media.indexOf('text/csv');
  const json = media.indexOf('application/json');
  return csv >= 0 && (json < 0 || csv < json);
}

/**
 * `GET /api/mssp/reports` (docs/reports.md): figures per tenant and UTC period, paged tenant by
 * tenant, or the whole range as CSV. The contract admits mssp_admin and platform_admin and
 * denies impersonation tokens (a token for one tenant never reads past it).
 */
export function reportRoutes(reports: ReportService): Hono {
  const app = new Hono();

  implement(
    app,
    contract.reports,
  )(async (c, { query }) => {
    const range = reports.resolveRange(query);
    if (wantsCsv(query.format, c.req.header('accept'))) {
      const rows = await reports.fleetAll(range, query.tenant_id);
      const name = `svc-report-${range.period}-${range.from}-${range.to}.csv`;
      return {
        raw: new Response(reportCsv(rows), {
          status: 200,
          headers: {
            'content-type': 'text/csv; charset=utf-8',
            'content-disposition': `attachment; filename="${name}"`,
            'cache-control': 'no-store',
          },
        }),
      };
    }
    const position = decodeCursor('reports', query.cursor);
    const page = await reports.fleetPage(range, {
      tenantId: query.tenant_id,
      after: position && { tenantId: position.id, periodStart: position.at.slice(0, 10) },
      limit: query.limit ?? DEFAULT_LIMIT,
    });
    const next = page.next && {
      id: page.next.tenantId,
      at: `${page.next.periodStart}T00:00:00.000000Z`,
    };
    return {
      status: 200,
      body: {
        period: range.period,
        from: range.from,
        to: range.to,
        items: page.rows,
        next_cursor: nextCursor('reports', next),
      },
    };
  });

  return app;
}
