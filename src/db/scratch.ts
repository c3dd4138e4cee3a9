import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createLogger, type Logger } from '../log/index.ts';
import { bootstrapDatabase } from './bootstrap.ts';
import { loadOrCreateCredentials } from './credentials.ts';
import { startEmbedded } from './embedded.ts';
import { migrate } from './migrate.ts';
import { clientConfig, type DatabaseTarget } from './target.ts';

export interface ScratchDatabase {
  dir: string;
  target: DatabaseTarget;
  superuser: { host: string; port: number; user: string; password: string };
  stop(): Promise<void>;
}

/**
 * A throwaway embedded PostgreSQL in a temp directory with the svc roles and a migrated
 * database: the base of the test suite's template database and of type generation.
 */
export async function startScratchDatabase(
  database = 'svc',
  logger: Logger = createLogger('silent'),
): Promise<ScratchDatabase> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-scratch-'));
  await chmod(dir, 0o711);
  const server = await startEmbedded(dir, logger);
  try {
    const credentials = await loadOrCreateCredentials(dir);
    const superuser = { host: server.host, port: server.port, ...server.superuser };
    await bootstrapDatabase(superuser, database, credentials);
    const target: DatabaseTarget = {
      host: server.host,
      port: server.port,
      database,
      ssl: false,
      credentials,
    };
    await migrate(clientConfig(target, 'admin'));
    return {
      dir,
      target,
      superuser,
      stop: async () => {
        await waitForClientsToLeave(superuser);
        await server.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Clients that just called end() may still be closing; stopping the server under them turns
 * a clean disconnect into an error event in whichever library owns the client.
 */
async function waitForClientsToLeave(superuser: pg.ClientConfig): Promise<void> {
  const client = new pg.Client({ ...superuser, database: 'postgres' });
  await client.connect();
  try {
    for (let attempt = 0; attempt < 50; attempt++) {
      const { rows } = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
      );
      if ((rows[0]?.n ?? 0) === 0) return;
      await sleep(50);
    }
  } finally {
    await client.end();
  }
}
