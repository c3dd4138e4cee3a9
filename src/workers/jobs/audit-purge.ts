import type { AuditRetention } from '../../domains/audit/audit-retention.ts';
import type { Logger } from '../../log/index.ts';
import type { Schedule } from '../runtime.ts';

/** Daily at 03:30 UTC: after most regions' working day, before the next. */
export const AUDIT_PURGE_CRON = '30 3 * * *';

/**
 * The audit retention purge as a daily schedule (spec §8). A day missed while no worker ran
 * runs when one starts again within the day; older misses are harmless, since every run
 * deletes everything older than the window, however much that is.
 */
export function auditPurgeSchedule(
  retention: Pick<AuditRetention, 'purge'>,
  logger: Logger,
): Schedule {
  return {
    task: 'audit.purge',
    match: AUDIT_PURGE_CRON,
    backfillMs: 86_400_000,
    run: async () => {
      const run = await retention.purge('schedule');
      logger.info(
        {
          deleted: run.deleted,
          sessions_deleted: run.sessionsDeleted,
          before: run.before.toISOString(),
          batches: run.batches,
        },
        'audit retention purge',
      );
    },
  };
}
