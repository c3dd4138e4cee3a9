// Audit retention (spec §8): rows older than the install's retention window are deleted in
// short batches through the system gate, and every run leaves one `audit.purge` row behind.
// Sessions that ended before the same cutoff go in the same run (docs/auth.md, sessions): a session
// row is kept as long as the audit rows that name it.
import type { SystemGate } from '../../db/system-gate.ts';
import type { SystemTx } from '../../db/tenant-context.ts';
import { writeAudit } from './audit-repository.ts';
import { purgeAuditBatch } from './audit-retention-repository.ts';
import type { AuditEntry } from './audit-types.ts';

/** Rows per DELETE: each batch is its own transaction of a few tens of milliseconds. */
export const AUDIT_PURGE_BATCH_SIZE = 5000;

/** The gate reason, the summary row's action and its actor (`system:audit.purge`). */
const PURGE = 'audit.purge';
const DAY_MS = 86_400_000;

/** Who started a run: the daily schedule or an operator's `svc audit purge`. */
export type PurgeTrigger = 'schedule' | 'operator';

export interface AuditPurgeRun {
  /** Audit rows deleted by the whole run. */
  deleted: number;
  /** Sessions deleted by the whole run: those that ended (revoked or expired) before the cutoff. */
  sessionsDeleted: number;
  /** The cutoff: every row older was deleted, none at or after it was touched. */
  before: Date;
  retentionDays: number;
  /** Transactions the run took (the last one deletes fewer than a batch, possibly none). */
  batches: number;
}

export interface AuditRetentionDeps {
  system: Pick<SystemGate, 'withSystem'>;
  now: () => Date;
  /**
   * The install setting `audit.retention_days` (the settings domain's reader, passed in by
   * compose: settings writes audit rows, so audit importing settings would close a cycle).
   */
  retentionDays: (tx: SystemTx) => Promise<number>;
  /**
   * Deletes up to `limit` sessions that ended before `before`, returning how many (the
   * sessions repository's purgeEndedSessions, passed in by compose for the same reason).
   */
  purgeSessions: (tx: SystemTx, before: Date, limit: number) => Promise<number>;
  batchSize?: number;
}

type PurgeWindow = Pick<AuditPurgeRun, 'before' | 'retentionDays'>;

function windowAt(now: Date, retentionDays: number): PurgeWindow {
  return { before: new Date(now.getTime() - retentionDays * DAY_MS), retentionDays };
}

function summary(run: AuditPurgeRun, trigger: PurgeTrigger): AuditEntry {
  return {
    tenantId: null,
    actorPrincipal: 'System',
    actorId: `system:${PURGE}`,
    action: PURGE,
    resourceType: 'audit_log',
    details: {
      deleted: run.deleted,
      sessions_deleted: run.sessionsDeleted,
      before: run.before.toISOString(),
      retention_days: run.retentionDays,
      batches: run.batches,
      trigger,
    },
  };
}

export function createAuditRetention(deps: AuditRetentionDeps) {
  const batchSize = deps.batchSize ?? AUDIT_PURGE_BATCH_SIZE;
  return {
    /**
     * One purge run. The cutoff is fixed once, from the retention setting read in the first
     * batch, so a setting changed mid-run applies from the next run. A run that deletes nothing
     * still writes its row: the daily "deleted 0" is the proof that the schedule runs.
     */
    async purge(trigger: PurgeTrigger): Promise<AuditPurgeRun> {
      let window: PurgeWindow | undefined;
      let done = { deleted: 0, sessionsDeleted: 0, batches: 0, sessionsLeft: true };
      for (;;) {
        const step = await deps.system.withSystem(PURGE, async (tx) => {
          window ??= windowAt(deps.now(), await deps.retentionDays(tx));
          // Each batch transaction deletes up to a batch of each, until both come up short.
          const sessions = done.sessionsLeft
            ? await deps.purgeSessions(tx, window.before, batchSize)
            : 0;
          const deleted = await purgeAuditBatch(tx, window.before, batchSize);
          const run = {
            ...window,
            deleted: done.deleted + deleted,
            sessionsDeleted: done.sessionsDeleted + sessions,
            batches: done.batches + 1,
            sessionsLeft: sessions === batchSize,
          };
          // A short batch is the last: the run's own row commits with it.
          const last = deleted < batchSize && !run.sessionsLeft;
          if (last) await writeAudit(tx, summary(run, trigger));
          return { run, last };
        });
        if (step.last) {
          const { sessionsLeft: _, ...run } = step.run;
          return run;
        }
        done = step.run;
      }
    },
  };
}

export type AuditRetention = ReturnType<typeof createAuditRetention>;
