import { generateKeyPairSync } from 'node:crypto';
import { composeApi, composeCore, composeProjector } from '../../src/app/compose.ts';
import { type Config, loadConfig } from '../../src/config/index.ts';
import type { AppDatabase } from '../../src/db/pools.ts';
import type { DatabaseTarget } from '../../src/db/target.ts';
import { issueBootstrapCredential } from '../../src/domains/adapter/adapter-service.ts';
import { createLogger } from '../../src/log/index.ts';
import type { MetricsRegistry } from '../../src/metrics/registry.ts';
import type { Projector } from '../../src/projector/projector.ts';
import { createSecretMounts, type SecretMounts } from '../../test/support/adapter-process.ts';
import { BENCH_HASH, listen } from '../api/servers.ts';

/** The settings this benchmark exists to tune pass through from the environment. */
const TUNABLE = /^SVC_(PROJECTOR|INGEST)_/;

function benchConfig(): Config {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => TUNABLE.test(name)),
  ) as Record<string, string>;
  const pem = generateKeyPairSync('ed25519')
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  return { ...loadConfig(env), authMode: 'internal', tokenKey: { kind: 'pem', pem } };
}

export interface BenchApp {
  url: string;
  config: Config;
  db: AppDatabase;
  /** The projector's own view (folds, lag) and the process's metrics, to check against the database. */
  projector: Projector;
  metrics: MetricsRegistry;
  /** Stops the projector only (the baseline phase must not be folded while it is timed). */
  stopProjector(): Promise<void>;
  close(): Promise<void>;
}

/**
 * svc serve's process without the cluster: composeCore (its default pool of 10), composeApi
 * on 127.0.0.1, and the projector sharing the API's event hub, as src/cli/serve.ts wires them.
 */
export async function startApp(target: DatabaseTarget, poolSize?: number): Promise<BenchApp> {
  const core = await composeCore({
    config: benchConfig(),
    logger: createLogger('warn'),
    target,
    hashParams: BENCH_HASH,
    ...(poolSize !== undefined ? { poolSize } : {}),
  });
  const api = await composeApi(core, { embedded: true });
  const projector = await composeProjector(core, { events: api.events });
  const server = await listen(api.app.fetch);
  let projectorStopped = false;
  const stopProjector = async () => {
    if (projectorStopped) return;
    projectorStopped = true;
    await projector.stop();
  };
  return {
    url: server.url,
    config: core.config,
    db: core.db,
    projector: projector.projector,
    metrics: core.metrics,
    stopProjector,
    close: async () => {
      await server.close();
      await stopProjector();
      await api.close();
      await core.close();
    },
  };
}

export interface BenchTenant {
  id: string;
  n: number;
  mounts: SecretMounts;
}

/**
 * Active tenants as provisioning leaves them for their adapters: a bootstrap credential
 * issued (src/domains/adapter) and written into a kubelet-style Secret mount.
 */
export async function createTenants(
  db: AppDatabase,
  count: number,
  prefix: string,
): Promise<BenchTenant[]> {
  const slugs = Array.from({ length: count }, (_, n) => `${prefix}-${n + 1}`);
  const { rows } = await db.pool.query<{ id: string; slug: string }>(
    `INSERT INTO tenants (slug, display_name, state)
     SELECT s, 'Ingest bench ' || s, 'active' FROM unnest($1::text[]) AS s RETURNING id, slug`,
    [slugs],
  );
  const ids = new Map(rows.map((r) => [r.slug, r.id]));
  return Promise.all(
    slugs.map(async (slug, n) => {
      const id = ids.get(slug) ?? '';
      const { secret } = await db.withTenant(id, (tx) => issueBootstrapCredential(tx, id));
      const mounts = await createSecretMounts();
      await mounts.writeBootstrap({ 'tenant-id': id, credential: secret });
      return { id, n, mounts };
    }),
  );
}
