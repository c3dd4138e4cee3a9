import { Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError, type DatabaseRole, loadConfig } from '../config/index.ts';
import { createLogger } from '../log/index.ts';
import { registerAuditCommands } from './audit.ts';
import { registerProjectionCommands } from './projections.ts';
import { registerTenantCommands } from './tenants/commands.ts';

// Each command loads what it runs only when it runs (dynamic imports below): `svc adapter`,
// the per-tenant sidecar, must not carry the API, the database driver, argon2 and the
// Kubernetes client in its memory (measured: 235 MiB with every command loaded, 118 MiB with
// its own; the tenant chart limits it to 256 MiB).

function configOrExit() {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`svc: invalid configuration: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
}

const program = new Command('svc')
  .description(
    'Multi-tenant security-operations control plane. Configuration comes from SVC_* environment variables (see README).',
  )
  .option('-V, --version', 'print the program, system chart and supported tenant chart versions')
  // Root options only before a command: `svc serve --version` is a usage error, not a serve.
  .enablePositionalOptions();

// Answered before commander parses, so printing versions loads neither config nor database.
if (['-V', '--version'].includes(process.argv[2] ?? '')) {
  const { versionReport } = await import('../app/version.ts');
  process.stdout.write(versionReport());
  process.exit(0);
}

program
  .command('serve')
  .description(
    'Start the database (embedded when none is configured), migrate, and serve HTTP on SVC_HOST:SVC_PORT',
  )
  .action(async () => {
    const config = configOrExit();
    const { serve } = await import('./serve.ts');
    await serve(config, createLogger(config.logLevel));
  });

program
  .command('orchestrator')
  .description(
    'Run only the tenant orchestrator (no HTTP); pair with SVC_ORCHESTRATOR=off on svc serve',
  )
  .action(async () => {
    const config = configOrExit();
    const { runOrchestrator } = await import('./orchestrator.ts');
    await runOrchestrator(config, createLogger(config.logLevel));
  });

program
  .command('worker')
  .description(
    'Run only the job workers (triage, enrichment, decisions, approved actions); SVC_WORKER_CONCURRENCY jobs at once',
  )
  .action(async () => {
    const config = configOrExit();
    const { runWorker } = await import('./worker.ts');
    await runWorker(config, createLogger(config.logLevel));
  });

program
  .command('adapter')
  .description(
    "Run a tenant's adapter sidecar: heartbeat, token upkeep and alert ingest from its indexer (docs/adapter.md)",
  )
  .action(async () => (await import('./adapter.ts')).adapterCommand());

program
  .command('migrate')
  .description('Apply pending SQL migrations from sql/ and sync the chart-compatibility list')
  .action(async () => {
    const config = configOrExit();
    const { runMigrate } = await import('../app/database-commands.ts');
    await runMigrate(config, createLogger(config.logLevel));
  });

const db = program.command('db').description('Database connection helpers, backup and restore');
db.command('url')
  .description('Print the connection URL of one of the database roles')
  .addOption(
    new Option(
      '--role <role>',
      'admin (svc_admin), app (svc_app), mssp (svc_mssp) or audit (svc_audit, read-only)',
    )
      .choices(['admin', 'app', 'mssp', 'audit'])
      .default('app'),
  )
  .option('--show-password', 'print the password instead of REDACTED', false)
  .action(async (options: { role: DatabaseRole; showPassword: boolean }) => {
    const config = configOrExit();
    const { runDbUrl } = await import('../app/database-commands.ts');
    await runDbUrl(config, createLogger('silent'), options.role, options.showPassword);
  });

db.command('backup')
  .description(
    'Write a pg_dump archive of svc\'s database and its manifest (install id, schema version, sha256); docs/operations.md "Backup and restore"',
  )
  .option(
    '--out <file>',
    'the archive to write; <file>.manifest.json goes beside it; never overwritten',
  )
  .option('--dir <directory>', 'write svc-<UTC time>.dump (and its manifest) into this directory')
  .addOption(
    new Option(
      '--keep <n>',
      'with --dir: keep the n newest backups there, delete older ones',
    ).argParser((value) => {
      const n = Number(value);
      if (!/^\d+$/.test(value) || n < 1) {
        throw new InvalidArgumentError('expected a whole number of at least 1');
      }
      return n;
    }),
  )
  .action(async (options: { out?: string; dir?: string; keep?: number }) => {
    const config = configOrExit();
    const { runDbBackup } = await import('../app/backup-commands.ts');
    await runDbBackup(config, createLogger('warn'), options);
  });
db.command('restore')
  .description(
    'Restore an archive of svc db backup into an empty database, after checking its manifest, checksum, install id and schema version',
  )
  .requiredOption('--from <file>', 'the archive; <file>.manifest.json must be beside it')
  .option('--install-id <uuid>', 'the install the archive must belong to (default SVC_INSTALL_ID)')
  .action(async (options: { from: string; installId?: string }) => {
    const config = configOrExit();
    const { runDbRestore } = await import('../app/backup-commands.ts');
    await runDbRestore(config, createLogger('warn'), options.from, options.installId);
  });

program
  .command('psql')
  .description(
    'Open psql as the read-only svc_audit; with --tenant, app.current_tenant_id is set so RLS shows that tenant only',
  )
  .option('--tenant <slug-or-uuid>', 'the tenant whose rows the session may see')
  .argument('[psql-args...]', 'passed to psql after --, e.g. -- -c "SELECT count(*) FROM events"')
  .action(async (psqlArgs: string[], options: { tenant?: string }) => {
    const config = configOrExit();
    const { runPsql } = await import('../app/database-commands.ts');
    process.exitCode = await runPsql(config, createLogger('warn'), psqlArgs, options.tenant);
  });

const auth = program
  .command('auth')
  .description('Internal-mode account administration (spec §5.10)');
auth
  .command('set-password')
  .description(
    "Set a user's password (prompted twice on a terminal, else read from stdin); the user must change it at next sign-in",
  )
  .argument('<email>', "the user's email")
  .option('--generate', 'generate a strong password and print it once', false)
  .action(async (email: string, options: { generate: boolean }) => {
    const config = configOrExit();
    const { runSetPassword } = await import('./auth.ts');
    await runSetPassword(config, createLogger('warn'), email, options.generate);
  });
auth
  .command('create-admin')
  .description('Create a platform_admin (password prompted, read from stdin, or generated)')
  .requiredOption('--email <email>', "the new administrator's email")
  .option('--generate', 'generate a strong password and print it once', false)
  .action(async (options: { email: string; generate: boolean }) => {
    const config = configOrExit();
    const { runCreateAdmin } = await import('./auth.ts');
    await runCreateAdmin(config, createLogger('warn'), options.email, options.generate);
  });

registerTenantCommands(program);
registerProjectionCommands(program, configOrExit, (config) => createLogger(config.logLevel));
registerAuditCommands(program, configOrExit, (config) => createLogger(config.logLevel));

/** `svc auth set-password`, as typed: the names from the program down to this command. */
function fullName(command: Command): string {
  return command.parent ? `${fullName(command.parent)} ${command.name()}` : command.name();
}

/**
 * Every usage error (unknown command or option, missing or invalid argument) ends in exit 2
 * and one line saying where the usage is, instead of the whole help page.
 * Set on every command: commander copies these settings only into commands created later.
 */
function strictUsage(command: Command): void {
  command
    .showHelpAfterError(`(run '${fullName(command)} --help' for usage)`)
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));
  for (const sub of command.commands) strictUsage(sub);
}
strictUsage(program);

/**
 * The first word after a command group that names none of its commands. Commander shows the
 * group's help for `svc <unknown> --help` (and exits 0) before it looks at the word, so the
 * words are checked here first.
 */
function unknownCommand(args: readonly string[]): { group: Command; word: string } | undefined {
  let group = program;
  for (const word of args) {
    if (word.startsWith('-') || group.commands.length === 0) return undefined;
    if (word === 'help') continue;
    const next = group.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!next) return { group, word };
    group = next;
  }
  return undefined;
}
const unknown = unknownCommand(process.argv.slice(2));
if (unknown)
  unknown.group.error(`error: unknown command '${unknown.word}'`, {
    code: 'commander.unknownCommand',
    exitCode: 2,
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // undefined_table: an external database nobody has migrated yet (docs/operations.md).
  if ((error as { code?: unknown }).code === '42P01') {
    process.stderr.write(
      `svc: ${(error as Error).message}: the database has no schema yet; run \`svc migrate\` first\n`,
    );
    process.exit(2);
  }
  process.stderr.write(`svc: ${(error as Error).message}\n`);
  process.exit(1);
}
