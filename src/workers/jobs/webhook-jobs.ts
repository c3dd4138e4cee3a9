import { isUuid } from '../../../contracts/uuid.ts';
import {
  DELIVER_JOB,
  type NotificationService,
} from '../../domains/notifications/notification-service.ts';
import type { Logger } from '../../log/index.ts';
import { type JobHandler, JobInputError, type Schedule } from '../runtime.ts';

/** Every minute: the finest a cron schedule goes, and a threshold is minutes anyway. */
export const WEBHOOK_SWEEP_CRON = '* * * * *';

/**
 * The delivery of one notification (docs/notifications.md): one attempt per run, for the job's
 * tenant; the service queues the next attempt itself after its backoff.
 */
export function webhookJobs(notifications: NotificationService): Record<string, JobHandler> {
  return {
    [DELIVER_JOB]: async (run) => {
      const id = run.input.delivery_id;
      if (!isUuid(id)) throw new JobInputError(`${run.jobType} job input needs delivery_id (uuid)`);
      await notifications.deliver(run.tenantId, id.toLowerCase());
    },
  };
}

/**
 * The sweep that finds notified conditions (a review waiting, a silent adapter, …) and queues
 * their deliveries. A missed minute is harmless: the next sweep finds the same conditions.
 */
export function webhookSweepSchedule(
  notifications: Pick<NotificationService, 'sweep'>,
  logger: Logger,
): Schedule {
  return {
    task: 'webhook_sweep',
    match: WEBHOOK_SWEEP_CRON,
    backfillMs: 60_000,
    run: async () => {
      const { queued } = await notifications.sweep();
      if (queued > 0) logger.info({ queued }, 'webhook notifications queued');
    },
  };
}
