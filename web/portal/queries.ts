import type { Static } from 'typebox';
import type { AuditEntry, Incident } from '../../contracts/tenant.ts';
import { ok, svc } from '../shared/api.ts';
import type { Severity, Status } from './terms.ts';

export type IncidentRow = Static<typeof Incident>;
export type AuditRow = Static<typeof AuditEntry>;

/**
 * The portal's query keys. Everything lives under ['tenant'], the caller's own tenant (the API
 * takes it from the session); each page's event hook marks its family stale.
 */
export const OVERVIEW_KEY = ['tenant', 'overview'] as const;
export const REPORTS_KEY = ['tenant', 'reports'] as const;
export const INCIDENTS_KEY = ['tenant', 'incidents'] as const;
export const AUDIT_KEY = ['tenant', 'audit'] as const;

export interface IncidentFilter {
  status?: Status;
  severity?: Severity;
}

export interface AuditFilter {
  action?: string;
  since?: string;
}

export const PAGE_SIZE = 50;

export function reportsQuery(days: number) {
  return {
    queryKey: [...REPORTS_KEY, days],
    // The figures per day for short windows, per week (from Monday) for longer ones.
    queryFn: () => ok(svc.tenant.reports({ query: { days, period: days > 14 ? 'week' : 'day' } })),
  };
}

/** One page of incidents; `cursor` is the previous page's `next_cursor` (docs/api-tenant.md). */
export function incidentsPage(
  filter: IncidentFilter,
  cursor: string | undefined,
  limit = PAGE_SIZE,
) {
  return ok(svc.tenant.incidents({ query: { ...filter, limit, ...(cursor && { cursor }) } }));
}

export function auditPage(filter: AuditFilter, cursor: string | undefined) {
  return ok(
    svc.tenant.audit({ query: { ...filter, limit: PAGE_SIZE, ...(cursor && { cursor }) } }),
  );
}

/** One incident's detail (`GET /api/tenant/incidents/{id}`); its alerts are members of it. */
export const incidentKey = (id: string) => [...INCIDENTS_KEY, 'detail', id] as const;
export const incidentAlertsKey = (id: string) =>
  [...INCIDENTS_KEY, 'detail', id, 'alerts'] as const;

export function incidentDetail(id: string) {
  return ok(svc.tenant.incident({ params: { id } }));
}

export function incidentAlertsPage(id: string, cursor: string | undefined) {
  return ok(
    svc.tenant.incidentAlerts({
      params: { id },
      query: { limit: PAGE_SIZE, ...(cursor && { cursor }) },
    }),
  );
}
