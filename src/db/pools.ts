import pg from 'pg';
import { clientConfig, type DatabaseTarget } from './target.ts';
import { inTransaction, type Transaction, withTenant } from './tenant-context.ts';
import { mappingUnavailable } from './unavailable.ts';

/** What handlers and workers get: the RLS-subject svc_app pool and its two entry points. */
export interface AppDatabase {
  pool: pg.Pool;
  withTenant<T>(tenantId: string, fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** A transaction with no tenant context: install-scoped tables only; tenant rows read as zero. */
  withoutTenant<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** withTenant for a tenant id, withoutTenant for null (a row that belongs to no tenant). */
  withScope<T>(tenantId: string | null, fn: (tx: Transaction) => Promise<T>): Promise<T>;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Every entry point maps a lost database (refused, reset, terminated by a restart) to the
 * 503 `database_unavailable` problem, so callers never mistake it for a bug (500).
 */
export function createAppDatabase(target: DatabaseTarget, max = 10): AppDatabase {
  const pool = new pg.Pool({ ...clientConfig(target, 'app'), max, idleTimeoutMillis: 30_000 });
  // An idle client's network error must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  return {
    pool,
    withTenant: (tenantId, fn) => mappingUnavailable(() => withTenant(pool, tenantId, fn)),
    withoutTenant: (fn) => mappingUnavailable(() => inTransaction(pool, fn)),
    withScope: (tenantId, fn) =>
      mappingUnavailable(() =>
        tenantId === null ? inTransaction(pool, fn) : withTenant(pool, tenantId, fn),
      ),
    ping: async () => {
      try {
        await pool.query('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    close: () => pool.end(),
  };
}
