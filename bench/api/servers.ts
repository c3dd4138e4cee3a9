import { generateKeyPairSync } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { composeApi, composeCore } from '../../src/app/compose.ts';
import type { HashParams, PasswordHasher } from '../../src/auth/passwords.ts';
import { type Config, loadConfig } from '../../src/config/index.ts';
import type { AppDatabase } from '../../src/db/pools.ts';
import type { SystemGate } from '../../src/db/system-gate.ts';
import type { DatabaseTarget } from '../../src/db/target.ts';
import type { EventHub } from '../../src/domains/events/index.ts';
import type { CredentialWatch } from '../../src/domains/sessions/credential-watch.ts';
import { createLogger } from '../../src/log/index.ts';
import { countRoundTrips, type RoundTrips } from './round-trips.ts';

/** svc serve's pool size (composeCore's default); the bare route gets as many. */
export const POOL_SIZE = 10;
/** Sign-in is not measured here; cheap hashes keep minting real sessions fast. */
export const BENCH_HASH: HashParams = {
  memoryCost: 1024,
  timeCost: 1,
  parallelism: 1,
  outputLen: 32,
};

export interface Server {
  url: string;
  /** Queries its database pool has sent so far. */
  roundTrips: RoundTrips;
  close(): Promise<void>;
}

/** Both sides read the same clock, so the answer check can pin it to one instant. */
export interface Clock {
  now(): Date;
  freeze(at: Date | undefined): void;
}

export function createClock(): Clock {
  let frozen: Date | undefined;
  return {
    now: () => frozen ?? new Date(),
    freeze: (at) => {
      frozen = at;
    },
  };
}

export async function listen(fetch: (request: Request) => Response | Promise<Response>) {
  const server: ServerType = serve({ fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((resolve) => {
      if ('closeAllConnections' in server) server.closeAllConnections();
      server.close(() => resolve());
    });
  return { url: `http://127.0.0.1:${port}`, close };
}

/**
 * The overview is a customer read under RLS; it must never need the bypass role, so the app
 * gets a gate that throws instead of the core's svc_mssp pool.
 */
const NO_SYSTEM_GATE: SystemGate = {
  withSystem: () => Promise.reject(new Error('the API benchmark provides no system gate')),
  close: async () => undefined,
};

/** `svc serve`'s configuration with sign-in rate limits out of the way and a throwaway key. */
function benchConfig(): Config {
  const defaults = loadConfig({});
  const pem = generateKeyPairSync('ed25519')
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  return {
    ...defaults,
    authMode: 'internal',
    trustedProxyCidrs: [],
    tokenKey: { kind: 'pem', pem },
    auth: {
      ...defaults.auth,
      loginRateLimitPerIp: 1e9,
      loginRateLimitPerEmail: 1e9,
      hashConcurrency: 2,
      hashQueue: 64,
    },
  };
}

/** The app from the composition root, with the loopback origin policy of an embedded install. */
export async function startApp(
  target: DatabaseTarget,
  clock: Clock,
): Promise<Server & { events: EventHub; watch: CredentialWatch; hasher: PasswordHasher }> {
  const core = await composeCore({
    config: benchConfig(),
    logger: createLogger('silent'),
    target,
    now: clock.now,
    hashParams: BENCH_HASH,
    poolSize: POOL_SIZE,
  });
  const roundTrips = countRoundTrips(core.db.pool);
  const api = await composeApi({ ...core, system: NO_SYSTEM_GATE }, { embedded: true });
  const server = await listen(api.app.fetch);
  return {
    url: server.url,
    events: api.events,
    watch: api.watch,
    hasher: core.hasher,
    roundTrips,
    close: async () => {
      await server.close();
      await api.close();
      await core.close();
    },
  };
}

/**
 * A svc_app pool of its own, as a worker process has: the appender of the SSE phase. It comes
 * from the composition root too; only its database is used.
 */
export async function openWorkerDatabase(
  target: DatabaseTarget,
  poolSize: number,
): Promise<{ db: AppDatabase; close(): Promise<void> }> {
  const core = await composeCore({
    config: benchConfig(),
    logger: createLogger('silent'),
    target,
    hashParams: BENCH_HASH,
    poolSize,
  });
  return { db: core.db, close: core.close };
}
