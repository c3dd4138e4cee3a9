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

/**
 * A payload a worker may run as `jobType`: the schema above, and the job type it names is the
 * task it was queued for. Refused before any database access otherwise.
 */
export function checkJobPayload(
  payload: unknown,
  jobType: string,
): { ok: true; payload: JobPayload } | { ok: false; reason: string } {
  if (!checkPayload.Check(payload)) {
    const first = checkPayload.Errors(payload)[0];
    const where = first?.instancePath || '/';
    return { ok: false, reason: `payload rejected at ${where}: ${first?.message ?? 'invalid'}` };
  }
  if (payload.job_type !== jobType) {
    return {
      ok: false,
      reason: `payload names job type ${payload.job_type}, queued as ${jobType}`,
    };
  }
  return { ok: true, payload };
}
