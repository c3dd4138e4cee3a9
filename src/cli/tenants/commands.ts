import { type Command, Option } from 'commander';
import { TenantState } from '../../../contracts/mssp.ts';
import {
  create,
  decommission,
  get,
  incidents,
  list,
  resume,
  retry,
  suspend,
  upgrade,
} from './actions.ts';
import { enrollment } from './enrollment.ts';
import { CliError } from './session.ts';

/**
 * `svc tenants …`: a client of a running svc over HTTP (docs/cli-tenants.md). Every action
 * goes through the API's authorization, audit and state machine, exactly as the console's do.
 */

const TENANT_STATES = TenantState.anyOf.map((s) => s.const);

/** Runs an action; a CliError becomes `svc: <message>` on stderr and its exit status. */
function run<A extends unknown[]>(fn: (...args: A) => Promise<void>) {
  return async (...args: A): Promise<void> => {
    try {
      await fn(...args);
    } catch (error) {
      if (!(error instanceof CliError)) throw error;
      process.stderr.write(`svc: ${error.message}\n`);
      process.exitCode = error.exitCode;
    }
  };
}

const jsonOption = () =>
  new Option('--json', "print the API's JSON instead of text").default(false);
const waitOptions = (cmd: Command, until: string) =>
  cmd
    .option('--wait', `follow progress until ${until}`, false)
    .option('--timeout <duration>', 'give up waiting after this long (exit 124)', '30m')
    .addOption(jsonOption());

export function registerTenantCommands(program: Command): void {
  const tenants = program
    .command('tenants')
    .description(
      'Manage tenants through a running svc (SVC_URL, SVC_CLI_EMAIL, SVC_CLI_PASSWORD; docs/cli-tenants.md)',
    )
    // Usage errors (unknown option, missing argument) are bad input: exit 2, as ours are.
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));
  waitOptions(
    tenants
      .command('create')
      .description('Create a tenant; it starts pending and the orchestrator provisions it')
      .option('--slug <slug>', 'DNS label; the namespace is tenant-<slug>')
      .option('--name <display name>', 'display name')
      .option('--config <file.json|->', 'a full TenantConfig as JSON (- reads stdin)'),
    'the tenant is active',
  ).action(run(create));
  tenants
    .command('list')
    .description('List tenants, newest first')
    .addOption(new Option('--state <state>', 'only tenants in this state').choices(TENANT_STATES))
    .addOption(jsonOption())
    .action(run(list));
  tenants
    .command('get')
    .description('Show one tenant with its lifecycle history')
    .argument('<id|slug>')
    .addOption(jsonOption())
    .action(run(get));
  tenants
    .command('incidents')
    .description("List a tenant's incidents (grouped alerts), newest first")
    .argument('<id|slug>')
    .option('--limit <n>', 'at most this many (1-200)', '50')
    .addOption(jsonOption())
    .action(run(incidents));
  tenants
    .command('enrollment')
    .description(
      "What an agent install needs to join an active tenant's manager (address, password, CA, commands); audited",
    )
    .argument('<id|slug>')
    .option('--rotate', 'replace the enrollment password first; the manager restarts', false)
    .addOption(jsonOption())
    .action(run(enrollment));
  tenants
    .command('decommission')
    .description('Start decommissioning an active tenant (the grace period begins)')
    .argument('<id|slug>')
    .option('--yes', 'do not ask for confirmation (required when stdin is not a terminal)', false)
    .addOption(jsonOption())
    .action(run(decommission));
  waitOptions(
    tenants
      .command('upgrade')
      .description("Upgrade an active tenant's package, as the compatibility matrix allows")
      .argument('<id|slug>')
      .requiredOption('--to <version>', 'the tenant package version'),
    'the upgrade is done',
  ).action(run(upgrade));
  waitOptions(
    tenants
      .command('retry')
      .description('Retry the provisioning of a pending tenant whose last attempt failed')
      .argument('<id|slug>'),
    'the tenant is active',
  ).action(run(retry));
  waitOptions(
    tenants
      .command('suspend')
      .description(
        'Suspend an active tenant: its adapter and customers are refused, its workloads scale to zero, nothing is deleted',
      )
      .argument('<id|slug>')
      .option('--reason <text>', 'why (1-500 characters), kept in the lifecycle and the audit log'),
    'the workloads are at zero',
  ).action(run(suspend));
  waitOptions(
    tenants
      .command('resume')
      .description('Resume a suspended tenant: its workloads get their replicas back')
      .argument('<id|slug>')
      .option('--reason <text>', 'why (1-500 characters), kept in the lifecycle and the audit log'),
    'the workloads have their replicas back',
  ).action(run(resume));
}
