import pg from 'pg';
import { UnnamedStatementClient } from './prepared.ts';
import { type DatabaseTarget, isPooled, pooledConfig } from './target.ts';
import type { AppTx, InstallTx, TenantTx, Transaction } from './tenant-context.ts';
import { mappingUnavailable } from './unavailable.ts';
import { guardUnit, inScope, type ScopeOptions, unitOfWork } from './unit-of-work.ts';

/** What handlers and workers get: the RLS-subject svc_app pool and its entry points. */
export interface AppDatabase {
  pool: pg.Pool;
  withTenant<T>(
    tenantId: string,
    fn: (tx: TenantTx) => Promise<T>,
    options?: ScopeOptions,
  ): Promise<T>;
  /** A transaction with no tenant context: install-scoped tables only; tenant rows read as zero. */
  withoutTenant<T>(fn: (tx: InstallTx) => Promise<T>, options?: ScopeOptions<T>): Promise<T>;
  /** withTenant for a tenant id, withoutTenant for null (a row that belongs to no tenant). */
  withScope<T>(
    tenantId: string | null,
    fn: (tx: AppTx) => Promise<T>,
    options?: ScopeOptions<T>,
  ): Promise<T>;
  /** Runs fn as one unit of work: every scope inside shares one connection and transaction. */
  unitOfWork<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Makes a literal statement the current unit's guard (src/db/unit-of-work.ts guardUnit): it
   * runs in front of the unit's first statement and its failure, as `refused` maps it, fails the
   * unit. False when there is no unit to guard or it has begun: the caller checks by itself.
   */
  guard(
    statement: string,
    context: string | null,
    refused: (error: unknown) => Error,
    readOnly?: boolean,
  ): boolean;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Every entry point maps a lost database (refused, reset, terminated by a restart) to the
 * 503 `database_unavailable` problem, so callers never mistake it for a bug (500).
 */
/**
 * How long a unit of work waits for an app-pool connection (a free one, or a new one to be
 * connected) before it fails as 503 `database_unavailable`: an exhausted pool or a connect whose
 * SYNs are dropped (a pooler Service between an endpoint's loss and kube-proxy's next sync) does
 * not hold a request, or queue new ones, without end (docs/operations.md "Sizing").
 */
export const APP_POOL_WAIT_MS = 10_000;
/** /healthz's own connection: a probe must fail before the kubelet's timeout. */
const HEALTH_WAIT_MS = 3_000;

export function createAppDatabase(
  target: DatabaseTarget,
  max = 10,
  options: { waitMs?: number } = {},
): AppDatabase {
  const pool = new pg.Pool({
    ...pooledConfig(target, 'app'),
    ...transactionPooling(target),
    max,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: options.waitMs ?? APP_POOL_WAIT_MS,
  });
  // An idle client's network error must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  // /healthz asks on a connection of its own: whether the database answers svc_app must not
  // wait behind a queue of requests for the main pool (a sign-in flood, docs/auth.md "Device cookie").
  const health = new pg.Pool({
    ...pooledConfig(target, 'app'),
    ...transactionPooling(target),
    pipeline: false,
    max: 1,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: HEALTH_WAIT_MS,
  });
  health.on('error', () => undefined);
  const scoped = <T>(
    tenantId: string | null,
    fn: (tx: Transaction) => Promise<T>,
    options?: ScopeOptions<T>,
  ) => mappingUnavailable(() => inScope(pool, tenantId, fn, options));
  return {
    pool,
    withTenant: (tenantId, fn, options) => scoped(tenantId, (tx) => fn(tx as TenantTx), options),
    withoutTenant: (fn, options) => scoped(null, (tx) => fn(tx as InstallTx), options),
    withScope: (tenantId, fn, options) => scoped(tenantId, (tx) => fn(tx as AppTx), options),
    unitOfWork: (fn) => mappingUnavailable(() => unitOfWork(pool, fn)),
    guard: (statement, context, refused, readOnly) =>
      guardUnit(pool, statement, context, refused, readOnly),
    ping: async () => {
      try {
        await health.query('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    close: async () => {
      await Promise.all([pool.end(), health.end()]);
    },
  };
}

/**
 * How a pool talks to its connections. Direct: pipelined, so a unit's COMMIT is written ahead
 * of the next holder's statements (unit-of-work.ts commitAhead). Behind a transaction-pooling
 * pooler the server may go to another client as soon as COMMIT's answer leaves it, and one
 * client connection's pipelined statements could reach a server another client then uses
 * (docs/operations.md "Connection pooling"): no pipeline (every COMMIT is awaited before the
 * connection goes back to the pool) and no named statements.
 */
export function transactionPooling(
  target: DatabaseTarget,
): Pick<pg.PoolConfig, 'pipeline' | 'Client'> {
  if (!isPooled(target)) return { pipeline: true };
  return { pipeline: false, Client: UnnamedStatementClient };
}
