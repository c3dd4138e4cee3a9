import type { TenantState } from './tenant-states.ts';

/**
 * The console's query keys, the only place they are spelled out (the portal's live in
 * web/portal/queries.ts), so what a page reads and what a mutation or an event stream marks
 * stale cannot drift apart. Two roots: ['mssp'] for what staff read with their own session,
 * ['as', tenant] for what a view as customer reads with its impersonation token (dropped whole
 * when the view ends). A family key is a prefix of its members: invalidating `tenants()` marks
 * the paged lists and the pickers' choices stale. test/architecture/web-query-keys.test.ts
 * keeps inline key arrays out of the rest of web/mssp.
 */
const MSSP = 'mssp';
const VIEW_AS = 'as';

const fleet = () => [MSSP, 'fleet'] as const;
const tenants = () => [MSSP, 'tenants'] as const;
const tenant = (tenantId: string) => [MSSP, 'tenant', tenantId] as const;

export const msspKeys = {
  /** The fleet overview, polled and marked stale by any tenant change. */
  fleet,
  /** Every list of tenants: the paged list per state filter and the pickers' choices. */
  tenants,
  tenantList: (state: TenantState | undefined) =>
    [MSSP, 'tenants', 'list', state ?? 'all'] as const,
  tenantChoices: () => [MSSP, 'tenants', 'choices'] as const,
  /** One tenant with its lifecycle and adapter (the tenant page, the view-as page). */
  tenant,
  /** What a change of one tenant's state makes stale: its page, the lists, the fleet. */
  tenantChanged: (tenantId: string) => [tenant(tenantId), tenants(), fleet()] as const,
  /** MSSP staff. */
  users: () => [MSSP, 'users'] as const,
  /** One tenant's customer users. */
  tenantUsers: (tenantId: string) => [MSSP, 'tenant-users', tenantId] as const,
  /** Both review queues: across tenants and per tenant. */
  reviews: () => [MSSP, 'reviews'] as const,
  allReviews: () => [MSSP, 'reviews', 'all'] as const,
  tenantReviews: (tenantId: string) => [MSSP, 'reviews', tenantId] as const,
  /** Every incident list: across tenants and per tenant, under each set of filters. */
  incidents: () => [MSSP, 'incidents'] as const,
  allIncidents: (filters: object = {}) => [MSSP, 'incidents', 'all', filters] as const,
  tenantIncidents: (tenantId: string, filters: object = {}) =>
    [MSSP, 'incidents', tenantId, filters] as const,
  /**
   * One incident's detail; its alerts and their raw documents are members of this family, so
   * an edit or an event of the tenant refreshes the whole page.
   */
  incident: (tenantId: string, id: string) => [MSSP, 'incident', tenantId, id] as const,
  incidentAlerts: (tenantId: string, id: string) =>
    [MSSP, 'incident', tenantId, id, 'alerts'] as const,
  incidentAlert: (tenantId: string, id: string, alertId: string) =>
    [MSSP, 'incident', tenantId, id, 'alert', alertId] as const,
  /** The cross-tenant report under one period, range and tenant (docs/reports.md). */
  reports: (query: object) => [MSSP, 'reports', query] as const,
  /** The audit log under one set of filters (each filter set pages on its own). */
  audit: (filters: object) => [MSSP, 'audit', filters] as const,
  configRevisions: (tenantId: string) => [MSSP, 'config-revisions', tenantId] as const,
  policy: (tenantId: string) => [MSSP, 'policy', tenantId] as const,
  llmUsage: (tenantId: string) => [MSSP, 'llm-usage', tenantId] as const,
  branding: (tenantId: string) => [MSSP, 'branding', tenantId] as const,
  /** One tenant's revealed enrollment details (AgentsSection: fetched only after a confirmation). */
  enrollment: (tenantId: string) => [MSSP, 'enrollment', tenantId] as const,
  /**
   * Webhooks of the install (`tenantId` undefined) or of one tenant, and each one's delivery
   * log; `webhooks()` is the family a test send or a change marks stale.
   */
  webhooks: () => [MSSP, 'webhooks'] as const,
  webhookList: (tenantId: string | undefined) => [MSSP, 'webhooks', tenantId ?? 'install'] as const,
  webhookLog: (tenantId: string | undefined, id: string) =>
    [MSSP, 'webhooks', tenantId ?? 'install', id, 'log'] as const,
  /** Everything read as the customer of one tenant (removed when the view ends). */
  viewAs: (tenantId: string) => [VIEW_AS, tenantId] as const,
  viewAsIncidents: (tenantId: string) => [VIEW_AS, tenantId, 'incidents'] as const,
  viewAsReviews: (tenantId: string) => [VIEW_AS, tenantId, 'reviews'] as const,
  viewAsAudit: (tenantId: string) => [VIEW_AS, tenantId, 'audit'] as const,
};
