import { isUuid } from '../../../contracts/uuid.ts';
import type { PipelineService, StepRun } from '../../domains/pipeline/pipeline-service.ts';
import type { JobSuspensionGate } from '../../domains/tenants/tenant-suspension.ts';
import { type JobHandler, JobInputError, type JobRun } from '../runtime.ts';

/**
 * The pipeline's jobs (spec §5.2 job_type triage, enrich, decide, and act for an approved
 * review): each reads its id from the job's input and runs one step of the pipeline service
 * for the job's tenant. An input without its id is refused (JobInputError), not retried.
 */
function idOf(run: JobRun, key: string): string {
  const id = run.input[key];
  if (!isUuid(id)) throw new JobInputError(`${run.jobType} job input needs ${key} (uuid)`);
  return id.toLowerCase();
}

function step(run: JobRun): StepRun {
  return {
    tenantId: run.tenantId,
    actorId: run.actorId,
    lastAttempt: run.attempt >= run.maxAttempts,
  };
}

/**
 * docs/operations.md "Suspension": a suspended tenant spends nothing (no model, no integration
 * call). Its job is parked and put back on the queue by the resume, so triage continues where it
 * stopped.
 */
function unlessSuspended(gate: JobSuspensionGate, handler: JobHandler): JobHandler {
  return async (run) => {
    const job = { tenantId: run.tenantId, jobType: run.jobType, input: run.input };
    if (await gate.parkIfSuspended(job)) return;
    await handler(run);
  };
}

export function pipelineJobs(
  pipeline: PipelineService,
  gate: JobSuspensionGate,
): Record<string, JobHandler> {
  const jobs: Record<string, JobHandler> = {
    triage: (run) => pipeline.triage(step(run), idOf(run, 'investigation_id')),
    enrich: (run) => pipeline.enrich(step(run), idOf(run, 'investigation_id')),
    decide: (run) => pipeline.decide(step(run), idOf(run, 'investigation_id')),
    act: (run) => pipeline.act(step(run), idOf(run, 'review_id')),
  };
  return Object.fromEntries(
    Object.entries(jobs).map(([type, handler]) => [type, unlessSuspended(gate, handler)]),
  );
}
