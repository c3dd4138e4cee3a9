import { createHash, randomUUID } from 'node:crypto';
import type { EventPayload } from '../../contracts/events.ts';
import type { AppDatabase } from '../../src/db/pools.ts';
import {
  appendToStream,
  type StreamAppendInput,
} from '../../src/domains/events/event-repository.ts';
import { appendUncheckedEvent } from '../../src/domains/events/index.ts';
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
    appendUncheckedEvent(tx, {
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
    appendUncheckedEvent(tx, {
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
    appendUncheckedEvent(tx, {
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

/** One investigation-work or review event on an investigation's own stream, at its next position. */
export async function workEvent<T extends WorkEvent>(
  db: AppDatabase,
  tenantId: string,
  investigationId: string,
  type: T,
  payload: Omit<EventPayload<T>, 'investigation_id'>,
  at: Date,
  actor = 'user:5a3c1b9e-0d4f-4e8a-9b2c-7f6e5d4c3b2a',
): Promise<void> {
  await db.withTenant(tenantId, (tx) =>
    appendToStream(tx, {
      tenantId,
      streamType: 'investigation',
      streamId: investigationId,
      type,
      actor,
      occurredAt: at,
      payload: { ...payload, investigation_id: investigationId } as EventPayload<T>,
    } as StreamAppendInput<T>),
  );
}

type WorkEvent =
  | 'investigation.assigned'
  | 'note.added'
  | 'investigation.closed'
  | 'investigation.reopened'
  | 'investigation.severity_changed'
  | 'review.requested'
  | 'review.approved'
  | 'review.rejected'
  | 'case.opened';

/**
 * Random analyst and review work on the tenant's investigations (docs/reports.md): takes and
 * hand-overs, notes, reviews requested and decided, closes by the pipeline, a review or an
 * analyst, cases, reopens and severity changes, in random order and at random times (not in
 * id order), so the folds that keep the earliest or the last of something are exercised.
 */
export async function randomWork(
  db: AppDatabase,
  tenantId: string,
  random: () => number,
): Promise<void> {
  const { rows } = await db.withTenant(tenantId, (tx) =>
    tx.query<{ stream_id: string }>(
      `SELECT stream_id FROM events WHERE type = 'investigation.opened' ORDER BY id`,
    ),
  );
  // The assignee is a real MSSP user (investigations.assignee_id refers to users).
  const analyst = await db.withScope(null, async (tx) => {
    const { rows: users } = await tx.query<{ id: string }>(
      `INSERT INTO users (tenant_id, email, role) VALUES (NULL, $1, 'analyst') RETURNING id`,
      [`analyst-${randomUUID()}@mssp.test`],
    );
    return users[0]?.id ?? '';
  });
  const base = Date.UTC(2026, 10, 26, 9, 0, 0);
  const at = () => new Date(base + Math.floor(random() * 12 * 3_600_000));
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  // Steps pick an investigation at random, so one investigation's events spread over many
  // batches of the fold (what the folds must carry from one batch to the next).
  const pendingOf = new Map<string, string[]>();
  for (let step = rows.length * 3; step > 0 && rows.length > 0; step--) {
    const id = pick(rows).stream_id;
    const pending = pendingOf.get(id) ?? [];
    pendingOf.set(id, pending);
    const r = random();
    if (r < 0.15)
      await workEvent(
        db,
        tenantId,
        id,
        'investigation.assigned',
        {
          assignee_id: random() < 0.7 ? analyst : null,
          previous_assignee_id: null,
        },
        at(),
      );
    else if (r < 0.3)
      await workEvent(
        db,
        tenantId,
        id,
        'note.added',
        {
          note_id: randomUUID(),
          body: 'Checked the host.',
          visibility: pick(['internal', 'shared'] as const),
        },
        at(),
      );
    else if (r < 0.45) {
      const review = randomUUID();
      pending.push(review);
      await workEvent(
        db,
        tenantId,
        id,
        'review.requested',
        {
          review_id: review,
          proposed_action: 'close_investigation',
          rationale: 'Looks benign',
        },
        at(),
        'worker:triage',
      );
    } else if (r < 0.6 && pending.length > 0) {
      const review = pending.shift() as string;
      if (random() < 0.5)
        await workEvent(
          db,
          tenantId,
          id,
          'review.approved',
          {
            review_id: review,
            action: 'close_investigation',
          },
          at(),
        );
      else
        await workEvent(
          db,
          tenantId,
          id,
          'review.rejected',
          {
            review_id: review,
            action: 'close_investigation',
            reopen: random() < 0.5,
          },
          at(),
        );
    } else if (r < 0.72) {
      const by = pick(['pipeline', 'analyst'] as const);
      await workEvent(
        db,
        tenantId,
        id,
        'investigation.closed',
        {
          verdict: 'false_positive',
          reason: 'noise',
          by,
        } as Omit<EventPayload<'investigation.closed'>, 'investigation_id'>,
        at(),
      );
    } else if (r < 0.8)
      await workEvent(
        db,
        tenantId,
        id,
        'case.opened',
        {
          review_id: randomUUID(),
          case_id: 'case-1',
          case_number: 1,
        },
        at(),
        'worker:act',
      );
    else if (r < 0.92)
      await workEvent(db, tenantId, id, 'investigation.reopened', { reason: 'new evidence' }, at());
    else
      await workEvent(
        db,
        tenantId,
        id,
        'investigation.severity_changed',
        {
          from: 'low',
          to: 'high',
          reason: 'crown jewel',
        },
        at(),
      );
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
