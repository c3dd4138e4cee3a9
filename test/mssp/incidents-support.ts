import type { AppDatabase } from '../../src/db/pools.ts';
import type { SystemGate } from '../../src/db/system-gate.ts';
import { createProjectionService } from '../../src/domains/projections/projection-service.ts';
import { openInvestigation, receiveAlert, wazuhAlert } from '../projections/support.ts';
import type { TestDatabase } from '../support/database.ts';

/**
 * Incidents for the desk's tests (docs/investigations.md), written as ingest writes them
 * (`investigation.opened` then its `alert.received`s) and folded into the read models.
 */
export interface SeedIncident {
  ruleId?: string;
  agentId?: string;
  level?: number;
  alerts?: number;
  srcip?: string;
  at?: Date;
}

export async function seedIncident(
  db: AppDatabase,
  tenantId: string,
  input: SeedIncident = {},
): Promise<string> {
  const at = input.at ?? new Date('2026-11-20T10:00:00Z');
  const first = wazuhAlert({
    ruleId: input.ruleId ?? '5710',
    level: input.level ?? 5,
    agentId: input.agentId ?? '001',
    at,
    ...(input.srcip ? { srcip: input.srcip } : {}),
  });
  const id = await openInvestigation(db, tenantId, first, at);
  for (let i = 0; i < (input.alerts ?? 1); i++) {
    const when = new Date(at.getTime() + i * 1000);
    const alert =
      i === 0
        ? first
        : wazuhAlert({
            ruleId: input.ruleId ?? '5710',
            level: input.level ?? 5,
            agentId: input.agentId ?? '001',
            at: when,
            ...(input.srcip ? { srcip: input.srcip } : {}),
          });
    await receiveAlert(db, tenantId, id, alert, when);
  }
  return id;
}

/** Folds every event of the tenant written so far into the read models. */
export async function foldAll(db: TestDatabase, system: SystemGate, tenantId: string) {
  const projections = createProjectionService({ db: db.app, system });
  const latest = await db.pools.mssp.query<{ id: string }>(
    'SELECT coalesce(max(id), 0)::text AS id FROM events WHERE tenant_id = $1',
    [tenantId],
  );
  await projections.catchUp(tenantId, BigInt(latest.rows[0]?.id ?? '0'));
}

/** Rows of the tenant a refused call must not have added to. */
export async function writtenRows(db: TestDatabase, tenantId: string) {
  const { rows } = await db.pools.mssp.query<{ events: number; audit: number }>(
    `SELECT (SELECT count(*)::int FROM events WHERE tenant_id = $1) AS events,
            (SELECT count(*)::int FROM audit_log WHERE tenant_id = $1) AS audit`,
    [tenantId],
  );
  return rows[0];
}
