import type { Command } from 'commander';
import type { Config } from '../config/index.ts';
import type { Logger } from '../log/index.ts';

/**
 * `svc audit purge`: one retention run now, the same as the daily schedule's (docs/operations.md
 * "Audit retention"); for an operator who lowered the retention or wants the space back today.
 */
export async function runAuditPurge(config: Config, logger: Logger): Promise<void> {
  const { composeAuditRetention, openCore } = await import('../app/compose.ts');
  const core = await openCore(config, logger, { migrate: 'embedded' });
  try {
    const run = await composeAuditRetention(core).purge('operator');
    process.stdout.write(
      `deleted ${run.deleted} audit row(s) older than ${run.before.toISOString()} (retention ${run.retentionDays} days) in ${run.batches} batch(es)\n` +
        `deleted ${run.sessionsDeleted} ended session(s) (ended before ${run.before.toISOString()})\n`,
    );
  } finally {
    await core.close();
  }
}

export function registerAuditCommands(
  program: Command,
  config: () => Config,
  logger: (config: Config) => Logger,
): void {
  const audit = program.command('audit').description('The audit trail (docs/auditing.md)');
  audit
    .command('purge')
    .description(
      'Delete audit rows older than the retention window (install setting audit.retention_days, default 90), and sessions that ended before it, now, as the daily schedule does',
    )
    .action(async () => {
      const loaded = config();
      await runAuditPurge(loaded, logger(loaded));
    });
}
