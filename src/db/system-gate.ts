import pg from 'pg';
import { writeAudit } from '../domains/audit/audit-repository.ts';
import { clientConfig, type DatabaseTarget } from './target.ts';
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

export function createSystemGate(target: DatabaseTarget, max = 4): SystemGate {
  const pool = new pg.Pool({ ...clientConfig(target, 'mssp'), max });
  pool.on('error', () => undefined);
  return {
    async withSystem(reason, fn) {
      if (!REASON.test(reason)) {
        throw new TypeError(`system reason must match ${REASON}, got ${JSON.stringify(reason)}`);
      }
      // The entry row commits on its own: entering the gate is recorded even when the work
      // inside it fails and rolls back. A lost database is a 503, as on the app pool.
      return mappingUnavailable(async () => {
        await writeAudit(pool, {
          tenantId: null,
          actorPrincipal: 'System',
          actorId: `system:${reason}`,
          action: 'system.enter',
          resourceType: 'system_context',
          resourceId: reason,
        });
        return inTransaction(pool, (tx) => fn(tx as SystemTx));
      });
    },
    close: () => pool.end(),
  };
}
