import type { Static } from 'typebox';
import type { AdapterConfig } from '../../../contracts/internal.ts';
import type { TenantState as TenantStateSchema } from '../../../contracts/mssp.ts';
import { DomainError } from '../domain-error.ts';

export type AdapterConfigView = Static<typeof AdapterConfig>;
export type TenantState = Static<typeof TenantStateSchema>;

/**
 * Where the MSSP tenant-creation flow puts the secret (spec §9.4 step 6): a Secret in
 * `tenant-<slug>` the adapter mounts, with the tenant id beside it so the adapter needs no
 * other configuration, and a `tenant_secrets` reference under this purpose.
 */
export const ADAPTER_BOOTSTRAP_SECRET = {
  name: 'svc-adapter-bootstrap',
  purpose: 'adapter-bootstrap',
  keys: { tenantId: 'tenant-id', credential: 'credential' },
} as const;

export interface AdapterToken {
  token: string;
  expiresAt: Date;
}

export interface Heartbeat {
  tenantId: string;
  version: string;
  status: Record<string, string | number | boolean | null>;
  /** The adapter token's jti, recorded with the activation it caused. */
  jti: string;
}

export interface HeartbeatOutcome {
  tenantState: TenantState;
  activated: boolean;
}

/**
 * One refusal for an unknown tenant, a deleted one and a wrong credential, so the answer does
 * not tell a prober which tenant ids exist.
 */
export class InvalidBootstrapCredentialError extends DomainError {
  override name = 'InvalidBootstrapCredentialError';
  readonly code = 'invalid_bootstrap_credential';
  constructor() {
    super('The tenant id or bootstrap credential is not valid');
  }
}

/** A genuine adapter token whose tenant is gone (it outlives a hard delete by up to 8 days). */
export class AdapterTenantGoneError extends DomainError {
  override name = 'AdapterTenantGoneError';
  readonly code = 'invalid_token';
  constructor(readonly tenantId: string) {
    super(`tenant ${tenantId} no longer exists`);
  }
}
