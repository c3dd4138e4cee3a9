import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { appendStreamStarts } from '../../src/domains/events/event-repository.ts';
import { alertStreamId } from '../../src/domains/ingest/alert-identity.ts';
import { problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import {
  at,
  checkpoint,
  checkpointRow,
  eventsOf,
  getCheckpoint,
  groupsOf,
  postAlerts,
  wazuhAlert,
  written,
} from './ingest-support.ts';
import { adapterToken, setState } from './support.ts';

// Issue 12 "Ingest": POST /api/internal/adapter/alerts and GET …/checkpoint (contract-12,
// docs/ingest.md), against the real API and PostgreSQL. Limits and bad input:
// ingest-limits.test.ts; the rules as functions: ingest-rules.test.ts.

let db: TestDatabase;
let api: TestApi;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
});
after(async () => {
  await api.close();
  await db.drop();
});

/** An active tenant and its adapter's token. */
async function tenantWithAdapter(): Promise<{ tenant: string; token: string }> {
  const tenant = await createTenant(db.pools.app);
  await setState(db, tenant, 'active');
  return { tenant, token: await adapterToken(api, tenant) };
}

test('issue 12 ingest: a batch becomes events, groups and the checkpoint; GET checkpoint before and after', async () => {
  const { tenant, token } = await tenantWithAdapter();
  assert.deepEqual((await getCheckpoint(api, token)).body, { checkpoint: null, alerts_total: 0 });

  const first = wazuhAlert({ timestamp: '2026-11-26T13:45:01.123+0000' });
  const second = wazuhAlert({ timestamp: '2026-11-26T13:50:00.000+00:00' });
  const otherAgent = wazuhAlert({
    timestamp: '2026-11-26T13:46:00Z',
    agent: { id: '002', name: 'db-01' },
    rule: { level: 13, id: '100002', description: 'Critical thing' },
  });
  const res = await postAlerts(api, token, {
    alerts: [first, second, otherAgent],
    checkpoint: checkpoint(3),
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body, { accepted: 3, duplicates: 0, checkpoint: checkpoint(3) });

  const events = await eventsOf(db, tenant);
  assert.deepEqual(
    events.map((e) => e.type),
    [
      'investigation.opened',
      'alert.received',
      'alert.received',
      'investigation.opened',
      'alert.received',
    ],
  );
  const [opened, a1, a2, opened2, a3] = events as [
    (typeof events)[number],
    (typeof events)[number],
    (typeof events)[number],
    (typeof events)[number],
    (typeof events)[number],
  ];
  const investigation = opened.stream_id;
  assert.deepEqual(
    [opened.stream_type, opened.stream_seq, opened.actor, opened.occurred_at.toISOString()],
    ['investigation', 1, 'adapter', '2026-11-26T13:45:01.123Z'],
  );
  assert.deepEqual(opened.payload, {
    investigation_id: investigation,
    title: 'sshd: brute force trying to get access to the system. Non existent user.',
    severity: 'high',
    source: 'wazuh',
    source_ref: 'rule:5712/agent:001',
    rule_id: '5712',
    agent_id: '001',
  });
  assert.deepEqual(
    [a1.stream_type, a1.stream_id, a1.stream_seq, a1.actor, a1.occurred_at.toISOString()],
    ['alert', alertStreamId(first.id as string), 1, 'adapter', '2026-11-26T13:45:01.123Z'],
  );
  assert.deepEqual(a1.payload, {
    source: 'wazuh',
    source_id: first.id,
    investigation_id: investigation,
    severity: 'high',
    alert: first,
  });
  assert.equal(a2.payload.investigation_id, investigation, 'same rule and agent, 5 min later');
  assert.equal(a2.occurred_at.toISOString(), '2026-11-26T13:50:00.000Z');
  assert.equal(opened2.payload.severity, 'critical');
  assert.equal(opened2.payload.source_ref, 'rule:100002/agent:002');
  assert.equal(a3.payload.investigation_id, opened2.stream_id);

  const groups = await groupsOf(db, tenant);
  assert.deepEqual(
    groups.map((g) => [g.investigation_id, g.rule_id, g.agent_id, g.alert_count, g.closed_at]),
    [
      [opened2.stream_id, '100002', '002', '1', null],
      [investigation, '5712', '001', '2', null],
    ],
  );
  assert.equal(groups[1]?.last_alert_at.toISOString(), '2026-11-26T13:50:00.000Z');
  assert.deepEqual((await getCheckpoint(api, token)).body, {
    checkpoint: checkpoint(3),
    alerts_total: 3,
  });
});

test('issue 12 ingest: replaying a batch writes nothing new (accepted 0); the checkpoint stays', async () => {
  const { tenant, token } = await tenantWithAdapter();
  const batch = {
    alerts: [wazuhAlert(), wazuhAlert({ timestamp: at(1) })],
    checkpoint: checkpoint(1),
  };
  assert.equal((await postAlerts(api, token, batch)).status, 200);
  const events = await eventsOf(db, tenant);
  const groups = await groupsOf(db, tenant);

  const replay = await postAlerts(api, token, batch);
  assert.deepEqual(
    [replay.status, replay.body],
    [200, { accepted: 0, duplicates: 2, checkpoint: checkpoint(1) }],
  );
  assert.deepEqual(await eventsOf(db, tenant), events);
  assert.deepEqual(await groupsOf(db, tenant), groups);
  assert.deepEqual(await checkpointRow(db, tenant), { position: checkpoint(1), alerts_total: '2' });

  // A batch mixing stored and new alerts stores only the new one.
  const mixed = await postAlerts(api, token, {
    alerts: [...batch.alerts, wazuhAlert({ timestamp: at(2) })],
    checkpoint: checkpoint(2),
  });
  assert.deepEqual(mixed.body, { accepted: 1, duplicates: 2, checkpoint: checkpoint(2) });
  assert.equal((await eventsOf(db, tenant)).length, events.length + 1);
  assert.equal((await checkpointRow(db, tenant))?.alerts_total, '3');
});

test('issue 12 ingest: an alert repeated within one batch is stored once and counted a duplicate', async () => {
  const { tenant, token } = await tenantWithAdapter();
  const a = wazuhAlert();
  const b = wazuhAlert({ timestamp: at(50) });
  const res = await postAlerts(api, token, { alerts: [a, a, b, a], checkpoint: checkpoint(4) });
  assert.deepEqual(res.body, { accepted: 2, duplicates: 2, checkpoint: checkpoint(4) });
  const received = (await eventsOf(db, tenant)).filter((e) => e.type === 'alert.received');
  assert.deepEqual(
    received.map((e) => e.payload.source_id),
    [a.id, b.id],
  );
});

test('issue 12 grouping rule: same rule and agent within 30 minutes of the last alert joins; later, or another agent or rule, opens a new investigation', async () => {
  const { tenant, token } = await tenantWithAdapter();
  const alerts = [
    wazuhAlert({ timestamp: at(0) }), // opens G1
    wazuhAlert({ timestamp: at(30) }), // exactly 30 min after the last: joins G1
    wazuhAlert({ timestamp: at(60, 1) }), // 30 min + 1 ms after the last: opens G2, closes G1
    wazuhAlert({ timestamp: at(61), agent: { id: '002' } }), // other agent: opens G3
    wazuhAlert({ timestamp: at(62), rule: { id: '5503' } }), // other rule: opens G4
    wazuhAlert({ timestamp: at(45) }), // earlier than G2's last (out of order): joins G2
  ];
  const res = await postAlerts(api, token, { alerts, checkpoint: checkpoint(6) });
  assert.deepEqual(res.body, { accepted: 6, duplicates: 0, checkpoint: checkpoint(6) });
  const received = (await eventsOf(db, tenant)).filter((e) => e.type === 'alert.received');
  const group = received.map((e) => e.payload.investigation_id as string);
  const [g1, , g2, g3, g4] = group;
  assert.deepEqual(group, [g1, g1, g2, g3, g4, g2]);
  assert.equal(new Set(group).size, 4);

  // The state survives the batch: the next batch's alerts join or open by the stored groups.
  const next = await postAlerts(api, token, {
    alerts: [
      wazuhAlert({ timestamp: at(80) }), // 19 min 59.999 s after G2's last (60:00.001): joins G2
      wazuhAlert({ timestamp: at(93), agent: { id: '002' } }), // 32 min after G3's: opens G5
    ],
    checkpoint: checkpoint(8),
  });
  assert.equal(next.status, 200);
  const later = (await eventsOf(db, tenant)).filter((e) => e.type === 'alert.received');
  assert.equal(later[6]?.payload.investigation_id, g2);
  const g5 = later[7]?.payload.investigation_id as string;
  assert.ok(![g1, g2, g3, g4].includes(g5));

  const groups = new Map((await groupsOf(db, tenant)).map((g) => [g.investigation_id, g]));
  assert.ok(groups.get(g1 as string)?.closed_at, 'G1 closed when G2 opened');
  assert.ok(groups.get(g3 as string)?.closed_at, 'G3 closed when G5 opened');
  assert.deepEqual(
    [g2, g4, g5].map((g) => groups.get(g as string)?.closed_at),
    [null, null, null],
  );
  assert.deepEqual(
    [g1, g2, g3, g4, g5].map((g) => groups.get(g as string)?.alert_count),
    ['2', '3', '1', '1', '1'],
  );
  assert.equal(groups.get(g2 as string)?.last_alert_at.toISOString(), '2026-11-26T14:20:00.000Z');
  const opened = (await eventsOf(db, tenant)).filter((e) => e.type === 'investigation.opened');
  assert.deepEqual(
    opened.map((e) => e.stream_id),
    [g1, g2, g3, g4, g5],
  );
});

test('issue 12 ingest: one transaction — a failure on the last alert, or on the checkpoint, leaves no event, group or checkpoint', async () => {
  const { tenant, token } = await tenantWithAdapter();
  const poison = `poison-${randomUUID()}`;
  // A real database failure at the last row of the batch's one INSERT (fault injection in
  // PostgreSQL, not a stand-in for svc's code).
  await db.pools.admin.query(`
    CREATE FUNCTION test_poison_alert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.payload->>'source_id' = '${poison}' THEN RAISE EXCEPTION 'poisoned alert'; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_poison_alert BEFORE INSERT ON events
      FOR EACH ROW EXECUTE FUNCTION test_poison_alert();`);
  try {
    const alerts = [wazuhAlert(), wazuhAlert({ agent: { id: '009' } }), wazuhAlert({ id: poison })];
    const res = await postAlerts(api, token, { alerts, checkpoint: checkpoint(3) });
    assert.deepEqual([res.status, problemCode(res)], [500, 'internal']);
    assert.deepEqual(await written(db, tenant), { events: 0, groups: 0, checkpoints: 0 });
  } finally {
    await db.pools.admin.query(
      'DROP TRIGGER test_poison_alert ON events; DROP FUNCTION test_poison_alert()',
    );
  }
  // A failure at the very last statement (the checkpoint) takes the batch's events with it.
  await db.pools.admin.query(`
    CREATE FUNCTION test_poison_checkpoint() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.position->>'index' = 'poison' THEN RAISE EXCEPTION 'poisoned checkpoint'; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_poison_checkpoint BEFORE INSERT OR UPDATE ON ingest_checkpoints
      FOR EACH ROW EXECUTE FUNCTION test_poison_checkpoint();`);
  try {
    const res = await postAlerts(api, token, {
      alerts: [wazuhAlert(), wazuhAlert({ agent: { id: '009' } })],
      checkpoint: { search_after: [1], index: 'poison' },
    });
    assert.deepEqual([res.status, problemCode(res)], [500, 'internal']);
    assert.deepEqual(await written(db, tenant), { events: 0, groups: 0, checkpoints: 0 });
  } finally {
    await db.pools.admin.query(
      'DROP TRIGGER test_poison_checkpoint ON ingest_checkpoints; DROP FUNCTION test_poison_checkpoint()',
    );
  }
  assert.deepEqual((await getCheckpoint(api, token)).body, { checkpoint: null, alerts_total: 0 });
  // The same batch, once the fault is gone, is stored whole.
  const again = await postAlerts(api, token, {
    alerts: [wazuhAlert({ id: poison })],
    checkpoint: checkpoint(1),
  });
  assert.deepEqual(again.body, { accepted: 1, duplicates: 0, checkpoint: checkpoint(1) });
});

test('issue 12 ingest: concurrent batches of one tenant store each alert once and keep one open group', async () => {
  const { tenant, token } = await tenantWithAdapter();
  const alerts = Array.from({ length: 40 }, (_, i) => wazuhAlert({ timestamp: at(i) }));
  const answers = await Promise.all(
    [0, 1, 2, 3].map((i) =>
      postAlerts(api, token, {
        alerts: alerts.slice(i * 5, i * 5 + 30),
        checkpoint: checkpoint(i),
      }),
    ),
  );
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 200, 200, 200],
  );
  const accepted = answers.reduce((n, a) => n + (a.body.accepted as number), 0);
  assert.equal(accepted, 40);
  const received = (await eventsOf(db, tenant)).filter((e) => e.type === 'alert.received');
  assert.equal(new Set(received.map((e) => e.stream_id)).size, 40);
  assert.equal(received.length, 40);
  const open = (await groupsOf(db, tenant)).filter((g) => g.closed_at === null);
  assert.equal(open.length, 1, 'one open group for the one (rule, agent) pair');
});

test("issue 12 isolation: A's token never writes into B; a tenant_id in the body is refused; A's alerts are not B's", async () => {
  const a = await tenantWithAdapter();
  const b = await tenantWithAdapter();
  const claimed = await postAlerts(api, a.token, {
    tenant_id: b.tenant,
    alerts: [wazuhAlert()],
    checkpoint: checkpoint(1),
  });
  assert.deepEqual([claimed.status, problemCode(claimed)], [400, 'validation_failed']);
  const paths = (claimed.body.errors as { path: string }[]).map((e) => e.path);
  assert.ok(paths.includes('/tenant_id'), JSON.stringify(claimed.body.errors));
  assert.deepEqual(await written(db, a.tenant), { events: 0, groups: 0, checkpoints: 0 });
  assert.deepEqual(await written(db, b.tenant), { events: 0, groups: 0, checkpoints: 0 });

  const shared = wazuhAlert();
  assert.equal(
    (await postAlerts(api, a.token, { alerts: [shared], checkpoint: checkpoint(1) })).status,
    200,
  );
  assert.deepEqual(await written(db, b.tenant), { events: 0, groups: 0, checkpoints: 0 });
  // B's adapter sees B's checkpoint only, and B's RLS context sees none of A's events.
  assert.deepEqual((await getCheckpoint(api, b.token)).body, { checkpoint: null, alerts_total: 0 });
  const seenByB = await db.app.withTenant(b.tenant, async (tx) => {
    const { rows } = await tx.query(
      'SELECT tenant_id FROM events UNION ALL SELECT tenant_id FROM alert_groups',
    );
    return rows.length;
  });
  assert.equal(seenByB, 0);
  // The store is idempotent per tenant: the same source id is new to B.
  const forB = await postAlerts(api, b.token, { alerts: [shared], checkpoint: checkpoint(2) });
  assert.deepEqual(forB.body, { accepted: 1, duplicates: 0, checkpoint: checkpoint(2) });
  const [ofA, ofB] = [await eventsOf(db, a.tenant), await eventsOf(db, b.tenant)];
  assert.equal(ofA.length, 2);
  assert.equal(ofB.length, 2);
  assert.notEqual(ofA[0]?.stream_id, ofB[0]?.stream_id, 'each tenant opened its own investigation');
  assert.deepEqual((await getCheckpoint(api, a.token)).body, {
    checkpoint: checkpoint(1),
    alerts_total: 1,
  });
});

test('issue 12 ingest: a worker token is 403; a soft-deleted or missing tenant is 401 invalid_token; nothing written', async () => {
  const { tenant } = await tenantWithAdapter();
  const worker = await api.tokens.mintWorker({
    tenantId: tenant,
    jobId: randomUUID(),
    jobType: 'triage',
  });
  const batch = { alerts: [wazuhAlert()], checkpoint: checkpoint(1) };
  const refused = await postAlerts(api, worker.token, batch);
  assert.deepEqual([refused.status, problemCode(refused)], [403, 'forbidden']);
  const workerRead = await getCheckpoint(api, worker.token);
  assert.deepEqual([workerRead.status, workerRead.body.code], [403, 'forbidden']);
  assert.deepEqual([(await postAlerts(api, undefined, batch)).status], [401]);

  const gone = await tenantWithAdapter();
  await setState(db, gone.tenant, 'soft-deleted');
  const deleted = await postAlerts(api, gone.token, batch);
  assert.deepEqual([deleted.status, problemCode(deleted)], [401, 'invalid_token']);
  const deletedRead = await getCheckpoint(api, gone.token);
  assert.deepEqual([deletedRead.status, deletedRead.body.code], [401, 'invalid_token']);

  const missing = await adapterToken(api, randomUUID());
  const nobody = await postAlerts(api, missing, batch);
  assert.deepEqual([nobody.status, problemCode(nobody)], [401, 'invalid_token']);
  assert.deepEqual((await getCheckpoint(api, missing)).status, 401);

  for (const t of [tenant, gone.tenant]) {
    assert.deepEqual(await written(db, t), { events: 0, groups: 0, checkpoints: 0 });
  }
});

test('issue 12 appendStreamStarts: one statement, ids in array order, an existing stream keeps its event, RLS holds', async () => {
  const { tenant } = await tenantWithAdapter();
  const [x, y, z] = [randomUUID(), randomUUID(), randomUUID()];
  const start = (streamId: string, n: number) => ({
    streamType: 'alert' as const,
    streamId,
    type: 'alert.received' as const,
    payloadJson: JSON.stringify({ n }),
    occurredAtMs: Date.UTC(2026, 10, 26) + n,
  });
  const first = await db.app.withTenant(tenant, (tx) =>
    appendStreamStarts(tx, tenant, 'adapter', [start(x, 1), start(y, 2)]),
  );
  assert.deepEqual([...first].sort(), [x, y].sort());
  const second = await db.app.withTenant(tenant, (tx) =>
    appendStreamStarts(tx, tenant, 'adapter', [start(y, 3), start(z, 4)]),
  );
  assert.deepEqual([...second], [z]);
  const events = await eventsOf(db, tenant);
  assert.deepEqual(
    events.map((e) => [e.stream_id, e.payload.n, e.occurred_at.getTime() - Date.UTC(2026, 10, 26)]),
    [
      [x, 1, 1],
      [y, 2, 2],
      [z, 4, 4],
    ],
  );
  const other = await createTenant(db.pools.app);
  await assert.rejects(
    db.app.withTenant(tenant, (tx) =>
      appendStreamStarts(tx, other, 'adapter', [start(randomUUID(), 5)]),
    ),
    /row-level security/,
  );
  assert.equal((await eventsOf(db, other)).length, 0);
});
