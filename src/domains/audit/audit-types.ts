import type * as s from 'zapatos/schema';
import type { Narrowed } from '../../db/rows.ts';

export type ActorPrincipal = 'User' | 'Worker' | 'System' | 'Adapter';

/** One row of spec §2.6 to append. tenant_id is null for install-scoped events. */
export interface AuditEntry {
  tenantId: string | null;
  actorPrincipal: ActorPrincipal;
  actorId: string;
  action: string;
  resourceType: string;
  resourceId?: string | null;
  before?: unknown;
  after?: unknown;
  actingAs?: string | null;
  /** Defaults to the request id of the surrounding request (see log/withRequestId). */
  requestId?: string | null;
  details?: Record<string, unknown>;
}

export interface AuditRecord {
  id: string;
}

/** An audit row as the views read it; writeAudit always stores an object in details. */
export type AuditRow = Narrowed<
  Pick<
    s.audit_log.Selectable,
    | 'id'
    | 'timestamp'
    | 'tenant_id'
    | 'actor_principal'
    | 'actor_id'
    | 'action'
    | 'resource_type'
    | 'resource_id'
    | 'before'
    | 'after'
    | 'acting_as'
    | 'request_id'
    | 'details'
  >,
  { details: Record<string, unknown> }
>;

/** What a customer sees of its own trail: no tenant column, impersonation made explicit. */
export type CustomerAuditRow = Omit<AuditRow, 'tenant_id'> & { impersonated: boolean };

/** Filters of the audit views; an absent filter matches every row. */
export interface AuditFilters {
  tenant_id?: string | undefined;
  action?: string | undefined;
  actor_id?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

/** The customer view filters by action and start only; RLS fixes the tenant. */
export type CustomerAuditFilters = Pick<AuditFilters, 'action' | 'since'>;

/** Who reads the MSSP view: staff, possibly with an impersonation token for one tenant. */
export interface AuditViewer {
  current_tenant: string | null;
}
