// The audit trail's views (spec §2.6): the MSSP view across tenants or of one impersonated
// tenant, the customer's view of its own trail, and the bounded export.
import type { KeysetPage, KeysetRequest } from '../../db/keyset.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { SystemGate } from '../../db/system-gate.ts';
import type { SystemTx, TenantTx } from '../../db/tenant-context.ts';
import { listAudit } from './audit-repository.ts';
import type {
  AuditFilters,
  AuditRow,
  AuditViewer,
  CustomerAuditFilters,
  CustomerAuditRow,
} from './audit-types.ts';

/** An export is bounded too: a larger range is exported in several calls with `until`. */
export const EXPORT_MAX_ROWS = 50_000;

function toCustomerRow({ tenant_id: _, ...row }: AuditRow): CustomerAuditRow {
  return { ...row, impersonated: row.acting_as !== null };
}

export function createAuditService(deps: { db: AppDatabase; system: SystemGate }) {
  /**
   * Staff with an impersonation token read one tenant through RLS; otherwise the view is
   * cross-tenant and goes through the System gate, which audits its own entry (spec §4 rule 2).
   */
  const asViewer = <T>(viewer: AuditViewer, fn: (tx: TenantTx | SystemTx) => Promise<T>) =>
    viewer.current_tenant !== null
      ? deps.db.withTenant(viewer.current_tenant, fn)
      : deps.system.withSystem('mssp.audit', fn);

  return {
    /** The MSSP view, newest first. */
    list(viewer: AuditViewer, filters: AuditFilters, page: KeysetRequest) {
      return asViewer(viewer, (tx) => listAudit(tx, filters, page));
    },

    /** The MSSP export: the newest EXPORT_MAX_ROWS rows that match. */
    async export(viewer: AuditViewer, filters: AuditFilters): Promise<AuditRow[]> {
      const page = { after: undefined, limit: EXPORT_MAX_ROWS };
      return (await asViewer(viewer, (tx) => listAudit(tx, filters, page))).rows;
    },

    /** A customer's own trail, newest first; the tenant comes from the caller's identity. */
    async listForTenant(
      tenantId: string,
      filters: CustomerAuditFilters,
      page: KeysetRequest,
    ): Promise<KeysetPage<CustomerAuditRow>> {
      const result = await deps.db.withTenant(tenantId, (tx) => listAudit(tx, filters, page));
      return { rows: result.rows.map(toCustomerRow), next: result.next };
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;
