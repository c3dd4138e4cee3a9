// Suspension (spec §3.1 leaves its states "not shown"): an MSSP pauses a customer without losing
// anything. The API moves the tenant and revokes its customers' sessions; the orchestrator scales
// the workloads (src/orchestrator/suspension.ts); the adapter's calls, the customers' sign-in and
// the pipeline's model calls are refused or parked until the resume. docs/operations.md
// "Suspension" is the operator's account of it.
import type { Identity } from '../../auth/identity.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { TenantTx, Transaction } from '../../db/tenant-context.ts';
import { afterCommit } from '../../db/unit-of-work.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { DomainError } from '../domain-error.ts';
import { enqueueJobs } from '../jobs/job-repository.ts';
import {
  lockedTenantState,
  parkJob,
  revokeTenantSessions,
  takeParkedJobs,
} from './suspension-repository.ts';
import type { TenantState } from './tenant-lifecycle.ts';
import { findTenant } from './tenant-repository.ts';
import type { TenantTransitions } from './tenant-service.ts';
import { type Tenant, TenantNotFoundError } from './tenant-types.ts';

/** The tenant is suspended: its adapter and its customers are refused (403 `tenant_suspended`). */
export class TenantSuspendedError extends DomainError {
  override name = 'TenantSuspendedError';
  readonly code = 'tenant_suspended';
  constructor(readonly tenantId: string) {
    super('This tenant is suspended by its service provider');
  }
}

/** For the adapter's and the customers' paths: a suspended tenant takes nothing from them. */
export function refuseIfSuspended(tenantId: string, state: TenantState | undefined): void {
  if (state === 'suspended') throw new TenantSuspendedError(tenantId);
}

/**
 * For a customer's sign-in, read under the tenant's share lock so that no session is created
 * after a concurrent suspension revoked the tenant's sessions. MSSP users (no tenant) pass
 * without a query.
 */
export async function signInSuspended(tx: Transaction, tenantId: string | null): Promise<boolean> {
  return tenantId !== null && (await lockedTenantState(tx, tenantId)) === 'suspended';
}

/** For a customer identified by the proxy on each request (no session to revoke). */
export async function tenantSuspended(tx: Transaction, tenantId: string | null): Promise<boolean> {
  return tenantId !== null && (await findTenant(tx, tenantId))?.state === 'suspended';
}

export interface SuspensionRequest {
  /** Why, in the operator's words: kept in the lifecycle event and the audit row. */
  reason?: string | undefined;
}

export interface TenantSuspensionDeps {
  db: Pick<AppDatabase, 'withTenant'>;
  /** Wakes the orchestrator: the data plane has work. */
  kick: () => void;
  /** The move itself and its rules (domains/provisioning, injected: see TenantTransitions). */
  transitions: Pick<TenantTransitions, 'suspension'>;
}

async function requireTenant(tx: Transaction, id: string): Promise<Tenant> {
  const tenant = await findTenant(tx, id);
  if (!tenant) throw new TenantNotFoundError(id);
  return tenant;
}

export function createTenantSuspension(deps: TenantSuspensionDeps) {
  const { db } = deps;

  async function move(
    tx: TenantTx,
    identity: Identity,
    id: string,
    trigger: 'suspend' | 'resume',
    request: SuspensionRequest,
  ): Promise<{ before: Tenant; after: Tenant; details: Record<string, unknown> }> {
    const reason = request.reason === undefined ? {} : { reason: request.reason };
    const before = await deps.transitions.suspension(tx, identity, id, trigger, reason);
    // In the same transaction as the state change: no customer request is served by a session
    // of a suspended tenant, and no job parked during the suspension is left behind.
    const details =
      trigger === 'suspend'
        ? { ...reason, revoked_sessions: await revokeTenantSessions(tx, id) }
        : { ...reason, requeued_jobs: await requeueParkedJobs(tx, id) };
    return { before, after: await requireTenant(tx, id), details };
  }

  async function run(
    identity: Identity,
    id: string,
    trigger: 'suspend' | 'resume',
    request: SuspensionRequest,
  ): Promise<Tenant> {
    const tenant = await db.withTenant(id, async (tx) => {
      const { before, after, details } = await move(tx, identity, id, trigger, request);
      await writeAudit(tx, {
        tenantId: id,
        actorPrincipal: 'User',
        actorId: identity.user_id,
        action: trigger === 'suspend' ? 'tenant.suspend' : 'tenant.resume',
        resourceType: 'tenant',
        resourceId: id,
        before: { state: before.state },
        after: { state: after.state },
        details,
        actingAs: identity.current_tenant,
      });
      return after;
    });
    afterCommit(deps.kick);
    return tenant;
  }

  return {
    /** active → suspended; the orchestrator then scales the workloads to zero. */
    suspend: (identity: Identity, id: string, request: SuspensionRequest = {}) =>
      run(identity, id, 'suspend', request),
    /** suspended → active; the orchestrator restores the workloads' replicas. */
    resume: (identity: Identity, id: string, request: SuspensionRequest = {}) =>
      run(identity, id, 'resume', request),
  };
}

export type TenantSuspension = ReturnType<typeof createTenantSuspension>;

async function requeueParkedJobs(tx: TenantTx, tenantId: string): Promise<number> {
  const parked = await takeParkedJobs(tx, tenantId);
  await enqueueJobs(
    tx,
    parked.map((job) => ({ tenantId, jobType: job.jobType, input: job.input })),
  );
  return parked.length;
}

/** One job about to run, as the suspension gate sees it. */
export interface GatedJob {
  tenantId: string;
  jobType: string;
  input: Record<string, unknown>;
}

/**
 * The workers' side: a job of a suspended tenant is parked instead of run (no model call, no
 * integration call), and the resume puts it back on the queue. The state is read without a
 * lock first (the common case, an active tenant, costs one plain read), then under the share
 * lock before parking, so a resume racing the park always finds the parked job.
 */
export function createJobSuspensionGate(deps: { db: Pick<AppDatabase, 'withTenant'> }) {
  return {
    /** True when the job was parked and must not run now. */
    parkIfSuspended(job: GatedJob): Promise<boolean> {
      return deps.db.withTenant(job.tenantId, async (tx) => {
        if ((await findTenant(tx, job.tenantId))?.state !== 'suspended') return false;
        if ((await lockedTenantState(tx, job.tenantId)) !== 'suspended') return false;
        await parkJob(tx, job.tenantId, { jobType: job.jobType, input: job.input });
        return true;
      });
    },
  };
}

export type JobSuspensionGate = ReturnType<typeof createJobSuspensionGate>;
