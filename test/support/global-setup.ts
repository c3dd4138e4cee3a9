import { type ScratchDatabase, startScratchDatabase } from '../../src/db/scratch.ts';
import { SERVER_ENV, type TestDatabaseServer } from './database.ts';

let database: ScratchDatabase | undefined;

/**
 * Runs once per `npm test`: one embedded PostgreSQL with a migrated template database that
 * every test file clones. Test files run in child processes and inherit this environment.
 */
export async function globalSetup(): Promise<void> {
  database = await startScratchDatabase('svc_template');
  const server: TestDatabaseServer = {
    template: 'svc_template',
    target: database.target,
    superuser: database.superuser,
  };
  process.env[SERVER_ENV] = JSON.stringify(server);
}

export async function globalTeardown(): Promise<void> {
  await database?.stop();
}
