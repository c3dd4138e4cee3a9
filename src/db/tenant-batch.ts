import type pg from 'pg';
import { prepared } from './prepared.ts';
import { assertTenantId, type TenantTx } from './tenant-context.ts';
import { mappingUnavailable } from './unavailable.ts';
import { holdWrites } from './unit-of-work.ts';

/** Reads one tenant's rows inside readEachTenant: it must send its statements at once. */
export type TenantRead<T> = (tx: TenantTx, tenantId: string) => Promise<T>;

const SET_CONTEXT = "SELECT set_config('app.current_tenant_id', $1, true)";

/**
 * Several tenants' reads in one read-only transaction on one connection, each under its own
 * tenant's RLS context: `set_config(tenant)` then that tenant's statements, tenant after
 * tenant. On a pipelined connection everything (BEGIN, every context and read, COMMIT) leaves
 * in one write and the answers come back in one round trip, where a transaction per tenant
 * cost three round trips and a pool checkout each (the event hub reads up to 1,000 tenants a
 * second at fleet size, docs/events.md).
 *
 * Safety rests on order: PostgreSQL runs one connection's statements in the order sent, so a
 * read's statements run under its tenant's context only if they are sent before the next
 * tenant's `set_config`. Pipelined, a read must therefore send every statement synchronously
 * when called (an `async` function whose first statement is `await tx.query(...)` does); a
 * statement it sends later would run under a later tenant's context, so its transaction
 * refuses it (throws) instead. Without a pipeline (behind a transaction-pooling pooler) the
 * reads run one after another, each awaited, and may do as they like.
 *
 * All or nothing: if any statement fails, the batch rejects (the transaction is aborted, so no
 * later read could be trusted either) and the caller retries it whole. Results are in the
 * order of `tenantIds`; an id that is not a uuid is refused before anything is sent.
 */
export function readEachTenant<T>(
  pool: pg.Pool,
  tenantIds: readonly string[],
  read: TenantRead<T>,
): Promise<T[]> {
  for (const tenantId of tenantIds) assertTenantId(tenantId);
  if (tenantIds.length === 0) return Promise.resolve([]);
  return mappingUnavailable(async () => {
    const client = await pool.connect();
    // See inTransaction: a connection that dies while checked out must not crash the process.
    let broken: Error | undefined;
    const onError = (error: Error) => {
      broken = error;
    };
    client.on('error', onError);
    try {
      return client.pipeline
        ? await pipelined(client, tenantIds, read)
        : await oneByOne(client, tenantIds, read);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  });
}

async function pipelined<T>(
  client: pg.PoolClient,
  tenantIds: readonly string[],
  read: TenantRead<T>,
): Promise<T[]> {
  holdWrites(client);
  const statements: Promise<unknown>[] = [client.query('BEGIN READ ONLY')];
  const reads: Promise<T>[] = [];
  for (const tenantId of tenantIds) {
    statements.push(client.query(prepared('tenant.context', SET_CONTEXT, [tenantId])));
    const tx = sendingNow(client);
    try {
      reads.push(read(tx.view, tenantId));
    } catch (error) {
      reads.push(Promise.reject(error));
    } finally {
      tx.close();
    }
  }
  statements.push(client.query('COMMIT'));
  // Settled together: after a failure the later statements fail too (the transaction is
  // aborted, and its COMMIT ends it as a rollback), and none of them may go unhandled.
  const [sent, values] = await Promise.all([
    Promise.allSettled(statements),
    Promise.allSettled(reads),
  ]);
  const failed = [...sent, ...values].find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
  return values.map((r) => (r as PromiseFulfilledResult<T>).value);
}

async function oneByOne<T>(
  client: pg.PoolClient,
  tenantIds: readonly string[],
  read: TenantRead<T>,
): Promise<T[]> {
  await client.query('BEGIN READ ONLY');
  try {
    const values: T[] = [];
    for (const tenantId of tenantIds) {
      await client.query(prepared('tenant.context', SET_CONTEXT, [tenantId]));
      values.push(await read(client as TenantTx, tenantId));
    }
    await client.query('COMMIT');
    return values;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/**
 * The client as one read's transaction, for as long as the read is being called: a statement
 * sent after `close()` (the next tenant's context is on the wire by then) is refused.
 */
function sendingNow(client: pg.PoolClient): { view: TenantTx; close(): void } {
  let open = true;
  const send = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
  const query = (...args: unknown[]): Promise<unknown> => {
    if (!open)
      return Promise.reject(
        new Error('a batched tenant read must send its statements when it is called'),
      );
    return send(...args);
  };
  return {
    view: { query } as unknown as TenantTx,
    close: () => {
      open = false;
    },
  };
}
