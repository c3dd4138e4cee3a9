import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { serve } from '@hono/node-server';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import {
  composeApi,
  composeCore,
  composeOrchestration,
  composeProjector,
  composeWorkers,
  type OrchestrationInput,
  type WorkersInput,
} from '../../src/app/compose.ts';
import { createOriginPolicy, type OriginPolicy } from '../../src/auth/csrf.ts';
import type { Role } from '../../src/auth/identity.ts';
import type { HashParams, PasswordHasher } from '../../src/auth/passwords.ts';
import type { SecretStore } from '../../src/cluster/secrets.ts';
import { type AuthConfig, type AuthMode, type Config, loadConfig } from '../../src/config/index.ts';
import type { AppDatabase } from '../../src/db/pools.ts';
import type { EventHub } from '../../src/domains/events/index.ts';
import type { CredentialWatch } from '../../src/domains/sessions/credential-watch.ts';
import { setPassword } from '../../src/domains/users/user-repository.ts';
import { deferContinue } from '../../src/http/body-limit.ts';
import { gracefulClose } from '../../src/http/graceful-close.ts';
import { createLogger, type Logger } from '../../src/log/index.ts';
import type { MetricsRegistry } from '../../src/metrics/registry.ts';
import type { OutboundPolicy } from '../../src/net/outbound-url.ts';
import type { TenancyDeps } from '../../src/orchestrator/context.ts';
import type { TenancyRuntime } from '../../src/orchestrator/runtime.ts';
import type { TokenService } from '../../src/tokens/index.ts';
import type { TestDatabase } from './database.ts';

/** A clock tests move by hand, for expiry and lockout windows. */
export function testClock(start = Date.now()) {
  let t = start;
  return {
    now: () => new Date(t),
    advance: (ms: number) => {
      t += ms;
    },
  };
}

function wallClock(): ReturnType<typeof testClock> {
  return {
    now: () => new Date(),
    advance: () => {
      throw new Error('this test API runs on the wall clock (it has an orchestrator)');
    },
  };
}

export interface TestApi {
  url: string;
  events: EventHub;
  /** The orchestrator of `options.orchestration`. */
  tenancy: TenancyRuntime | undefined;
  /** The app's one credential watch (its re-check passes). */
  watch: CredentialWatch;
  tokens: TokenService;
  origin: string;
  hasher: PasswordHasher;
  clock: ReturnType<typeof testClock>;
  /** How many database transactions the API opened through svc_app (withTenant/withoutTenant). */
  transactions: () => number;
  /** The process registry every part records into (test/metrics scrape it). */
  metrics: MetricsRegistry;
  close(): Promise<void>;
}

export interface TestApiOptions {
  mode?: AuthMode;
  auth?: Partial<AuthConfig>;
  trustedProxyCidrs?: string[];
  origins?: OriginPolicy;
  hash?: { concurrency?: number; queue?: number; params?: HashParams };
  /** Secrets in an install namespace of the test cluster, for tenant creation. */
  secrets?: SecretStore;
  /** The orchestrator's side of the tenant endpoints, when a test stands in for it. */
  tenancy?: TenancyDeps;
  /** A real orchestrator over the same core (test/provisioning/support.ts). */
  orchestration?: OrchestrationInput;
  /** Environment the configuration is read from (install namespace, ids, chart version…). */
  env?: Record<string, string>;
  /** Internal targets tenant URLs may name (SVC_OUTBOUND_ALLOW_*). */
  outbound?: OutboundPolicy;
  /** Listen on this port (a restarted API at the address its clients know); default any. */
  port?: number;
  /** Job workers over the same core (the pipeline's by default), stopped with the API. */
  workers?: WorkersInput;
  /** Run the projector over the same core and event hub (the read models follow the events). */
  projector?: boolean;
  /** The process's logger; default silent. */
  logger?: Logger;
}

/** Counts scopes (withTenant/withoutTenant/withScope) without changing them: the database stays real. */
function counting(db: AppDatabase): { db: AppDatabase; count: () => number } {
  let n = 0;
  return {
    db: {
      ...db,
      withTenant: (id, fn, options) => {
        n++;
        return db.withTenant(id, fn, options);
      },
      withoutTenant: (fn, options) => {
        n++;
        return db.withoutTenant(fn, options);
      },
      withScope: (id, fn, options) => {
        n++;
        return db.withScope(id, fn, options);
      },
    },
    count: () => n,
  };
}

/** The real HTTP app (src/app/compose.ts) on a real socket (127.0.0.1, ephemeral port). */
export async function startTestApi(
  database: TestDatabase,
  options: TestApiOptions = {},
): Promise<TestApi> {
  // A real orchestrator waits out real intervals: it runs on the wall clock.
  const clock = options.orchestration ? wallClock() : testClock();
  const keyDir = await mkdtemp(path.join(tmpdir(), 'svc-key-'));
  const defaults = loadConfig(options.env ?? {});
  const config: Config = {
    ...defaults,
    dataDir: keyDir,
    authMode: options.mode ?? 'internal',
    trustedProxyCidrs: options.trustedProxyCidrs ?? [],
    ...(options.outbound ? { outbound: options.outbound } : {}),
    auth: {
      ...defaults.auth,
      hashConcurrency: options.hash?.concurrency ?? 2,
      hashQueue: options.hash?.queue ?? 64,
      ...options.auth,
    },
  };
  const { db, count } = counting(database.app);
  const core = await composeCore({
    config,
    logger: options.logger ?? createLogger('silent'),
    target: database.target,
    db,
    now: clock.now,
    ...(options.hash?.params ? { hashParams: options.hash.params } : {}),
  });
  const orchestration = options.orchestration
    ? await composeOrchestration(core, options.orchestration)
    : undefined;
  const api = await composeApi(core, {
    origins:
      options.origins ??
      createOriginPolicy({
        msspHostname: undefined,
        customerHostname: undefined,
        allowLoopback: true,
      }),
    secrets: options.orchestration?.secrets ?? options.secrets,
    tenancy: orchestration?.api ?? options.tenancy,
    heartbeatMs: 1000,
  });
  const workers = options.workers ? await composeWorkers(core, options.workers) : undefined;
  const projector = options.projector
    ? await composeProjector(core, { events: api.events, run: true, sweepMs: 1000 })
    : undefined;
  const server = deferContinue(
    serve({ fetch: api.app.fetch, hostname: '127.0.0.1', port: options.port ?? 0 }),
  );
  const closing = gracefulClose(server as Server);
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    tokens: core.tokens,
    events: api.events,
    watch: api.watch,
    origin: url,
    hasher: core.hasher,
    clock,
    transactions: count,
    metrics: core.metrics,
    tenancy: orchestration,
    close: async () => {
      await workers?.stop();
      await projector?.stop();
      await orchestration?.stop();
      await closing.close();
      await api.close();
      await core.close();
      await rm(keyDir, { recursive: true, force: true });
    },
  };
}

/** Inserts a user (and, with a password, its credential) directly, as fixtures do. */
export async function seedUser(
  database: TestDatabase,
  hasher: PasswordHasher,
  input: {
    email: string;
    role: Role;
    tenantId?: string | null;
    password?: string;
    mustChange?: boolean;
  },
): Promise<string> {
  const tenantId = input.tenantId ?? null;
  return database.app.withScope(tenantId, async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      'INSERT INTO users (tenant_id, email, role) VALUES ($1, $2, $3) RETURNING id',
      [tenantId, input.email, input.role],
    );
    const id = rows[0]?.id ?? '';
    if (input.password !== undefined) {
      await setPassword(
        tx,
        id,
        await hasher.hash(input.password),
        input.mustChange ?? false,
        new Date(),
      );
    }
    return id;
  });
}

/** A tiny cookie-keeping client, so each test reads like a browser session. */
export function client(api: TestApi, extraHeaders: Record<string, string> = {}) {
  let cookie: string | undefined;
  async function call(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) {
    const res = await fetch(`${api.url}${path}`, {
      method,
      headers: {
        origin: api.origin,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(cookie ? { cookie } : {}),
        ...extraHeaders,
        ...headers,
      },
      body: body === undefined ? null : JSON.stringify(body),
    });
    const set = res.headers.get('set-cookie');
    if (set) {
      const pair = set.split(';')[0] ?? '';
      cookie = pair.endsWith('=') ? undefined : pair;
    }
    const text = await res.text();
    const json: unknown = text ? JSON.parse(text) : undefined;
    return {
      status: res.status,
      headers: res.headers,
      body: json as Record<string, unknown> & { code?: string },
    };
  }
  return {
    call,
    login: (email: string, password: string) =>
      call('POST', '/api/auth/login', { email, password }),
    cookie: () => cookie,
    setCookie: (value: string | undefined) => {
      cookie = value;
    },
  };
}

/** The problem `code` of any SDK response, without narrowing on its status first. */
export function problemCode(res: { body: unknown }): string | undefined {
  const body = res.body as { code?: unknown } | undefined;
  return typeof body?.code === 'string' ? body.code : undefined;
}

/**
 * Mints an impersonation token through the API as `staff` and returns an SDK client that
 * acts with it (no cookies), as a console would after "enter tenant".
 */
export async function impersonating(
  api: TestApi,
  staff: SvcClient,
  tenantId: string,
  reason: string,
): Promise<SvcClient> {
  const minted = await staff.mssp.impersonate({
    params: { tenant_id: tenantId },
    body: { reason },
  });
  if (minted.status !== 200) throw new Error(`impersonation refused: ${minted.status}`);
  return createSvcClient({
    baseUrl: api.url,
    headers: { origin: api.origin, authorization: `Bearer ${minted.body.token}` },
    cookies: false,
  });
}
