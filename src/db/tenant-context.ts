import type pg from 'pg';
import { isUuid } from '../../contracts/uuid.ts';

/** A transaction of any scope: what code that reads no tenant-scoped rows may take. */
export type Transaction = pg.PoolClient;

declare const scope: unique symbol;

/**
 * A svc_app transaction with `app.current_tenant_id` set: RLS confines it to one tenant. A
 * function that must run under RLS takes this type, and only `withTenant` makes one.
 */
export type TenantTx = Transaction & { readonly [scope]: 'tenant' };
/** A svc_app transaction with no tenant context: install-scoped tables; tenant rows read as none. */
export type InstallTx = Transaction & { readonly [scope]: 'install' };
/** A svc_mssp (BYPASSRLS) transaction, only from the system gate; every tenant's rows are visible. */
export type SystemTx = Transaction & { readonly [scope]: 'system' };
/** Either svc_app scope: for rows that belong to a tenant or to the install (users, sessions). */
export type AppTx = TenantTx | InstallTx;

/**
 * One transaction on the pool, rolled back when fn throws. `begin` opens it: BEGIN, or BEGIN
 * with the statements that set the transaction up, in one round trip (a simple query).
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  fn: (tx: Transaction) => Promise<T>,
  begin = 'BEGIN',
): Promise<T> {
  const client = await pool.connect();
  // pg-pool listens for errors only on idle clients; a connection that dies while checked
  // out (server restart, terminated backend) would otherwise emit an unhandled 'error' and
  // crash the process. The failing query rejects on its own; the broken client is discarded.
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken = error;
  };
  client.on('error', onError);
  try {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

export function assertTenantId(tenantId: string): void {
  if (!isUuid(tenantId))
    throw new TypeError(`tenant id must be a uuid, got ${JSON.stringify(tenantId)}`);
}

/**
 * Runs fn in one transaction on the svc_app pool with `app.current_tenant_id` set for that
 * transaction only (is_local = true), so the setting can never outlive it on a pooled
 * connection. RLS then confines every statement in fn to that tenant.
 */
export async function withTenant<T>(
  pool: pg.Pool,
  tenantId: string,
  fn: (tx: TenantTx) => Promise<T>,
): Promise<T> {
  assertTenantId(tenantId);
  // The id is a checked uuid, so it may travel as a literal: BEGIN and the context then cost
  // one round trip, not two (every worker and projector transaction opens this way).
  return inTransaction(
    pool,
    (tx) => fn(tx as TenantTx),
    `BEGIN; SELECT set_config('app.current_tenant_id', '${tenantId}', true)`,
  );
}
