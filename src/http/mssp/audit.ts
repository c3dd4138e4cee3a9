import type { Identity } from '../../auth/identity.ts';
import type { Transaction } from '../../db/tenant-context.ts';
import type { ApiDeps } from '../app.ts';
import { decodeCursor, SORT_KEY_FORMAT, toPage } from '../cursor.ts';

export interface AuditFilters {
  tenant_id?: string | undefined;
  action?: string | undefined;
  actor_id?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

interface AuditRow {
  id: string;
  timestamp: Date;
  tenant_id: string | null;
  actor_principal: string;
  actor_id: string;
  action: string;
  resource_type: string;
  resource_id: string | null;
  before: unknown;
  after: unknown;
  acting_as: string | null;
  request_id: string | null;
  details: Record<string, unknown>;
  sort_key: string;
}

/** Rows carry no schema change between export and page, so one statement serves both. */
async function select(tx: Transaction, f: AuditFilters, limit: number): Promise<AuditRow[]> {
  const after = decodeCursor('mssp-audit', f.cursor);
  const { rows } = await tx.query<AuditRow>(
    `SELECT id, "timestamp", tenant_id, actor_principal, actor_id, action, resource_type,
            resource_id, before, after, acting_as, request_id, details,
            to_char("timestamp" AT TIME ZONE 'UTC', '${SORT_KEY_FORMAT}') AS sort_key
       FROM audit_log
      WHERE ($1::uuid IS NULL OR tenant_id = $1)
        AND ($2::text IS NULL OR action = $2)
        AND ($3::text IS NULL OR actor_id = $3)
        AND ($4::timestamptz IS NULL OR "timestamp" >= $4)
        AND ($5::timestamptz IS NULL OR "timestamp" < $5)
        AND ($6::timestamptz IS NULL OR ("timestamp", id) < ($6, $7::uuid))
      ORDER BY "timestamp" DESC, id DESC
      LIMIT $8`,
    [
      f.tenant_id ?? null,
      f.action ?? null,
      f.actor_id ?? null,
      f.since ?? null,
      f.until ?? null,
      after?.at ?? null,
      after?.id ?? null,
      limit,
    ],
  );
  return rows;
}

/**
 * Staff with an impersonation token read one tenant through RLS; otherwise the view is
 * cross-tenant and goes through the System gate, which audits its own entry (spec §4 rule 2).
 */
function run<T>(api: ApiDeps, identity: Identity, fn: (tx: Transaction) => Promise<T>): Promise<T> {
  if (identity.current_tenant !== null) return api.db.withTenant(identity.current_tenant, fn);
  return api.system.withSystem('mssp.audit', fn);
}

const json = ({ sort_key: _, ...r }: AuditRow) => ({ ...r, timestamp: r.timestamp.toISOString() });

export async function queryAudit(api: ApiDeps, identity: Identity, f: AuditFilters) {
  const limit = f.limit ?? 100;
  const rows = await run(api, identity, (tx) => select(tx, f, limit + 1));
  const result = toPage('mssp-audit', rows, limit);
  return { items: result.rows.map(json), next_cursor: result.next_cursor };
}

/** An export is bounded too: a larger range is exported in several calls with `until`. */
export const EXPORT_MAX_ROWS = 50_000;

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

export async function auditExport(
  api: ApiDeps,
  identity: Identity,
  f: AuditFilters,
  format: 'jsonl' | 'csv',
): Promise<Response> {
  const rows = (
    await run(api, identity, (tx) => select(tx, { ...f, cursor: undefined }, EXPORT_MAX_ROWS))
  ).map(json);
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
