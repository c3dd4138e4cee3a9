import { type ScratchDatabase, startScratchDatabase } from '../../src/db/scratch.ts';
import { clusterGlobalSetup, clusterGlobalTeardown } from './cluster.ts';
import { SERVER_ENV, type TestDatabaseServer } from './database.ts';
import { openSearchGlobalSetup, openSearchGlobalTeardown } from './opensearch.ts';

let database: ScratchDatabase | undefined;

/**
 * Runs once per `npm test`: one embedded PostgreSQL with a migrated template database that
 * every test file clones, one Kubernetes control plane and one plain OpenSearch node (the real
 * indexer, docs/testing.md). Test files run in child processes and inherit this environment.
 */
export async function globalSetup(): Promise<void> {
  const [db] = await Promise.all([
    startScratchDatabase('svc_template'),
    clusterGlobalSetup(),
    openSearchGlobalSetup(),
  ]);
  database = db;
  const server: TestDatabaseServer = {
    template: 'svc_template',
    target: db.target,
    superuser: db.superuser,
  };
  process.env[SERVER_ENV] = JSON.stringify(server);
}

export async function globalTeardown(): Promise<void> {
  await Promise.all([database?.stop(), clusterGlobalTeardown(), openSearchGlobalTeardown()]);
}
