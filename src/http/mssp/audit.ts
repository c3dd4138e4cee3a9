import type { Identity } from '../../auth/identity.ts';
import type { AuditService } from '../../domains/audit/audit-service.ts';
import type { AuditFilters, AuditRow } from '../../domains/audit/audit-types.ts';
import { decodeCursor, nextCursor } from '../cursor.ts';

/** The query of `GET /api/mssp/audit`: filters and a page. */
export type AuditQuery = AuditFilters & {
  limit?: number | undefined;
  cursor?: string | undefined;
};

export async function queryAudit(audit: AuditService, identity: Identity, q: AuditQuery) {
  const page = { after: decodeCursor('mssp-audit', q.cursor), limit: q.limit ?? 100 };
  const result = await audit.list(identity, q, page);
  return { items: result.rows, next_cursor: nextCursor('mssp-audit', result.next) };
}

const CSV_COLUMNS = [
  'id',
  'timestamp',
  'tenant_id',
  'actor_principal',
  'actor_id',
  'action',
  'resource_type',
  'resource_id',
  'acting_as',
  'request_id',
  'before',
  'after',
  'details',
] as const;

function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  // Quote everything that could break a row, and neutralise spreadsheet formulas.
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return /[",\n\r']/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/**
 * The export is a file written here, not a contract body implement() encodes: its CSV cells
 * need the timestamp as text (the same RFC 3339 text as the JSON answers).
 */
const exportRow = (r: AuditRow) => ({ ...r, timestamp: r.timestamp.toISOString() });

export async function auditExport(
  audit: AuditService,
  identity: Identity,
  f: AuditFilters,
  format: 'jsonl' | 'csv',
): Promise<Response> {
  const rows = (await audit.export(identity, f)).map(exportRow);
  const body =
    format === 'jsonl'
      ? rows.map((r) => JSON.stringify(r)).join('\n') + (rows.length ? '\n' : '')
      : `${[
          CSV_COLUMNS.join(','),
          ...rows.map((r) => CSV_COLUMNS.map((k) => csvCell(r[k])).join(',')),
        ].join('\r\n')}\r\n`;
  return new Response(body, {
    status: 200,
    headers: {
      'content-type': format === 'jsonl' ? 'application/x-ndjson' : 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="svc-audit.${format}"`,
      'cache-control': 'no-store',
    },
  });
}
