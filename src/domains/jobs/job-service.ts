// The jobs domain owns what the queue records about jobs outside any tenant's work: refusals.
// Enqueueing is a repository call inside the transaction of the state change that asks for it.
import type { AppDatabase } from '../../db/pools.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import type { JobRefusal } from './job-types.ts';

export function createJobService(deps: { db: Pick<AppDatabase, 'withoutTenant'> }) {
  return {
    /**
     * A refused job leaves an install-scoped audit row (the MSSP reads it; no tenant's context
     * is trusted for a job whose tenant is the thing in doubt), written as svc_app.
     */
    recordRefusal(refusal: JobRefusal): Promise<void> {
      return deps.db.withoutTenant(async (tx) => {
        await writeAudit(tx, {
          tenantId: null,
          actorPrincipal: 'Worker',
          actorId: `worker:${refusal.jobId}`,
          action: 'job.refuse',
          resourceType: 'job',
          resourceId: refusal.jobId,
          after: {
            job_type: refusal.jobType,
            claimed_tenant_id: refusal.tenantId,
            reason: refusal.reason,
          },
        });
      });
    },
  };
}

export type JobService = ReturnType<typeof createJobService>;
