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

/** The lifecycle `actor` and audit `actor_id` of everything the orchestrator records. */
export const ORCHESTRATOR_ACTOR = 'system:orchestrator';

/** A step's failure as it is kept on the tenant (orchestrator/step-failure.ts StepFailure). */
export interface FailureRecord {
  step: string;
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/** One difference between svc's record and the cluster, and what the reconciler did about it. */
export interface DriftFinding {
  object: 'namespace' | 'release' | 'install_secret';
  name: string;
  problem: 'missing' | 'foreign' | 'terminating' | 'not_deployed';
  /** `none` when svc may not or cannot repair it (the reason is in `detail`). */
  repair: 'recreated' | 'reinstalled' | 'none' | 'failed';
  detail?: string;
}

export interface Drift {
  detected_at: string;
  findings: DriftFinding[];
}

/** How a package rollout (an upgrade, a configuration change) ended (orchestrator/rollout.ts). */
export type RolloutOutcome =
  | { ok: true }
  | {
      ok: false;
      error: string;
      /** The release revision rolled back to; null when the release was never changed. */
      rolledBackTo: number | null;
    };

/** One workload a suspension scaled down or a resume scaled back, as the lifecycle records it. */
export interface ScaledWorkload {
  kind: 'Deployment' | 'StatefulSet';
  name: string;
  replicas: number;
}
