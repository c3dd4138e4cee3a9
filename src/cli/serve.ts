import { readFile } from 'node:fs/promises';
import { serve as listen } from '@hono/node-server';
import { createOriginPolicy } from '../auth/csrf.ts';
import { createPasswordHasher, generatePassword } from '../auth/passwords.ts';
import { createSecretStore, loadKubeConfig } from '../cluster/secrets.ts';
import type { Config } from '../config/index.ts';
import { migrate } from '../db/migrate.ts';
import { createAppDatabase } from '../db/pools.ts';
import { openDatabase } from '../db/runtime.ts';
import { createSystemGate } from '../db/system-gate.ts';
import { clientConfig } from '../db/target.ts';
import { createEventHub } from '../domains/events/index.ts';
import { createAuthService } from '../domains/sessions/session-service.ts';
import { createPlatformAdmin, hasNoUsers } from '../domains/users/user-service.ts';
import { createApp } from '../http/app.ts';
import type { Logger } from '../log/index.ts';
import { startTenancy } from '../orchestrator/runtime.ts';
import { createTokenService, loadOrCreateSigningKey, signingKeyFromPem } from '../tokens/index.ts';

/** `svc serve`: database up and migrated, then HTTP until SIGINT/SIGTERM. */
export async function serve(config: Config, logger: Logger): Promise<void> {
  const runtime = await openDatabase(config, logger);
  const result = await migrate(clientConfig(runtime.target, 'admin'));
  logger.info(
    { applied: result.applied, compatibility_synced: result.compatibilitySynced },
    'migrated',
  );
  const db = createAppDatabase(runtime.target);
  const system = createSystemGate(runtime.target);
  const hasher = createPasswordHasher({
    concurrency: config.auth.hashConcurrency,
    queue: config.auth.hashQueue,
  });
  const now = () => new Date();
  const tokens = createTokenService({ key: await signingKey(config), now });
  const events = await createEventHub({
    target: runtime.target,
    db,
    onError: (error, context) => logger.warn({ err: error, context }, 'event hub recovered'),
  });

  if (runtime.embedded && config.authMode === 'internal' && (await hasNoUsers(db))) {
    const password = generatePassword();
    await createPlatformAdmin(db, hasher, config.auth.bootstrapAdminEmail, password);
    // Straight to the terminal, once; never through the logger.
    process.stderr.write(
      `\nsvc: first start — created platform_admin ${config.auth.bootstrapAdminEmail} with password:\n\n    ${password}\n\nSign in and choose a new password; this one is not shown again.\n\n`,
    );
  }

  const kubeConfig = loadKubeConfig();
  if (!kubeConfig)
    logger.warn('no cluster access (in-cluster or KUBECONFIG): tenant creation answers 503');
  const secrets = kubeConfig ? createSecretStore(kubeConfig, config.installNamespace) : undefined;
  const tenancy =
    kubeConfig && secrets
      ? await startTenancy({
          config,
          target: runtime.target,
          db,
          system,
          tokens,
          kubeConfig,
          secrets,
          logger,
          now,
        })
      : undefined;
  if (tenancy && !config.orchestrator.enabled)
    logger.info('SVC_ORCHESTRATOR=off: tenants are provisioned by a separate `svc orchestrator`');

  const origins = createOriginPolicy({
    msspHostname: config.auth.msspHostname,
    customerHostname: config.auth.customerHostname,
    allowLoopback: runtime.embedded && !config.auth.msspHostname && !config.auth.customerHostname,
  });
  if (origins.describe().length === 0) {
    logger.warn(
      'no SVC_MSSP_HOSTNAME or SVC_CUSTOMER_HOSTNAME: every state-changing request will be refused (CSRF)',
    );
  }
  const app = createApp({
    authMode: config.authMode,
    trustedProxyCidrs: config.trustedProxyCidrs,
    logger,
    databaseReady: db.ping,
    api: {
      auth: config.auth,
      db,
      system,
      hasher,
      origins,
      now,
      tokens,
      events,
      secrets,
      tenancy: tenancy?.api,
      outbound: config.outbound,
      service: createAuthService({ db, hasher, now, authMode: config.authMode }),
    },
  });
  const server = listen({ fetch: app.fetch, hostname: config.host, port: config.port }, (info) => {
    logger.info(
      {
        url: `http://${config.host}:${info.port}`,
        auth_mode: config.authMode,
        embedded_db: runtime.embedded,
        origins: origins.describe(),
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
  await tenancy?.stop();
  await events.close();
  await Promise.all([db.close(), system.close()]);
  await runtime.stop();
}

export async function signingKey(config: Config) {
  const source = config.tokenKey;
  if (source.kind === 'pem') return signingKeyFromPem(source.pem, 'SVC_TOKEN_SIGNING_KEY');
  if (source.kind === 'file') {
    return signingKeyFromPem(await readFile(source.path, 'utf8'), source.path);
  }
  return loadOrCreateSigningKey(config.dataDir);
}
