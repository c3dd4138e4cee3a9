/** One job to add to the queue; it runs for exactly one tenant (spec §1 item 6). */
export interface JobSpec {
  tenantId: string;
  /** The task that runs it (`triage`, `act`, …): a key of the worker's job table. */
  jobType: string;
  /** Ids only: the job reads what it needs under its tenant's RLS when it runs. */
  input: Record<string, unknown>;
  /**
   * At most one pending job per key: adding a job whose key is pending leaves the pending one
   * (and its run time) in place, so re-enqueueing the same work is harmless.
   */
  jobKey?: string;
  runAt?: Date;
  maxAttempts?: number;
}

/** The payload every queued job carries (src/workers/index.ts checks it at dispatch). */
export interface QueuedPayload {
  tenant_id: string;
  job_id: string;
  job_type: string;
  input: Record<string, unknown>;
}

/** Why the dispatcher refused a job (recorded in the audit log, never run). */
export interface JobRefusal {
  /** The queue's own id of the job when the payload has no usable job_id. */
  jobId: string;
  jobType: string;
  tenantId: string | null;
  reason: string;
}
