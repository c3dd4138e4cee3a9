import type { Server } from 'node:http';
import { serve as listen } from '@hono/node-server';
import {
  composeApi,
  composeProjector,
  composeTenancy,
  composeWorkers,
  openCore,
} from '../app/compose.ts';
import { generatePassword } from '../auth/passwords.ts';
import type { Config } from '../config/index.ts';
import type { UserService } from '../domains/users/user-service.ts';
import { deferContinue } from '../http/body-limit.ts';
import { gracefulClose } from '../http/graceful-close.ts';
import type { Logger } from '../log/index.ts';
import { listenMetrics, type MetricsListener } from '../metrics/server.ts';
import { stopSignal } from './stop-signal.ts';

/** `svc serve`: database up and migrated, then HTTP until SIGINT/SIGTERM. */
export async function serve(config: Config, logger: Logger): Promise<void> {
  const core = await openCore(config, logger, { processMetrics: true });
  const stopRequested = stopSignal();
  let metrics: MetricsListener | undefined;
  try {
    metrics = await listenMetrics({ ...config.metrics, metrics: core.metrics, logger });
    const cluster = await composeTenancy(core);
    if (!cluster)
      logger.warn('no cluster access (in-cluster or KUBECONFIG): tenant creation answers 503');
    if (cluster && !config.orchestrator.enabled)
      logger.info('SVC_ORCHESTRATOR=off: tenants are provisioned by a separate `svc orchestrator`');
    try {
      const api = await composeApi(core, {
        secrets: cluster?.secrets,
        tenancy: cluster?.tenancy.api,
        embedded: core.runtime.embedded,
      });
      if (core.runtime.embedded && config.authMode === 'internal')
        await createFirstAdmin(config, api.services.users);
      // Shares the API's event hub (one LISTEN connection per process); SVC_PROJECTOR=off
      // leaves the folding to another svc serve replica.
      const projector = await composeProjector(core, { events: api.events });
      if (!config.projector.enabled)
        logger.info('SVC_PROJECTOR=off: projections are not folded here');
      // The job workers run here too unless a separate `svc worker` Deployment runs them; their
      // pipeline calls models through the API's LLM service (one key cache per process).
      const workers = config.worker.enabled
        ? await composeWorkers(core, { pipeline: { llm: api.services.llm } })
        : undefined;
      if (!workers) logger.info('SVC_WORKER=off: jobs are run by `svc worker`');
      try {
        await listenUntilSignal(config, logger, api, core.runtime.embedded, stopRequested);
      } finally {
        await workers?.stop();
        await projector.stop();
      }
      await api.close();
    } finally {
      await cluster?.tenancy.stop();
    }
  } finally {
    await metrics?.close();
    await core.close();
  }
}

/** The first start of an empty embedded install gets a platform_admin (README quick start). */
async function createFirstAdmin(config: Config, users: UserService): Promise<void> {
  if (!(await users.hasNoUsers())) return;
  const password = generatePassword();
  await users.createPlatformAdmin(config.auth.bootstrapAdminEmail, password);
  // Straight to the terminal, once; never through the logger.
  process.stderr.write(
    `\nsvc: first start — created platform_admin ${config.auth.bootstrapAdminEmail} with password:\n\n    ${password}\n\nSign in and choose a new password; this one is not shown again.\n\n`,
  );
}

async function listenUntilSignal(
  config: Config,
  logger: Logger,
  api: Awaited<ReturnType<typeof composeApi>>,
  embedded: boolean,
  stopRequested: Promise<string>,
): Promise<void> {
  if (api.origins.describe().length === 0) {
    logger.warn(
      'no SVC_MSSP_HOSTNAME or SVC_CUSTOMER_HOSTNAME: every state-changing request will be refused (CSRF)',
    );
  }
  // deferContinue: a body over the limit is refused without inviting it first (body-limit.ts).
  const server = deferContinue(
    listen({ fetch: api.app.fetch, hostname: config.host, port: config.port }, (info) => {
      logger.info(
        {
          url: `http://${config.host}:${info.port}`,
          auth_mode: config.authMode,
          embedded_db: embedded,
          origins: api.origins.describe(),
        },
        'svc listening',
      );
    }),
  );
  const closing = gracefulClose(server as Server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    void stopRequested.then((signal) => {
      logger.info({ signal }, 'shutting down');
      // A signal that came during startup may arrive before the port is bound.
      const close = () => void closing.close().then(resolve);
      if (server.listening) close();
      else server.once('listening', close);
    });
  });
}
