/**
 * Provisioning steps (spec §9.4), recorded as TenantLifecycleEvents of kind `step` (§6.2: the
 * lifecycle also records the last completed step for idempotent retry). Order matters: a retry
 * or a restarted orchestrator resumes with the first step not completed.
 */
export const PROVISIONING_STEPS = [
  'install_secrets_written',
  'namespace_created',
  'bootstrap_secrets_written',
  'edge_ports_allocated',
  'package_installed',
  'package_ready',
] as const;
export type ProvisioningStep = (typeof PROVISIONING_STEPS)[number];

/** Bookkeeping steps: not part of the flow, but they change what counts as completed. */
export type MarkerStep =
  | 'rolled_back'
  | 'retry_requested'
  | 'adapter_token_written'
  | 'decommissioned'
  | 'upgrade_requested'
  | 'upgraded'
  | 'upgrade_failed'
  | 'heartbeat_before_ready'
  | 'data_plane_suspended'
  | 'data_plane_resumed'
  | 'config_applied'
  | 'config_failed';

export interface StepRecord {
  step: string;
  details: Record<string, unknown>;
  occurredAt: Date;
}

/** The pair of edge-proxy ports a tenant's monitor ingress gets (pair k: base+2k, base+2k+1). */
export interface EdgePorts {
  events: number;
  enrollment: number;
}

/** What the orchestrator has to do for one tenant now. */
export type WorkKind =
  | 'provision'
  | 'decommission'
  | 'purge'
  | 'upgrade'
  | 'config'
  | 'suspend'
  | 'resume';
