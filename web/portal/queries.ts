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
    queryFn: () => ok(svc.tenant.reports({ query: { days } })),
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * One incident. The customer API has no detail endpoint, so this walks the unfiltered list
 * (newest first, the largest pages the API serves) until the id turns up; null when the
 * tenant has no such incident.
 */
export async function findIncident(id: string): Promise<IncidentRow | null> {
  if (!UUID.test(id)) return null;
  let cursor: string | undefined;
  do {
    const page = await incidentsPage({}, cursor, 200);
    const found = page.items.find((i) => i.id === id);
    if (found) return found;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return null;
}
