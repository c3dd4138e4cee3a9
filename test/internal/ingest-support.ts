import { randomUUID } from 'node:crypto';
import type { TestApi } from '../support/api.ts';
import type { TestDatabase } from '../support/database.ts';

/** A Wazuh alert as the indexer holds it (contract-12's example), with a fresh source id. */
export function wazuhAlert(
  overrides: {
    id?: string;
    timestamp?: string;
    rule?: Record<string, unknown>;
    agent?: Record<string, unknown>;
  } & Record<string, unknown> = {},
): Record<string, unknown> {
  const { rule, agent, ...rest } = overrides;
  return {
    timestamp: '2026-11-26T13:45:01.123+0000',
    rule: {
      level: 10,
      description: 'sshd: brute force trying to get access to the system. Non existent user.',
      id: '5712',
      mitre: { id: ['T1110'], tactic: ['Credential Access'] },
      firedtimes: 3,
      mail: false,
      groups: ['syslog', 'sshd', 'authentication_failures'],
      ...rule,
    },
    agent: { id: '001', name: 'web-01', ip: '10.0.0.11', ...agent },
    manager: { name: 'wazuh-manager' },
    id: `1764164701.${randomUUID()}`,
    full_log: 'Nov 26 13:45:01 web-01 sshd[811]: Invalid user admin from 203.0.113.7 port 52011',
    decoder: { parent: 'sshd', name: 'sshd' },
    data: { srcip: '203.0.113.7', srcport: '52011', srcuser: 'admin' },
    location: '/var/log/auth.log',
    ...rest,
  };
}

/** A Wazuh timestamp (`+0000`) `minutes` after 2026-11-26T13:00:00Z, plus `ms`. */
export function at(minutes: number, ms = 0): string {
  const d = new Date(Date.UTC(2026, 10, 26, 13, 0, 0) + minutes * 60_000 + ms);
  return d.toISOString().replace('Z', '+0000');
}

export function checkpoint(n: number): { search_after: (number | string)[]; index: string } {
  return { search_after: [1764164701000 + n, `doc-${n}`], index: 'wazuh-alerts-*' };
}

export interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

/** POSTs a body (an object, or raw text) to the alerts endpoint with the given token. */
export async function postAlerts(
  api: TestApi,
  token: string | undefined,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(`${api.url}/api/internal/adapter/alerts`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
    headers: res.headers,
  };
}

export async function getCheckpoint(api: TestApi, token: string): Promise<Answer> {
  const res = await fetch(`${api.url}/api/internal/adapter/checkpoint`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return {
    status: res.status,
    body: (await res.json()) as Record<string, unknown>,
    headers: res.headers,
  };
}

export interface EventRow {
  id: string;
  stream_type: string;
  stream_id: string;
  stream_seq: number;
  type: string;
  actor: string | null;
  occurred_at: Date;
  payload: Record<string, unknown>;
}

/** Ground truth through the BYPASSRLS role: the tenant's events in id order. */
export async function eventsOf(db: TestDatabase, tenantId: string): Promise<EventRow[]> {
  const { rows } = await db.pools.mssp.query<EventRow>(
    `SELECT id, stream_type, stream_id, stream_seq, type, actor, occurred_at, payload
       FROM events WHERE tenant_id = $1 ORDER BY id`,
    [tenantId],
  );
  return rows;
}

export interface GroupRow {
  investigation_id: string;
  rule_id: string;
  agent_id: string;
  last_alert_at: Date;
  alert_count: string;
  closed_at: Date | null;
}

export async function groupsOf(db: TestDatabase, tenantId: string): Promise<GroupRow[]> {
  const { rows } = await db.pools.mssp.query<GroupRow>(
    `SELECT investigation_id, rule_id, agent_id, last_alert_at, alert_count, closed_at
       FROM alert_groups WHERE tenant_id = $1 ORDER BY last_alert_at, rule_id, agent_id`,
    [tenantId],
  );
  return rows;
}

export async function checkpointRow(
  db: TestDatabase,
  tenantId: string,
): Promise<{ position: unknown; alerts_total: string } | undefined> {
  const { rows } = await db.pools.mssp.query<{ position: unknown; alerts_total: string }>(
    'SELECT position, alerts_total FROM ingest_checkpoints WHERE tenant_id = $1',
    [tenantId],
  );
  return rows[0];
}

/** Everything ingest writes for a tenant, counted: for "nothing was written" checks. */
export async function written(
  db: TestDatabase,
  tenantId: string,
): Promise<{ events: number; groups: number; checkpoints: number }> {
  const { rows } = await db.pools.mssp.query<{
    events: number;
    groups: number;
    checkpoints: number;
  }>(
    `SELECT (SELECT count(*) FROM events WHERE tenant_id = $1)::int AS events,
            (SELECT count(*) FROM alert_groups WHERE tenant_id = $1)::int AS groups,
            (SELECT count(*) FROM ingest_checkpoints WHERE tenant_id = $1)::int AS checkpoints`,
    [tenantId],
  );
  return rows[0] ?? { events: -1, groups: -1, checkpoints: -1 };
}
