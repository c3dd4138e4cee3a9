import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { SvcClient } from '../../contracts/index.ts';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import { impersonating, problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';
import { foldAll, seedIncident, writtenRows } from './incidents-support.ts';

/**
 * docs/investigations.md "Work": assign, note, close, reopen and severity on one incident, each
 * one event on the investigation's stream at the version the caller saw, audited, answered
 * with the detail as it is after the write.
 */
let db: TestDatabase;
let api: TestApi;
let system: SystemGate;
let tenantA: string;
let tenantB: string;
let analyst: SvcClient;
let analystId: string;
let colleagueId: string;

async function userId(email: string): Promise<string> {
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    'SELECT id FROM users WHERE email = $1',
    [email],
  );
  assert.ok(rows[0]);
  return rows[0].id;
}

async function detail(client: SvcClient, tenantId: string, id: string) {
  const res = await client.mssp.incident({ params: { tenant_id: tenantId, id } });
  assert.equal(res.status, 200);
  if (res.status !== 200) throw new Error('unreachable');
  return res.body;
}

async function auditOf(tenantId: string, id: string) {
  const { rows } = await db.pools.mssp.query<{
    action: string;
    actor_id: string;
    acting_as: string | null;
    after: Record<string, unknown>;
  }>(
    `SELECT action, actor_id, acting_as, after FROM audit_log
      WHERE tenant_id = $1 AND resource_type = 'investigation' AND resource_id = $2
      ORDER BY "timestamp", id`,
    [tenantId, id],
  );
  return rows;
}

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  system = createSystemGate(db.target);
  tenantA = await createTenant(db.pools.app, 'alpha');
  tenantB = await createTenant(db.pools.app, 'bravo');
  analyst = await signedInAs({ db, api }, 'analyst', { email: 'desk-analyst@mssp.test' });
  analystId = await userId('desk-analyst@mssp.test');
  await signedInAs({ db, api }, 'analyst', { email: 'colleague@mssp.test' });
  colleagueId = await userId('colleague@mssp.test');
});
after(async () => {
  await system.close();
  await api.close();
  await db.drop();
});

test('§2.2 investigation work: take, note, close as false positive, reopen, pin severity; each audited and answered read-your-writes', async () => {
  const id = await seedIncident(db.app, tenantA, { alerts: 2, level: 5 });
  await foldAll(db, system, tenantA);
  const first = await detail(analyst, tenantA, id);
  assert.equal(first.incident.status, 'open');
  assert.equal(first.incident.assignee, null);
  assert.equal(first.incident.version, 1);

  const taken = await analyst.mssp.assignIncident({
    params: { tenant_id: tenantA, id },
    body: { assignee_id: analystId, version: first.incident.version },
  });
  assert.equal(taken.status, 200);
  if (taken.status !== 200) return;
  assert.deepEqual(taken.body.incident.assignee, {
    id: analystId,
    email: 'desk-analyst@mssp.test',
  });
  assert.equal(taken.body.incident.version, 2);
  // Who did what: the staff timeline names the assignee by email as well as the actor.
  const assigned = taken.body.timeline.at(-1);
  assert.equal(assigned?.type, 'investigation.assigned');
  assert.equal(assigned?.data.assignee_email, 'desk-analyst@mssp.test');
  assert.equal(assigned?.actor.email, 'desk-analyst@mssp.test');

  const noted = await analyst.mssp.addIncidentNote({
    params: { tenant_id: tenantA, id },
    body: { body: '**Brute force** from one host', visibility: 'internal', version: 2 },
  });
  assert.equal(noted.status, 200);
  if (noted.status !== 200) return;
  const note = noted.body.timeline.at(-1);
  assert.equal(note?.type, 'note.added');
  assert.equal(note?.data.body, '**Brute force** from one host');
  assert.deepEqual(note?.actor, {
    kind: 'user',
    id: analystId,
    email: 'desk-analyst@mssp.test',
  });

  const closed = await analyst.mssp.closeIncident({
    params: { tenant_id: tenantA, id },
    body: { verdict: 'false_positive', reason: 'admin testing', version: 3 },
  });
  assert.equal(closed.status, 200);
  if (closed.status !== 200) return;
  assert.equal(closed.body.incident.status, 'closed');
  assert.equal(closed.body.incident.verdict, 'false_positive');
  assert.ok(closed.body.incident.closed_at);

  const again = await analyst.mssp.closeIncident({
    params: { tenant_id: tenantA, id },
    body: { verdict: 'benign', reason: 'twice', version: 4 },
  });
  assert.deepEqual([again.status, problemCode(again)], [409, 'investigation_already_closed']);

  const reopened = await analyst.mssp.reopenIncident({
    params: { tenant_id: tenantA, id },
    body: { reason: 'seen again on another host', version: 4 },
  });
  assert.equal(reopened.status, 200);
  if (reopened.status !== 200) return;
  assert.equal(reopened.body.incident.status, 'open');
  assert.equal(reopened.body.incident.closed_at, null);
  assert.equal(reopened.body.incident.resolved_at, null);

  const reopenOpen = await analyst.mssp.reopenIncident({
    params: { tenant_id: tenantA, id },
    body: { reason: 'twice', version: 5 },
  });
  assert.deepEqual([reopenOpen.status, problemCode(reopenOpen)], [409, 'investigation_not_closed']);

  const pinned = await analyst.mssp.changeIncidentSeverity({
    params: { tenant_id: tenantA, id },
    body: { severity: 'low', reason: 'lab host', version: 5 },
  });
  assert.equal(pinned.status, 200);
  if (pinned.status !== 200) return;
  assert.equal(pinned.body.incident.severity, 'low');
  assert.equal(pinned.body.incident.severity_pinned, true);

  const unassigned = await analyst.mssp.assignIncident({
    params: { tenant_id: tenantA, id },
    body: { assignee_id: null, version: 6 },
  });
  assert.equal(unassigned.status, 200);
  if (unassigned.status === 200) assert.equal(unassigned.body.incident.assignee, null);

  assert.deepEqual(
    (await auditOf(tenantA, id)).map((r) => [r.action, r.actor_id, r.acting_as]),
    [
      ['investigation.assign', analystId, null],
      ['investigation.note', analystId, null],
      ['investigation.close', analystId, null],
      ['investigation.reopen', analystId, null],
      ['investigation.severity', analystId, null],
      ['investigation.unassign', analystId, null],
    ],
  );
  // The tenant reads its audit trail: an internal note's text is not in it.
  const noteAudit = (await auditOf(tenantA, id)).find((r) => r.action === 'investigation.note');
  assert.equal(JSON.stringify(noteAudit).includes('Brute force'), false);

  const types = (await detail(analyst, tenantA, id)).timeline.map((e) => e.type);
  assert.deepEqual(types.slice(-6), [
    'investigation.assigned',
    'note.added',
    'investigation.closed',
    'investigation.reopened',
    'investigation.severity_changed',
    'investigation.assigned',
  ]);
});

test('§2.3 a pinned severity is not raised by a later alert; an unpinned one is', async () => {
  const pinnedId = await seedIncident(db.app, tenantA, { ruleId: '600', agentId: '020' });
  const freeId = await seedIncident(db.app, tenantA, { ruleId: '601', agentId: '021' });
  await foldAll(db, system, tenantA);
  const pin = await analyst.mssp.changeIncidentSeverity({
    params: { tenant_id: tenantA, id: pinnedId },
    body: { severity: 'info', reason: 'known scanner', version: 1 },
  });
  assert.equal(pin.status, 200);
  // A critical alert (level 15) for each: only the unpinned one rises.
  const { receiveAlert, wazuhAlert } = await import('../projections/support.ts');
  for (const [id, agentId] of [
    [pinnedId, '020'],
    [freeId, '021'],
  ] as const) {
    const at = new Date('2026-11-20T10:05:00Z');
    await receiveAlert(
      db.app,
      tenantA,
      id,
      wazuhAlert({ ruleId: '600', level: 15, agentId, at }),
      at,
    );
  }
  await foldAll(db, system, tenantA);
  assert.equal((await detail(analyst, tenantA, pinnedId)).incident.severity, 'info');
  assert.equal((await detail(analyst, tenantA, freeId)).incident.severity, 'critical');
});

test('§2.2 assigning to another active MSSP user works; an unknown, disabled or customer user is 422 invalid_assignee and nothing is written', async () => {
  const id = await seedIncident(db.app, tenantA, { ruleId: '700', agentId: '030' });
  await foldAll(db, system, tenantA);
  const other = await analyst.mssp.assignIncident({
    params: { tenant_id: tenantA, id },
    body: { assignee_id: colleagueId, version: 1 },
  });
  assert.equal(other.status, 200);
  if (other.status === 200)
    assert.equal(other.body.incident.assignee?.email, 'colleague@mssp.test');

  await signedInAs({ db, api }, 'analyst', { email: 'gone@mssp.test' });
  const disabledId = await userId('gone@mssp.test');
  await db.pools.mssp.query('UPDATE users SET disabled_at = now() WHERE id = $1', [disabledId]);
  await signedInAs({ db, api }, 'customer_viewer', {
    email: 'viewer@alpha.test',
    tenantId: tenantA,
  });
  const customerId = await userId('viewer@alpha.test');
  const before = await writtenRows(db, tenantA);
  for (const assignee of [disabledId, customerId, '00000000-0000-4000-8000-000000000000']) {
    const res = await analyst.mssp.assignIncident({
      params: { tenant_id: tenantA, id },
      body: { assignee_id: assignee, version: 2 },
    });
    assert.deepEqual([res.status, problemCode(res)], [422, 'invalid_assignee'], assignee);
  }
  assert.deepEqual(await writtenRows(db, tenantA), before);
});

test('§2.3 optimistic concurrency: a stale version is 409 stale_version; of two edits at one version exactly one wins', async () => {
  const id = await seedIncident(db.app, tenantA, { ruleId: '800', agentId: '040' });
  await foldAll(db, system, tenantA);
  const colleague = await signedInAs({ db, api }, 'analyst', {
    email: 'colleague@mssp.test',
  });
  const [mine, theirs] = await Promise.all([
    analyst.mssp.addIncidentNote({
      params: { tenant_id: tenantA, id },
      body: { body: 'mine', visibility: 'internal', version: 1 },
    }),
    colleague.mssp.addIncidentNote({
      params: { tenant_id: tenantA, id },
      body: { body: 'theirs', visibility: 'internal', version: 1 },
    }),
  ]);
  const statuses = [mine.status, theirs.status].sort();
  assert.deepEqual(statuses, [200, 409]);
  const loser = mine.status === 409 ? mine : theirs;
  assert.equal(problemCode(loser), 'stale_version');
  const notes = await db.pools.mssp.query(
    `SELECT 1 FROM events WHERE tenant_id = $1 AND stream_id = $2 AND type = 'note.added'`,
    [tenantA, id],
  );
  assert.equal(notes.rowCount, 1);
  const notesAudited = (await auditOf(tenantA, id)).filter(
    (r) => r.action === 'investigation.note',
  );
  assert.equal(notesAudited.length, 1);

  const before = await writtenRows(db, tenantA);
  const stale = await analyst.mssp.closeIncident({
    params: { tenant_id: tenantA, id },
    body: { verdict: 'benign', reason: 'old view', version: 1 },
  });
  assert.deepEqual([stale.status, problemCode(stale)], [409, 'stale_version']);
  assert.equal((stale.body as { version?: number }).version, 2);
  assert.deepEqual(await writtenRows(db, tenantA), before);
});

test('§4 bad work input is a problem+json with a stable code, and nothing is written', async () => {
  const id = await seedIncident(db.app, tenantA, { ruleId: '900', agentId: '050' });
  await foldAll(db, system, tenantA);
  const params = { tenant_id: tenantA, id };
  const before = await writtenRows(db, tenantA);
  const bad = [
    await analyst.mssp.addIncidentNote({
      params,
      body: { body: '', visibility: 'internal', version: 1 },
    }),
    await analyst.mssp.addIncidentNote({
      params,
      body: { body: 'x'.repeat(10_001), visibility: 'internal', version: 1 },
    }),
    await analyst.mssp.addIncidentNote({
      params,
      body: { body: 'x', visibility: 'public', version: 1 } as never,
    }),
    await analyst.mssp.addIncidentNote({
      params,
      body: { body: 'x', visibility: 'shared' } as never,
    }),
    await analyst.mssp.closeIncident({
      params,
      body: { verdict: 'inconclusive', reason: 'x', version: 1 } as never,
    }),
    await analyst.mssp.closeIncident({
      params,
      body: { verdict: 'benign', reason: '', version: 1 },
    }),
    await analyst.mssp.changeIncidentSeverity({
      params,
      body: { severity: 'urgent', reason: 'x', version: 1 } as never,
    }),
    await analyst.mssp.assignIncident({
      params,
      body: { assignee_id: 'nobody', version: 1 } as never,
    }),
    await analyst.mssp.reopenIncident({
      params,
      body: { reason: 'x', version: -1 },
    }),
    await analyst.mssp.reopenIncident({
      params: { tenant_id: tenantA, id: 'not-a-uuid' },
      body: { reason: 'x', version: 1 },
    }),
  ];
  for (const res of bad)
    assert.deepEqual([res.status, problemCode(res)], [400, 'validation_failed']);
  const missing = await analyst.mssp.closeIncident({
    params: { tenant_id: tenantA, id: '00000000-0000-4000-8000-000000000000' },
    body: { verdict: 'benign', reason: 'x', version: 1 },
  });
  assert.deepEqual([missing.status, problemCode(missing)], [404, 'investigation_not_found']);
  assert.deepEqual(await writtenRows(db, tenantA), before);
});

test("§9.5.5 cross-tenant probes: A's session or A's impersonation token never reads or changes B's incident", async () => {
  const ofB = await seedIncident(db.app, tenantB, { ruleId: '1000', agentId: '060' });
  await foldAll(db, system, tenantB);
  const before = await writtenRows(db, tenantB);
  // B's incident through A's path: not found (RLS), nothing written.
  const reads = [
    await analyst.mssp.incident({ params: { tenant_id: tenantA, id: ofB } }),
    await analyst.mssp.incidentAlerts({ params: { tenant_id: tenantA, id: ofB } }),
    await analyst.mssp.addIncidentNote({
      params: { tenant_id: tenantA, id: ofB },
      body: { body: 'probe', visibility: 'shared', version: 1 },
    }),
    await analyst.mssp.closeIncident({
      params: { tenant_id: tenantA, id: ofB },
      body: { verdict: 'benign', reason: 'probe', version: 1 },
    }),
    await analyst.mssp.assignIncident({
      params: { tenant_id: tenantA, id: ofB },
      body: { assignee_id: analystId, version: 1 },
    }),
  ];
  for (const res of reads)
    assert.deepEqual([res.status, problemCode(res)], [404, 'investigation_not_found']);

  const asA = await impersonating(api, analyst, tenantA, 'desk duty');
  const viaToken = [
    await asA.mssp.incident({ params: { tenant_id: tenantB, id: ofB } }),
    await asA.mssp.reopenIncident({
      params: { tenant_id: tenantB, id: ofB },
      body: { reason: 'probe', version: 1 },
    }),
    await asA.mssp.changeIncidentSeverity({
      params: { tenant_id: tenantB, id: ofB },
      body: { severity: 'info', reason: 'probe', version: 1 },
    }),
  ];
  for (const res of viaToken)
    assert.deepEqual([res.status, problemCode(res)], [403, 'outside_impersonated_tenant']);
  const sideways = await asA.mssp.addIncidentNote({
    params: { tenant_id: tenantA, id: ofB },
    body: { body: 'probe', visibility: 'shared', version: 1 },
  });
  assert.deepEqual([sideways.status, problemCode(sideways)], [404, 'investigation_not_found']);
  assert.deepEqual(await writtenRows(db, tenantB), before);
});

test('§5.2 work through an impersonation token for A is audited with acting_as A', async () => {
  const id = await seedIncident(db.app, tenantA, { ruleId: '1100', agentId: '070' });
  await foldAll(db, system, tenantA);
  const asA = await impersonating(api, analyst, tenantA, 'desk duty');
  const res = await asA.mssp.addIncidentNote({
    params: { tenant_id: tenantA, id },
    body: { body: 'via token', visibility: 'shared', version: 1 },
  });
  assert.equal(res.status, 200);
  assert.deepEqual(
    (await auditOf(tenantA, id)).map((r) => [r.action, r.acting_as]),
    [['investigation.note', tenantA]],
  );
});
