import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SvcProcess } from './support.ts';

export interface IncidentSeed {
  title: string;
  /** The model's reasoning in the triage event. */
  rationale: string;
  /** The start of each alert's `full_log`. */
  log: string;
}

/**
 * An incident as ingest and triage leave it: its opening and triage events, two alerts on
 * their own streams. Written as events (svc_mssp), folded by svc's own projector.
 */
export async function seedIncident(
  svc: SvcProcess,
  tenantId: string,
  seed: IncidentSeed,
): Promise<string> {
  const id = randomUUID();
  const alert = (n: number) => ({
    id: `1732780000.${n}`,
    timestamp: `2026-11-28T03:0${n}:00.000+0000`,
    rule: {
      id: '5712',
      level: 10,
      description: 'sshd: brute force trying to get access to the system',
      mitre: { id: ['T1110'], tactic: ['Credential Access'] },
    },
    agent: { id: '007', name: 'bastion-01', ip: '10.0.0.7' },
    data: { srcip: '203.0.113.9', srcport: `5100${n}`, dstip: '10.0.0.7', dstport: '22' },
    full_log: `${seed.log} port 5100${n} ssh2`,
  });
  const client = await svc.sql.connect();
  try {
    await client.query('BEGIN');
    await client.query(
      `INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor, occurred_at)
       VALUES ($1, 'investigation', $2, 1, 'investigation.opened', $3, 'Adapter', now() - interval '10 minutes')`,
      [
        tenantId,
        id,
        {
          investigation_id: id,
          title: seed.title,
          severity: 'high',
          source: 'wazuh',
          source_ref: 'rule:5712/agent:007',
          rule_id: '5712',
          agent_id: '007',
        },
      ],
    );
    for (const n of [1, 2]) {
      await client.query(
        `INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor, occurred_at)
         VALUES ($1, 'alert', $2, 1, 'alert.received', $3, 'Adapter', $4)`,
        [
          tenantId,
          randomUUID(),
          {
            source: 'wazuh',
            source_id: alert(n).id,
            investigation_id: id,
            severity: 'high',
            alert: alert(n),
          },
          // The second a minute after the first: the newest-first order is defined.
          new Date(Date.now() - (10 - n) * 60_000),
        ],
      );
    }
    await client.query(
      `INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor, occurred_at)
       VALUES ($1, 'investigation', $2, 2, 'triage.completed', $3, 'Worker', now() - interval '8 minutes')`,
      [
        tenantId,
        id,
        {
          investigation_id: id,
          by: 'model',
          verdict: 'inconclusive',
          severity: 'high',
          confidence: 0.55,
          rationale: seed.rationale,
          recommended_action: 'review',
        },
      ],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
  // The projector folds the events in the background: wait for the row it writes.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { rows } = await svc.sql.query(
      'SELECT 1 FROM investigations WHERE tenant_id = $1 AND id = $2 AND alert_count = 2',
      [tenantId, id],
    );
    if (rows.length > 0) return id;
    assert.ok(Date.now() < deadline, 'the projector folded the seeded incident');
    await sleep(100);
  }
}
