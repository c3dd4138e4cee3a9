import Type from 'typebox';
import { Compile } from 'typebox/compile';

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

/**
 * The one way into the database a job runner needs: a transaction in one tenant's context.
 * Generic over the transaction, so the workers never name the database layer's types; the
 * application database (`withTenant`) fits it, and a job body gets its TenantTx.
 */
export interface TenantScope<Tx> {
  withTenant<T>(tenantId: string, fn: (tx: Tx) => Promise<T>): Promise<T>;
}

export interface JobContext<Tx> {
  job: JobPayload;
  tx: Tx;
  /** The audit actor id of this job's Worker principal. */
  actorId: string;
}

/**
 * The entry every worker goes through: a payload without a valid tenant_id is refused before
 * any database access, and the job body runs inside that tenant's RLS context.
 */
export async function runTenantJob<Tx, T>(
  db: TenantScope<Tx>,
  payload: unknown,
  body: (ctx: JobContext<Tx>) => Promise<T>,
): Promise<T> {
  if (!checkPayload.Check(payload)) {
    const first = checkPayload.Errors(payload)[0];
    const where = first?.instancePath || '/';
    throw new JobRejectedError(`job payload rejected at ${where}: ${first?.message ?? 'invalid'}`);
  }
  const job = payload;
  return db.withTenant(job.tenant_id, (tx) => body({ job, tx, actorId: `worker:${job.job_id}` }));
}
