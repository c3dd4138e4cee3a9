import type { Command } from 'commander';
import type { Config } from '../config/index.ts';
import type { Logger } from '../log/index.ts';

/**
 * `svc projections rebuild [--tenant]`: refolds projections from the event store, one tenant
 * per transaction under its projector lock (docs/projections.md). A running projector simply
 * skips a tenant while its rebuild holds the lock and continues from the new checkpoint.
 */
export async function runRebuild(config: Config, logger: Logger, tenant?: string): Promise<void> {
  const { composeProjections, openCore } = await import('../app/compose.ts');
  const core = await openCore(config, logger, { migrate: 'embedded' });
  try {
    const projections = composeProjections(core);
    let targets: { id: string; slug: string }[];
    if (tenant === undefined) {
      targets = await projections.tenants();
    } else {
      const found = await projections.findTenant(tenant);
      if (!found) throw new Error(`no tenant with slug or id ${JSON.stringify(tenant)}`);
      targets = [found];
    }
    let events = 0;
    for (const [index, target] of targets.entries()) {
      const result = await projections.rebuild(target.id);
      events += result.events;
      process.stdout.write(
        `[${index + 1}/${targets.length}] ${target.slug} (${target.id}): ${result.events} events folded, checkpoint ${result.lastEventId}\n`,
      );
    }
    process.stdout.write(`rebuilt ${targets.length} tenant(s), ${events} events\n`);
  } finally {
    await core.close();
  }
}

export function registerProjectionCommands(
  program: Command,
  config: () => Config,
  logger: (config: Config) => Logger,
): void {
  const projections = program
    .command('projections')
    .description('Read models folded from the event store (docs/projections.md)');
  projections
    .command('rebuild')
    .description(
      "Delete a tenant's projection rows and fold its events again from the first (every tenant, one at a time, without --tenant)",
    )
    .option('--tenant <slug-or-uuid>', 'only this tenant')
    .action(async (options: { tenant?: string }) => {
      const loaded = config();
      await runRebuild(loaded, logger(loaded), options.tenant);
    });
}
