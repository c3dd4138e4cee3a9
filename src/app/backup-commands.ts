import { svcVersion } from '../assets/index.ts';
import type { Config } from '../config/index.ts';
import {
  checkBackupTarget,
  checkRestorable,
  restoreBackup,
  type Superuser,
  takeBackup,
} from '../db/backup/backup.ts';
import { BackupError } from '../db/backup/pg-tools.ts';
import { pruneBackups, timestampedArchive } from '../db/backup/retention.ts';
import { loadOrCreateCredentials } from '../db/credentials.ts';
import { startEmbedded } from '../db/embedded.ts';
import { openDatabase } from '../db/runtime.ts';
import type { DatabaseTarget } from '../db/target.ts';
import type { Logger } from '../log/index.ts';

/**
 * Where the database is and a superuser for it: the embedded server's own, or
 * SVC_DATABASE_BOOTSTRAP_URL's. A backup needs one to switch to svc_backup (src/db/backup).
 */
async function superuserTarget(
  config: Config,
  logger: Logger,
): Promise<{ target: DatabaseTarget; superuser: Superuser; stop(): Promise<void> }> {
  const db = config.database;
  if (db.kind === 'embedded') {
    const server = await startEmbedded(config.dataDir, logger);
    try {
      const credentials = await loadOrCreateCredentials(config.dataDir);
      return {
        target: { host: server.host, port: server.port, database: 'svc', ssl: false, credentials },
        superuser: { host: server.host, port: server.port, ...server.superuser },
        stop: () => server.stop(),
      };
    } catch (error) {
      await server.stop();
      throw error;
    }
  }
  if (db.bootstrapUrl === undefined) {
    throw new BackupError(
      'svc db backup needs a superuser login for the external database: set SVC_DATABASE_BOOTSTRAP_URL (docs/operations.md "Backup and restore")',
    );
  }
  const runtime = await openDatabase(config, logger);
  return {
    target: runtime.target,
    superuser: { connectionString: db.bootstrapUrl },
    stop: () => runtime.stop(),
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface BackupPlace {
  /** An exact file, or a directory where the archive gets a timestamped name. */
  out?: string | undefined;
  dir?: string | undefined;
  /** With `dir`: how many backups to keep (the newest). */
  keep?: number | undefined;
}

export async function runDbBackup(
  config: Config,
  logger: Logger,
  place: BackupPlace,
): Promise<void> {
  if ((place.out === undefined) === (place.dir === undefined)) {
    throw new BackupError('give exactly one of --out <file> and --dir <directory>');
  }
  if (place.keep !== undefined && place.dir === undefined) {
    throw new BackupError('--keep prunes a directory of backups: use it with --dir');
  }
  const out = place.out ?? timestampedArchive(place.dir ?? '.', new Date());
  // A bad --out fails before any database is started or touched.
  await checkBackupTarget(out);
  const { target, superuser, stop } = await superuserTarget(config, logger);
  try {
    const { archive, manifest } = await takeBackup({
      target,
      superuser,
      out,
      svcVersion: svcVersion(),
    });
    process.stdout.write(
      `backup written: ${archive} (${manifest.archive.bytes} bytes, sha256 ${manifest.archive.sha256})\n` +
        `manifest: ${archive}.manifest.json (install ${manifest.installId}, schema version ${manifest.schemaVersion}, svc ${manifest.svcVersion})\n`,
    );
  } finally {
    await stop();
  }
  if (place.dir !== undefined && place.keep !== undefined) {
    for (const old of await pruneBackups(place.dir, place.keep, new Date())) {
      process.stdout.write(`pruned ${old} (keeping the ${place.keep} newest)\n`);
    }
  }
}

export async function runDbRestore(
  config: Config,
  logger: Logger,
  from: string,
  installId: string | undefined,
): Promise<void> {
  if (installId !== undefined && !UUID.test(installId)) {
    throw new BackupError(`--install-id: expected a uuid, got ${JSON.stringify(installId)}`);
  }
  // Every check on the archive runs before a database is created or touched.
  const { archive, manifest } = await checkRestorable({
    from,
    installId: installId ?? config.install.installId,
  });
  const runtime = await openDatabase(config, logger);
  try {
    const { restoredTables } = await restoreBackup({ target: runtime.target, archive });
    process.stdout.write(
      `restored ${archive} into database ${runtime.target.database}: ${restoredTables} tables, schema version ${manifest.schemaVersion}, install ${manifest.installId}\n` +
        `start svc with SVC_INSTALL_ID=${manifest.installId}; \`svc migrate\` (or svc serve) applies any newer migrations\n`,
    );
  } finally {
    await runtime.stop();
  }
}
