import type { Static } from 'typebox';
import type { msspContract } from '../../contracts/index.ts';

type TenantBody = Static<(typeof msspContract.getTenant.responses)[200]>;
export type Tenant = TenantBody['tenant'];
export type TenantState = Tenant['state'];
export type LifecycleEvent = TenantBody['lifecycle'][number];

/** The lifecycle's states in the order a tenant passes through them (docs/orchestrator.md). */
export const TENANT_STATES: readonly TenantState[] = [
  'pending',
  'provisioning',
  'active',
  'suspended',
  'decommissioning',
  'soft-deleted',
];

/** States the orchestrator is still working through: the tenant page follows them live. */
export const MOVING_STATES: readonly TenantState[] = ['pending', 'provisioning', 'decommissioning'];

/**
 * The provisioning steps, in order (docs/orchestrator.md "Provisioning steps"); each completed
 * one is a `step` lifecycle event. `edge_ports_allocated` happens in edge-proxy mode only.
 */
export const PROVISIONING_STEPS = [
  { step: 'install_secrets_written', label: 'Install Secrets written' },
  { step: 'namespace_created', label: 'Namespace created' },
  { step: 'bootstrap_secrets_written', label: 'Bootstrap Secrets written' },
  { step: 'edge_ports_allocated', label: 'Edge ports allocated (edge-proxy mode)' },
  { step: 'package_installed', label: 'Tenant package installed' },
  { step: 'package_ready', label: 'Tenant package ready' },
] as const;

/**
 * The lifecycle rows the tenant's event stream carries (`tenant.lifecycle.<kind>`,
 * docs/orchestrator.md; kinds from sql/0013): what the tenant page listens to.
 */
export const LIFECYCLE_EVENT_TYPES = [
  'tenant.lifecycle.transition',
  'tenant.lifecycle.step',
  'tenant.lifecycle.config_revision',
  'tenant.lifecycle.error',
  'tenant.lifecycle.drift',
] as const;
