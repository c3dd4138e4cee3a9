import type { Static } from 'typebox';
import type * as s from 'zapatos/schema';
import type { Tenant as TenantSchema } from '../../../contracts/mssp.ts';
import type { StoredTenantConfig } from '../../../contracts/tenant-config-revisions.ts';
import type { Narrowed } from '../../db/rows.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import { DomainError } from '../domain-error.ts';
import type { TenantState } from './tenant-lifecycle.ts';

/** What the reconciler last found (orchestrator/reconcile.ts writes it, the contract shapes it). */
export type TenantDrift = Static<typeof TenantSchema>['drift'];

/** The tenant row, its jsonb columns and state typed. One type for every reader of `tenants`. */
export type Tenant = Narrowed<
  s.tenants.Selectable,
  { state: TenantState; error_details: Record<string, unknown> | null; drift: TenantDrift }
>;

/** One TenantLifecycleEvent as the MSSP reads it (spec §6.2). */
export type LifecycleEntry = Narrowed<
  Pick<
    s.tenant_lifecycle_events.Selectable,
    'id' | 'kind' | 'from_state' | 'to_state' | 'step' | 'details' | 'actor' | 'occurred_at'
  >,
  { id: string; details: Record<string, unknown> }
>;

/** The configuration as the database keeps it (config-secrets.ts withoutSecrets). */
export type StoredConfig = StoredTenantConfig;

/** The tenant package values renderer refused the configuration (orchestrator/render.ts). */
export class RenderError extends Error {
  override name = 'RenderError';
  constructor(
    message: string,
    readonly problems: Array<{ path: string; message: string }>,
  ) {
    super(message);
  }
}

/**
 * The bootstrap credential of the tenant's adapter (domains/adapter issues it). Injected, not
 * imported: the adapter domain depends on this one (the lifecycle), never the other way round.
 */
export type BootstrapCredentialIssuer = (
  tx: TenantTx,
  tenantId: string,
) => Promise<{ secret: string }>;

export class TenantNotFoundError extends DomainError {
  override name = 'TenantNotFoundError';
  readonly code = 'tenant_not_found';
  constructor(readonly tenantId: string) {
    super('No such tenant');
  }
}

export class SlugTakenError extends DomainError {
  override name = 'SlugTakenError';
  readonly code = 'slug_taken';
  constructor(readonly slug: string) {
    super(`The slug ${slug} is already in use`);
  }
}

/** The tenant's state forbids the operation (outside the transitions of tenant-lifecycle.ts). */
export class InvalidStateError extends DomainError {
  override name = 'InvalidStateError';
  readonly code = 'invalid_state';
  constructor(
    message: string,
    readonly state?: TenantState,
  ) {
    super(message);
  }
}

/** svc runs without the cluster part an operation needs (no Secrets access, no orchestrator). */
export class TenancyUnavailableError extends DomainError {
  override name = 'TenancyUnavailableError';
  readonly code = 'cluster_unavailable';
}

export class ChartVersionUnknownError extends DomainError {
  override name = 'ChartVersionUnknownError';
  readonly code = 'chart_version_unknown';
  constructor(
    readonly version: string,
    readonly available: string[],
  ) {
    super(`Tenant package ${version} is not available to this install`);
  }
}

export class UpgradeInProgressError extends DomainError {
  override name = 'UpgradeInProgressError';
  readonly code = 'upgrade_in_progress';
  constructor(readonly upgradeTarget: string) {
    super(`An upgrade to ${upgradeTarget} is still running`);
  }
}

export interface UpgradeFacts {
  system_version: string;
  tenant_chart_version: string;
  from: string | null;
  compatibility: string;
}

/** The compatibility matrix refuses the upgrade; the refusal is audited before this is thrown. */
export class UpgradeRefusedError extends DomainError {
  override name = 'UpgradeRefusedError';
  readonly code: 'upgrade_blocked' | 'upgrade_out_of_range';
  constructor(
    readonly verdict: 'blocked' | 'out-of-range',
    readonly facts: UpgradeFacts,
  ) {
    super(
      verdict === 'blocked'
        ? `The compatibility matrix blocks tenant package ${facts.tenant_chart_version} with svc ${facts.system_version}`
        : `Tenant package ${facts.tenant_chart_version} is outside the range svc ${facts.system_version} supports`,
    );
    this.code = verdict === 'blocked' ? 'upgrade_blocked' : 'upgrade_out_of_range';
  }
}
