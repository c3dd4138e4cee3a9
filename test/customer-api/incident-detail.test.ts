import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { SvcClient } from '../../contracts/index.ts';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import { appendUncheckedEvent } from '../../src/domains/events/index.ts';
import { foldAll, seedIncident } from '../mssp/incidents-support.ts';
import { problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';

/**
 * docs/investigations.md "What the customer sees": `GET /api/tenant/incidents/{id}` shows the
 * customer its incident with shared notes only, no staff identity, no redaction internals.
 */
let db: TestDatabase;
let api: TestApi;
let system: SystemGate;
let tenantA: string;
let tenantB: string;
let analyst: SvcClient;
let viewer: SvcClient;
let incident: string;
let ofB: string;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  system = createSystemGate(db.target);
  tenantA = await createTenant(db.pools.app, 'alpha');
  tenantB = await createTenant(db.pools.app, 'bravo');
  analyst = await signedInAs({ db, api }, 'analyst', { email: 'staff@mssp.test' });
  viewer = await signedInAs({ db, api }, 'customer_viewer', {
    email: 'viewer@alpha.test',
    tenantId: tenantA,
  });
  incident = await seedIncident(db.app, tenantA, { alerts: 3, srcip: '198.51.100.7' });
  ofB = await seedIncident(db.app, tenantB, { srcip: '198.51.100.7' });
  await db.app.withTenant(tenantA, (tx) =>
    appendUncheckedEvent(tx, {
      tenantId: tenantA,
      streamType: 'investigation',
      streamId: incident,
      streamSeq: 2,
      type: 'triage.completed',
      actor: 'worker:job-1',
      payload: {
        investigation_id: incident,
        by: 'model',
        verdict: 'true_positive',
        severity: 'medium',
        confidence: 0.8,
        rationale: 'Password spraying',
        recommended_action: 'escalate',
        redaction: { fired: ['REDACTION-INTERNAL'], placeholders: 2 },
        prompt: { user: 'PROMPT-INTERNAL' },
      },
    }),
  );
  await foldAll(db, system, tenantA);
  await foldAll(db, system, tenantB);
  const staffId = (
    await db.pools.mssp.query<{ id: string }>(`SELECT id FROM users WHERE email = $1`, [
      'staff@mssp.test',
    ])
  ).rows[0]?.id;
  const params = { tenant_id: tenantA, id: incident };
  const steps = [
    () =>
      analyst.mssp.assignIncident({ params, body: { assignee_id: staffId ?? null, version: 2 } }),
    () =>
      analyst.mssp.addIncidentNote({
        params,
        body: { body: 'INTERNAL-NOTE suspect insider', visibility: 'internal', version: 3 },
      }),
    () =>
      analyst.mssp.addIncidentNote({
        params,
        body: { body: 'We blocked the address at the edge.', visibility: 'shared', version: 4 },
      }),
  ];
  for (const step of steps) assert.equal((await step()).status, 200);
});
after(async () => {
  await system.close();
  await api.close();
  await db.drop();
});

test('§4.3 the customer reads its incident: the shared note, not the internal one, no staff identity, no redaction internals', async () => {
  const res = await viewer.tenant.incident({ params: { id: incident } });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  const text = JSON.stringify(res.body);
  assert.ok(text.includes('We blocked the address at the edge.'));
  for (const secret of [
    'INTERNAL-NOTE',
    'staff@mssp.test',
    'REDACTION-INTERNAL',
    'PROMPT-INTERNAL',
  ])
    assert.equal(text.includes(secret), false, secret);
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    `SELECT id FROM users WHERE email = 'staff@mssp.test'`,
  );
  assert.equal(text.includes(rows[0]?.id ?? 'none'), false, 'staff id');
  assert.equal(res.body.incident.assigned, true);
  assert.deepEqual(
    res.body.timeline.map((e) => e.type),
    ['investigation.opened', 'triage.completed', 'note.added'],
  );
  const triage = res.body.timeline[1];
  assert.equal(triage?.data.rationale, 'Password spraying');
  for (const entry of res.body.timeline)
    assert.deepEqual([entry.actor.id, entry.actor.email], [null, null]);
  assert.deepEqual(
    res.body.iocs.map((i) => i.value),
    ['198.51.100.7'],
  );
  assert.deepEqual(res.body.related, [], "B's incident with the same indicator is not related");
});

test("§9.5.5 the customer's alerts page, and another tenant's incident is not found", async () => {
  const alerts = await viewer.tenant.incidentAlerts({
    params: { id: incident },
    query: { limit: 2 },
  });
  assert.equal(alerts.status, 200);
  if (alerts.status !== 200) return;
  assert.equal(alerts.body.items.length, 2);
  assert.ok(alerts.body.next_cursor);
  const rest = await viewer.tenant.incidentAlerts({
    params: { id: incident },
    query: { cursor: alerts.body.next_cursor ?? '' },
  });
  assert.ok(rest.status === 200 && rest.body.items.length === 1 && rest.body.next_cursor === null);

  const foreign = await viewer.tenant.incident({ params: { id: ofB } });
  assert.deepEqual([foreign.status, problemCode(foreign)], [404, 'investigation_not_found']);
  const foreignAlerts = await viewer.tenant.incidentAlerts({ params: { id: ofB } });
  assert.deepEqual(
    [foreignAlerts.status, problemCode(foreignAlerts)],
    [404, 'investigation_not_found'],
  );
});

test('§4.3 the customer has no work routes: the MSSP ones answer 403 wrong_family and nothing is written', async () => {
  const before = await db.pools.mssp.query(
    'SELECT count(*)::int AS n FROM events WHERE tenant_id = $1',
    [tenantA],
  );
  const res = await viewer.mssp.addIncidentNote({
    params: { tenant_id: tenantA, id: incident },
    body: { body: 'from the customer', visibility: 'shared', version: 5 },
  });
  assert.deepEqual([res.status, problemCode(res)], [403, 'wrong_family']);
  const afterCount = await db.pools.mssp.query(
    'SELECT count(*)::int AS n FROM events WHERE tenant_id = $1',
    [tenantA],
  );
  assert.deepEqual(afterCount.rows, before.rows);
});
