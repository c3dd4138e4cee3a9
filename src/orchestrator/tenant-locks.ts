import pg from 'pg';
import { clientConfig, type DatabaseTarget } from '../db/target.ts';
import { tenantSessionLocks } from '../domains/provisioning/provisioning-service.ts';

/**
 * One tenant at a time, cluster-wide: a session-level advisory lock on a dedicated connection.
 * If the orchestrator dies, PostgreSQL drops the connection and the lock with it, so a
 * restarted (or another replica's) orchestrator picks the tenant up where the lifecycle
 * record says it stopped. The API and the adapter heartbeat take the same lock per transaction
 * (tenant-lifecycle.ts lockTenant) before they move a tenant, so no transition lands in the middle of
 * the orchestrator's work.
 */
export interface TenantLocks {
  tryAcquire(tenantId: string): Promise<(() => Promise<void>) | undefined>;
  close(): Promise<void>;
}

export function createTenantLocks(target: DatabaseTarget, max: number): TenantLocks {
  const pool = new pg.Pool({ ...clientConfig(target, 'app'), max });
  let ended: Promise<void> | undefined;
  pool.on('error', () => undefined);
  return {
    async tryAcquire(tenantId) {
      const client = await pool.connect();
      // Held across awaits with no statement running, so a server-side disconnect arrives as
      // an 'error' event that pg-pool does not catch for checked-out clients: it would crash
      // the process. The lock goes with the connection; releasing afterwards is harmless.
      let broken: Error | undefined;
      const onError = (error: Error) => {
        broken = error;
      };
      client.on('error', onError);
      const done = (error?: Error) => {
        client.off('error', onError);
        client.release(error ?? broken);
      };
      try {
        if (!(await tenantSessionLocks.tryLock(client, tenantId))) {
          done();
          return undefined;
        }
      } catch (error) {
        done(error as Error);
        throw error;
      }
      return async () => {
        try {
          await tenantSessionLocks.unlock(client, tenantId);
          done();
        } catch (error) {
          done(error as Error);
        }
      };
    },
    // Idempotent: a runtime stopped by its owner and again by a harness's cleanup must not
    // throw on the second stop (pg's pool.end() refuses a second call).
    close: () => {
      ended ??= pool.end();
      return ended;
    },
  };
}
