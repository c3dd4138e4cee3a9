import { createHash, randomUUID } from 'node:crypto';
import type { AppDatabase } from '../../src/db/pools.ts';
import { appendEvent } from '../../src/domains/events/index.ts';
import { PROJECTIONS } from '../../src/domains/projections/projection-registry.ts';
import type { TestDatabase } from '../support/database.ts';

/** A Wazuh alert in the indexer's shape (issue 12 contract). */
export function wazuhAlert(input: {
  ruleId: string;
  level: number;
  description?: string;
  agentId?: string;
  at: Date;
  srcip?: string;
  url?: string;
  sha256?: string;
}): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  if (input.srcip) data.srcip = input.srcip;
  if (input.url) data.url = input.url;
  return {
    timestamp: input.at.toISOString().replace('Z', '+0000'),
    rule: {
      level: input.level,
      description: input.description ?? `rule ${input.ruleId}`,
      id: input.ruleId,
      groups: ['syslog'],
    },
    agent: { id: input.agentId ?? '001', name: 'web-01', ip: '10.0.0.11' },
    manager: { name: 'wazuh-manager' },
    id: `${input.at.getTime() / 1000}.${randomUUID().slice(0, 7)}`,
    full_log: 'Nov 26 13:45:01 web-01 sshd[811]: Invalid user admin',
    data,
    ...(input.sha256 ? { syscheck: { sha256_after: input.sha256 } } : {}),
  };
}

export function severityOf(level: number): string {
  if (level <= 3) return 'info';
  if (level <= 6) return 'low';
  if (level <= 9) return 'medium';
  if (level <= 12) return 'high';
  return 'critical';
}

/** The contract's alert stream id: a UUID from SHA-256 of "wazuh-alert:" + source id. */
export function alertStreamId(sourceId: string): string {
  const h = createHash('sha256').update(`wazuh-alert:${sourceId}`).digest('hex');
  const variant = ((Number.parseInt(h[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** `investigation.opened` exactly as ingest writes it; returns the investigation id. */
export async function openInvestigation(
  db: AppDatabase,
  tenantId: string,
  alert: Record<string, unknown>,
  at: Date,
): Promise<string> {
  const id = randomUUID();
  const rule = alert.rule as { id: string; level: number; description: string };
  const agent = alert.agent as { id: string };
  await db.withTenant(tenantId, (tx) =>
    appendEvent(tx, {
      tenantId,
      streamType: 'investigation',
      streamId: id,
      streamSeq: 1,
      type: 'investigation.opened',
      actor: 'adapter',
      occurredAt: at,
      payload: {
        investigation_id: id,
        title: rule.description.slice(0, 500),
        severity: severityOf(rule.level),
        source: 'wazuh',
        source_ref: `rule:${rule.id}/agent:${agent.id}`,
        rule_id: rule.id,
        agent_id: agent.id,
      },
    }),
  );
  return id;
}

/** `alert.received` exactly as ingest writes it. */
export async function receiveAlert(
  db: AppDatabase,
  tenantId: string,
  investigationId: string,
  alert: Record<string, unknown>,
  at: Date,
): Promise<void> {
  const rule = alert.rule as { level: number };
  await db.withTenant(tenantId, (tx) =>
    appendEvent(tx, {
      tenantId,
      streamType: 'alert',
      streamId: alertStreamId(String(alert.id)),
      streamSeq: 1,
      type: 'alert.received',
      actor: 'adapter',
      occurredAt: at,
      payload: {
        source: 'wazuh',
        source_id: alert.id,
        investigation_id: investigationId,
        severity: severityOf(rule.level),
        alert,
      },
    }),
  );
}

export async function analyzerCompleted(
  db: AppDatabase,
  tenantId: string,
  input: { analyzer: string; durationMs: number; success: boolean; at: Date },
): Promise<void> {
  await db.withTenant(tenantId, (tx) =>
    appendEvent(tx, {
      tenantId,
      streamType: 'analyzer',
      streamId: randomUUID(),
      streamSeq: 1,
      type: 'analyzer.completed',
      actor: 'worker',
      occurredAt: input.at,
      payload: {
        analyzer: input.analyzer,
        duration_ms: input.durationMs,
        success: input.success,
      },
    }),
  );
}

/**
 * Appends `count` random events to the tenant, as ingest would group them: alerts of a few
 * rules and agents, each joining an open investigation of its (rule, agent) or opening one.
 */
export async function randomTraffic(
  db: AppDatabase,
  tenantId: string,
  count: number,
  random: () => number,
): Promise<void> {
  const groups = new Map<string, string>();
  const base = Date.UTC(2026, 10, 26, 8, 0, 0);
  for (let i = 0; i < count; i++) {
    const at = new Date(base + Math.floor(random() * 6 * 3_600_000));
    if (random() < 0.08) {
      await analyzerCompleted(db, tenantId, {
        analyzer: ['abuseipdb', 'virustotal'][Math.floor(random() * 2)] ?? 'x',
        durationMs: Math.floor(random() * 900),
        success: random() < 0.8,
        at,
      });
      continue;
    }
    const ruleId = String(5700 + Math.floor(random() * 5));
    const agentId = `00${Math.floor(random() * 3)}`;
    const alert = wazuhAlert({
      ruleId,
      level: Math.floor(random() * 17),
      agentId,
      at,
      srcip: `203.0.113.${Math.floor(random() * 6)}`,
      ...(random() < 0.2 ? { url: `http://bad.example/${Math.floor(random() * 3)}` } : {}),
      ...(random() < 0.1 ? { sha256: 'ab'.repeat(32) } : {}),
    });
    const key = `${ruleId}/${agentId}`;
    let investigation = groups.get(key);
    if (!investigation || random() < 0.1) {
      investigation = await openInvestigation(db, tenantId, alert, at);
      groups.set(key, investigation);
    }
    await receiveAlert(db, tenantId, investigation, alert, at);
  }
}

/** A small deterministic PRNG (mulberry32), so a failing run can be repeated. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every projection row of the tenant (and its checkpoints' positions), in a stable order. */
export async function projectionRows(
  db: TestDatabase,
  tenantId: string,
): Promise<Record<string, unknown[]>> {
  const result: Record<string, unknown[]> = {};
  for (const { table, key } of PROJECTIONS) {
    const { rows } = await db.pools.mssp.query(
      `SELECT * FROM ${table} WHERE tenant_id = $1 ORDER BY ${key.join(', ')}`,
      [tenantId],
    );
    result[table] = rows;
  }
  const { rows } = await db.pools.mssp.query(
    `SELECT projection, last_event_id FROM projection_checkpoints WHERE tenant_id = $1 ORDER BY projection`,
    [tenantId],
  );
  result.projection_checkpoints = rows;
  return result;
}
