import pkg from '../../package.json' with { type: 'json' };
import { ConfigError } from '../config/env.ts';
import { startHealthServer } from '../http/health-server.ts';
import type { Logger } from '../log/index.ts';
import { createAdapterMetrics } from './adapter-metrics.ts';
import { createHeartbeat } from './heartbeat.ts';
import { createIndexerClient } from './indexer.ts';
import { createIngestLoop } from './ingest-loop.ts';
import type { AdapterSettings } from './settings.ts';
import { createInternalClient } from './svc-client.ts';
import { createTokenSource } from './token.ts';

/**
 * `svc adapter`, the per-tenant sidecar (spec §1 item 2, §2.1 row 5): heartbeat, token
 * upkeep, configuration and alert ingest for one tenant, talking only to svc's API and the
 * tenant's own indexer. Runs until SIGTERM/SIGINT; then no new batch starts, the post in flight
 * completes, and the promise resolves (exit 0). docs/adapter.md.
 */
export async function runAdapter(settings: AdapterSettings, logger: Logger): Promise<void> {
  const stop = new AbortController();
  const client = createInternalClient(settings.apiUrl);
  const tokens = createTokenSource({
    tenantId: settings.tenantId,
    bootstrapDir: settings.bootstrapDir,
    tokenFile: settings.tokenFile,
    client,
    logger,
  });
  const indexer = createIndexerClient(settings.indexer);
  const metrics = createAdapterMetrics();
  const ingest = createIngestLoop({
    client,
    tokens,
    indexer,
    index: settings.indexer.index,
    batchSize: settings.batchSize,
    pollMs: settings.pollMs,
    lateMs: settings.lateMs,
    metrics,
    logger,
    signal: stop.signal,
  });
  const heartbeat = createHeartbeat({
    client,
    tokens,
    version: pkg.version,
    intervalMs: settings.heartbeatMs,
    status: () => ({
      ingest: ingest.status.ingest,
      indexer: ingest.status.indexer,
      lag_seconds:
        ingest.status.lag_seconds === null ? null : Math.round(ingest.status.lag_seconds),
      alerts_delivered: ingest.status.alerts_delivered,
      alerts_duplicate: ingest.status.alerts_duplicate,
      alerts_refused: ingest.status.alerts_refused,
      ingest_order: ingest.status.ingest_order,
      alerts_late: ingest.status.alerts_late,
      alerts_late_ingested: ingest.status.alerts_late_ingested,
      alerts_late_in_window: ingest.status.alerts_late_in_window,
    }),
    logger,
    signal: stop.signal,
  });
  let server: Awaited<ReturnType<typeof startHealthServer>>;
  try {
    // Readiness leaves the indexer out on purpose: the first heartbeat must activate the tenant
    // while the indexer may still be starting.
    server = await startHealthServer({
      host: settings.host,
      port: settings.port,
      readiness: () => ({
        ready: heartbeat.state.ok && ingest.status.checkpoint_loaded,
        details: {
          svc: heartbeat.state.ok ? 'reachable' : 'unreachable',
          tenant_state: heartbeat.state.tenantState ?? null,
          ...ingest.status,
        },
      }),
      metrics: metrics.scrape,
    });
  } catch (error) {
    indexer.close();
    throw new ConfigError(
      `SVC_ADAPTER_PORT: cannot listen on ${settings.host}:${settings.port}: ${(error as NodeJS.ErrnoException).code}`,
    );
  }
  const shutdown = (signal: string) => {
    logger.info({ signal }, 'stopping: finishing the batch in flight');
    stop.abort();
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
  logger.info(
    {
      tenant_id: settings.tenantId,
      api_url: settings.apiUrl,
      indexer_url: settings.indexer.url,
      index: settings.indexer.index,
      late_window_seconds: settings.lateMs / 1000,
      host: settings.host,
      port: server.port,
      version: pkg.version,
    },
    'adapter running',
  );
  try {
    await Promise.all([ingest.run(), heartbeat.run()]);
  } finally {
    process.off('SIGTERM', shutdown);
    process.off('SIGINT', shutdown);
    await server.close();
    indexer.close();
  }
  logger.info('adapter stopped');
}
