import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { SvcClient } from '../../contracts/index.ts';
import { receiveAlert, wazuhAlert } from '../projections/support.ts';
import { problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { waitUntil } from '../support/cluster.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';
import { seedIncident } from './incidents-support.ts';

/**
 * docs/investigations.md "Concurrency": with the projector folding the same tenant at the same
 * time (alerts keep arriving), every work answer already shows its own write, and two analysts
 * racing on one incident end with every accepted edit in the stream once and the others told
 * `stale_version` — never a 500, never a lost or doubled write.
 */
let db: TestDatabase;
let api: TestApi;
let tenant: string;
let first: SvcClient;
let second: SvcClient;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS }, projector: true });
  tenant = await createTenant(db.pools.app, 'alpha');
  first = await signedInAs({ db, api }, 'analyst');
  second = await signedInAs({ db, api }, 'mssp_admin');
});
after(async () => {
  await api.close();
  await db.drop();
});

/** The detail once the running projector has folded the incident's opening. */
function whenProjected(id: string) {
  return waitUntil('the projector to fold the opening', async () => {
    const res = await first.mssp.incident({ params: { tenant_id: tenant, id } });
    if (res.status === 200) return res.body;
    assert.deepEqual([res.status, problemCode(res)], [404, 'investigation_not_found']);
    return undefined;
  });
}

test('§2.3 read-your-writes with the projector running: each answer shows its own note and assignee, alerts folding meanwhile', async () => {
  const id = await seedIncident(db.app, tenant, { ruleId: '4001', agentId: '101' });
  let version = (await whenProjected(id)).incident.version;
  const alerts = (async () => {
    for (let i = 0; i < 30; i++) {
      const at = new Date(Date.parse('2026-11-20T10:01:00Z') + i * 1000);
      await receiveAlert(
        db.app,
        tenant,
        id,
        wazuhAlert({ ruleId: '4001', level: 5, agentId: '101', at }),
        at,
      );
    }
  })();
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    `SELECT id FROM users WHERE role = 'analyst'`,
  );
  const me = rows[0]?.id ?? '';
  for (let i = 0; i < 10; i++) {
    // A note (the timeline reads the store) and an assignment (the read model) in turn.
    const assignee = i % 2 === 0 ? me : null;
    const noted = await first.mssp.addIncidentNote({
      params: { tenant_id: tenant, id },
      body: { body: `note ${i}`, visibility: 'internal', version },
    });
    assert.equal(noted.status, 200, JSON.stringify(noted.body));
    if (noted.status !== 200) return;
    assert.equal(noted.body.timeline.at(-1)?.data.body, `note ${i}`);
    const res = await first.mssp.assignIncident({
      params: { tenant_id: tenant, id },
      body: { assignee_id: assignee, version: noted.body.incident.version },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    if (res.status !== 200) return;
    assert.equal(res.body.incident.version, version + 2);
    assert.equal(res.body.incident.assignee?.id ?? null, assignee);
    version = res.body.incident.version;
  }
  await alerts;
});

test('§2.3 two analysts racing on one incident: accepted edits land once each, the rest are stale_version', async () => {
  const id = await seedIncident(db.app, tenant, { ruleId: '4002', agentId: '102' });
  await whenProjected(id);
  const accepted: string[] = [];
  const race = async (client: SvcClient, who: string) => {
    for (let i = 0; i < 8; i++) {
      const seen = await client.mssp.incident({ params: { tenant_id: tenant, id } });
      assert.equal(seen.status, 200);
      if (seen.status !== 200) return;
      const body = `${who} ${i}`;
      const res = await client.mssp.addIncidentNote({
        params: { tenant_id: tenant, id },
        body: { body, visibility: 'shared', version: seen.body.incident.version },
      });
      if (res.status === 200) accepted.push(body);
      else assert.deepEqual([res.status, problemCode(res)], [409, 'stale_version']);
    }
  };
  await Promise.all([race(first, 'first'), race(second, 'second')]);
  const { rows } = await db.pools.mssp.query<{ body: string }>(
    `SELECT payload->>'body' AS body FROM events
      WHERE tenant_id = $1 AND stream_id = $2 AND type = 'note.added' ORDER BY stream_seq`,
    [tenant, id],
  );
  assert.deepEqual(rows.map((r) => r.body).sort(), [...accepted].sort());
  assert.ok(accepted.length >= 8, 'each round lets at least one edit through');
});
