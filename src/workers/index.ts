import Type from 'typebox';
import { Compile } from 'typebox/compile';
import type { AppDatabase } from '../db/pools.ts';
import type { Transaction } from '../db/tenant-context.ts';

/** Every job payload names its one tenant (spec §1 item 6, §5.7 item 5). */
export const JobPayload = Type.Object({
  tenant_id: Type.String({ format: 'uuid' }),
  job_id: Type.String({ format: 'uuid' }),
  job_type: Type.String({ pattern: '^[a-z][a-z0-9_]{0,63}$' }),
  input: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
export type JobPayload = Type.Static<typeof JobPayload>;

const checkPayload = Compile(JobPayload);

export class JobRejectedError extends Error {
  override name = 'JobRejectedError';
}

export interface JobContext {
  job: JobPayload;
  tx: Transaction;
  /** The audit actor id of this job's Worker principal. */
  actorId: string;
}

/**
 * The entry every worker goes through: a payload without a valid tenant_id is refused before
 * any database access, and the job body runs inside that tenant's RLS context.
 */
export async function runTenantJob<T>(
  db: Pick<AppDatabase, 'withTenant'>,
  payload: unknown,
  body: (ctx: JobContext) => Promise<T>,
): Promise<T> {
  if (!checkPayload.Check(payload)) {
    const first = checkPayload.Errors(payload)[0];
    const where = first?.instancePath || '/';
    throw new JobRejectedError(`job payload rejected at ${where}: ${first?.message ?? 'invalid'}`);
  }
  const job = payload;
  return db.withTenant(job.tenant_id, (tx) => body({ job, tx, actorId: `worker:${job.job_id}` }));
}
