import { serve as listen } from '@hono/node-server';
import type { Config } from '../config/index.ts';
import { migrate } from '../db/migrate.ts';
import { createAppDatabase } from '../db/pools.ts';
import { openDatabase } from '../db/runtime.ts';
import { clientConfig } from '../db/target.ts';
import { createApp } from '../http/app.ts';
import type { Logger } from '../log/index.ts';

/** `svc serve`: database up and migrated, then HTTP until SIGINT/SIGTERM. */
export async function serve(config: Config, logger: Logger): Promise<void> {
  const runtime = await openDatabase(config, logger);
  const result = await migrate(clientConfig(runtime.target, 'admin'));
  logger.info(
    { applied: result.applied, compatibility_synced: result.compatibilitySynced },
    'migrated',
  );
  const db = createAppDatabase(runtime.target);
  const app = createApp({
    authMode: config.authMode,
    trustedProxyCidrs: config.trustedProxyCidrs,
    logger,
    databaseReady: db.ping,
  });
  const server = listen({ fetch: app.fetch, hostname: config.host, port: config.port }, (info) => {
    logger.info(
      {
        url: `http://${config.host}:${info.port}`,
        auth_mode: config.authMode,
        embedded_db: runtime.embedded,
      },
      'svc listening',
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const shutdown = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      server.close(() => resolve());
    };
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
  });
  await db.close();
  await runtime.stop();
}
