import type { Config } from '../config/index.ts';
import type { Logger } from '../log/index.ts';
import { bootstrapDatabase } from './bootstrap.ts';
import { loadOrCreateCredentials } from './credentials.ts';
import { startEmbedded } from './embedded.ts';
import type { DatabaseTarget } from './target.ts';

export interface DatabaseRuntime {
  target: DatabaseTarget;
  embedded: boolean;
  /**
   * Stops the embedded server this process started or attached to, unless another live svc
   * process still uses it (docs/faults.md); external databases are untouched.
   */
  stop(): Promise<void>;
}

const DATABASE_NAME = 'svc';

/**
 * Resolves where the database is: the configured external server, or the embedded one under
 * the data directory. Roles and the database are created when svc holds a superuser for it.
 */
export async function openDatabase(config: Config, logger: Logger): Promise<DatabaseRuntime> {
  const db = config.database;
  if (db.kind === 'embedded') {
    const server = await startEmbedded(config.dataDir, logger);
    try {
      const credentials = await loadOrCreateCredentials(config.dataDir);
      await bootstrapDatabase(
        { host: server.host, port: server.port, ...server.superuser },
        DATABASE_NAME,
        credentials,
      );
      return {
        target: {
          host: server.host,
          port: server.port,
          database: DATABASE_NAME,
          ssl: false,
          credentials,
        },
        embedded: true,
        stop: () => server.stop(),
      };
    } catch (error) {
      await server.stop();
      throw error;
    }
  }
  const credentials = db.credentials ?? (await loadOrCreateCredentials(config.dataDir));
  if (db.bootstrapUrl !== undefined) {
    logger.info({ host: db.host, database: db.database }, 'bootstrapping roles and database');
    await bootstrapDatabase({ connectionString: db.bootstrapUrl }, db.database, credentials);
  }
  return {
    target: {
      host: db.host,
      port: db.port,
      database: db.database,
      ssl: db.ssl,
      credentials,
      ...(db.pooler === undefined ? {} : { pooler: db.pooler }),
    },
    embedded: false,
    stop: async () => {},
  };
}
