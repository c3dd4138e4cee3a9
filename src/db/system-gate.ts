import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { currentRequestId } from '../log/index.ts';
import { transactionPooling } from './pools.ts';
import { type DatabaseTarget, pooledConfig } from './target.ts';
import { inTransaction, type SystemTx } from './tenant-context.ts';
import { mappingUnavailable } from './unavailable.ts';

/**
 * The only door to svc_mssp (BYPASSRLS), spec §5.7 item 6. Only the modules listed in
 * test/db/system-gate.test.ts may import this file; the test fails for any other importer.
 */
export interface SystemGate {
  withSystem<T>(reason: string, fn: (tx: SystemTx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

const REASON = /^[a-z][a-z0-9._-]{0,62}$/;

/**
 * The gate's own audit row (spec §2.6 columns, `actor_principal=System`,
 * `actor_id=system:<reason>`): written by the gate itself, so no caller can enter unrecorded.
 */
async function recordEntry(pool: pg.Pool, reason: string): Promise<void> {
  await pool.query(
    `INSERT INTO audit_log (id, tenant_id, actor_principal, actor_id, action, resource_type,
       resource_id, request_id, details)
     VALUES ($1, NULL, 'System', $2, 'system.enter', 'system_context', $3, $4, '{}'::jsonb)`,
    [randomUUID(), `system:${reason}`, reason, currentRequestId() ?? null],
  );
}

export function createSystemGate(target: DatabaseTarget, max = 4): SystemGate {
  // Transactional only (the entry row, then one transaction): it may go through a pooler.
  const pool = new pg.Pool({
    ...pooledConfig(target, 'mssp'),
    ...transactionPooling(target),
    pipeline: false,
    max,
  });
  pool.on('error', () => undefined);
  return {
    async withSystem(reason, fn) {
      if (!REASON.test(reason)) {
        throw new TypeError(`system reason must match ${REASON}, got ${JSON.stringify(reason)}`);
      }
      // The entry row commits on its own: entering the gate is recorded even when the work
      // inside it fails and rolls back. A lost database is a 503, as on the app pool.
      return mappingUnavailable(async () => {
        await recordEntry(pool, reason);
        return inTransaction(pool, (tx) => fn(tx as SystemTx));
      });
    },
    close: () => pool.end(),
  };
}
