import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { SvcClient } from '../../contracts/index.ts';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import { appendUncheckedEvent } from '../../src/domains/events/index.ts';
import { problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';
import { foldAll, seedIncident } from './incidents-support.ts';

/**
 * docs/investigations.md "Detail": one incident with its timeline from the event store, IOCs,
 * related incidents and review, and its alerts a keyset page at a time.
 */
let db: TestDatabase;
let api: TestApi;
let system: SystemGate;
let tenantA: string;
let tenantB: string;
let analyst: SvcClient;
/** The incident under the microscope: 7 alerts from 198.51.100.7 on agent 001. */
let main: string;
/** Shares the indicator 198.51.100.7 (another agent). */
let sharesIoc: string;
/** Same agent 001, another rule, another indicator. */
let sameAgent: string;
/** Unrelated: another agent, another indicator. */
let unrelated: string;
/** B's incident with the same indicator and agent: never related to A's. */
let ofB: string;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  system = createSystemGate(db.target);
  tenantA = await createTenant(db.pools.app, 'alpha');
  tenantB = await createTenant(db.pools.app, 'bravo');
  analyst = await signedInAs({ db, api }, 'analyst');
  main = await seedIncident(db.app, tenantA, {
    ruleId: '5710',
    agentId: '001',
    alerts: 7,
    srcip: '198.51.100.7',
  });
  sharesIoc = await seedIncident(db.app, tenantA, {
    ruleId: '5711',
    agentId: '002',
    srcip: '198.51.100.7',
  });
  sameAgent = await seedIncident(db.app, tenantA, {
    ruleId: '31101',
    agentId: '001',
    srcip: '203.0.113.9',
  });
  unrelated = await seedIncident(db.app, tenantA, {
    ruleId: '31102',
    agentId: '003',
    srcip: '203.0.113.10',
  });
  ofB = await seedIncident(db.app, tenantB, { agentId: '001', srcip: '198.51.100.7' });
  // The pipeline's steps on the main incident, as its workers write them.
  const steps: [string, Record<string, unknown>][] = [
    ['triage.started', { attempt: 1 }],
    [
      'triage.completed',
      {
        by: 'model',
        verdict: 'true_positive',
        severity: 'high',
        confidence: 0.9,
        rationale: 'Repeated failed logins from one address',
        recommended_action: 'isolate',
        redaction: { fired: ['ip'], placeholders: 3 },
      },
    ],
    ['review.requested', { review_id: main, action: 'isolate_host' }],
  ];
  await db.app.withTenant(tenantA, async (tx) => {
    let seq = 2;
    for (const [type, payload] of steps)
      await appendUncheckedEvent(tx, {
        tenantId: tenantA,
        streamType: 'investigation',
        streamId: main,
        streamSeq: seq++,
        type,
        actor: 'worker:job-1',
        payload: { investigation_id: main, ...payload },
      });
  });
  await foldAll(db, system, tenantA);
  await foldAll(db, system, tenantB);
  await db.app.withTenant(tenantA, (tx) =>
    tx.query(
      `INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, rationale, risk,
         requested_by)
       VALUES ($1, $2, 'isolate_host', 'Repeated failed logins', 'high', 'worker:triage')`,
      [tenantA, main],
    ),
  );
});
after(async () => {
  await system.close();
  await api.close();
  await db.drop();
});

test('§2.3 the detail: the investigation, its version, the timeline from the event store with the model reasoning, the review', async () => {
  const res = await analyst.mssp.incident({ params: { tenant_id: tenantA, id: main } });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  const { incident, timeline, review } = res.body;
  assert.equal(incident.id, main);
  assert.equal(incident.alert_count, 7);
  assert.equal(incident.status, 'awaiting_review');
  assert.equal(incident.verdict, 'true_positive');
  assert.equal(incident.version, 4);
  assert.deepEqual(
    timeline.map((e) => [e.seq, e.type, e.actor.kind]),
    [
      [1, 'investigation.opened', 'system'],
      [2, 'triage.started', 'pipeline'],
      [3, 'triage.completed', 'pipeline'],
      [4, 'review.requested', 'pipeline'],
    ],
  );
  assert.equal(timeline[2]?.data.rationale, 'Repeated failed logins from one address');
  assert.equal(review?.proposed_action, 'isolate_host');
  assert.equal(review?.investigation_id, main);
});

test('§2.3 IOCs of the incident, and related incidents by shared IOC or the same agent, never another tenant', async () => {
  const res = await analyst.mssp.incident({ params: { tenant_id: tenantA, id: main } });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.deepEqual(
    res.body.iocs.map((i) => [i.type, i.value, i.alerts]),
    [['ip', '198.51.100.7', 7]],
  );
  const related = new Map(res.body.related.map((r) => [r.id, r.relations]));
  assert.deepEqual(related.get(sharesIoc), ['shared_ioc']);
  assert.deepEqual(related.get(sameAgent), ['same_agent']);
  assert.equal(related.has(unrelated), false);
  assert.equal(related.has(ofB), false);
  assert.equal(related.has(main), false);
});

test('§2.3 alerts: keyset pages, newest first, with the fields an analyst reads; the raw document on demand', async () => {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 10; pages++) {
    const res = await analyst.mssp.incidentAlerts({
      params: { tenant_id: tenantA, id: main },
      query: { limit: 3, ...(cursor ? { cursor } : {}) },
    });
    assert.equal(res.status, 200);
    if (res.status !== 200) return;
    assert.ok(res.body.items.length <= 3);
    for (const a of res.body.items) {
      assert.equal(a.rule.id, '5710');
      assert.equal(a.rule.level, 5);
      assert.deepEqual(a.agent, { id: '001', name: 'web-01', ip: '10.0.0.11' });
      assert.equal(a.source.ip, '198.51.100.7');
    }
    ids.push(...res.body.items.map((a) => a.id));
    if (res.body.next_cursor === null) break;
    cursor = res.body.next_cursor;
  }
  assert.equal(ids.length, 7);
  assert.equal(new Set(ids).size, 7);
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    `SELECT stream_id AS id FROM events WHERE tenant_id = $1 AND type = 'alert.received'
        AND payload->>'investigation_id' = $2 ORDER BY occurred_at DESC, stream_id DESC`,
    [tenantA, main],
  );
  assert.deepEqual(
    ids,
    rows.map((r) => r.id),
  );

  const one = await analyst.mssp.incidentAlert({
    params: { tenant_id: tenantA, id: main, alert_id: ids[0] ?? '' },
  });
  assert.equal(one.status, 200);
  if (one.status === 200) {
    const doc = one.body.document as { full_log?: string; manager?: unknown };
    assert.ok(doc.full_log?.includes('sshd'));
    assert.deepEqual(doc.manager, { name: 'wazuh-manager' });
  }
  // Another incident's alert through this incident's path is not found.
  const other = await analyst.mssp.incidentAlerts({
    params: { tenant_id: tenantA, id: sharesIoc },
  });
  assert.ok(other.status === 200);
  const foreign = other.body.items[0]?.id ?? '';
  const wrong = await analyst.mssp.incidentAlert({
    params: { tenant_id: tenantA, id: main, alert_id: foreign },
  });
  assert.deepEqual([wrong.status, problemCode(wrong)], [404, 'alert_not_found']);
  const badCursor = await analyst.mssp.incidentAlerts({
    params: { tenant_id: tenantA, id: main },
    query: { cursor: 'bm9wZQ' },
  });
  assert.deepEqual([badCursor.status, problemCode(badCursor)], [400, 'invalid_cursor']);
});

test("§9.5.5 B's incident and alerts are not found through A's path", async () => {
  const detail = await analyst.mssp.incident({ params: { tenant_id: tenantA, id: ofB } });
  assert.deepEqual([detail.status, problemCode(detail)], [404, 'investigation_not_found']);
  const alerts = await analyst.mssp.incidentAlerts({ params: { tenant_id: tenantA, id: ofB } });
  assert.deepEqual([alerts.status, problemCode(alerts)], [404, 'investigation_not_found']);
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    `SELECT stream_id AS id FROM events WHERE tenant_id = $1 AND type = 'alert.received'`,
    [tenantB],
  );
  const alert = await analyst.mssp.incidentAlert({
    params: { tenant_id: tenantA, id: main, alert_id: rows[0]?.id ?? '' },
  });
  assert.deepEqual([alert.status, problemCode(alert)], [404, 'alert_not_found']);
});
