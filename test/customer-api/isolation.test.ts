import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type SvcClient, tenantContract } from '../../contracts/index.ts';
import { problemCode, seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';
import {
  assertMatches,
  assertNoneOf,
  errorPaths,
  PASSWORD,
  type SeededTenant,
  seedTenant,
  signedIn,
  withTenantToken,
} from './support.ts';

let db: TestDatabase;
let api: TestApi;
let a: SeededTenant;
let b: SeededTenant;
/** Written outside any tenant (tenant_id NULL): no customer may read it. */
const INSTALL_SECRET = 'INSTALL-ONLY-ROW';

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  const staffId = await seedUser(db, api.hasher, {
    email: 'an@mssp.test',
    role: 'analyst',
    password: PASSWORD,
  });
  a = await seedTenant(db, api, 'alpha', { staffId });
  // B outranks A everywhere, so a missing tenant filter would put B first in every list.
  b = await seedTenant(db, api, 'bravo', { staffId, scale: 1000 });
  await db.app.withoutTenant((tx) =>
    tx.query(
      `INSERT INTO audit_log (tenant_id, actor_principal, actor_id, action, resource_type, details)
       VALUES (NULL, 'System', 'system:probe', 'settings.update', 'install', $1)`,
      [JSON.stringify({ note: INSTALL_SECRET })],
    ),
  );
});
after(async () => {
  await api.close();
  await db.drop();
});

/** Every JSON endpoint of the family, called through the typed SDK as the portal does. */
async function readEverything(svc: SvcClient) {
  return {
    overview: await svc.tenant.overview(),
    incidents: await svc.tenant.incidents({ query: { limit: 200 } }),
    reports: await svc.tenant.reports({ query: { days: 90 } }),
    audit: await svc.tenant.audit({ query: { limit: 200 } }),
    branding: await svc.tenant.branding(),
  };
}

async function assertOnlyA(svc: SvcClient, how: string) {
  const all = await readEverything(svc);
  for (const [name, res] of Object.entries(all)) {
    assert.equal(res.status, 200, `${how} ${name}`);
    const route = tenantContract[name as keyof typeof all];
    assertMatches(route.responses[200], res.body, `${how} ${name}`);
    assertNoneOf(res.body, [...b.secrets, INSTALL_SECRET], `${how} ${name}`);
  }
  const { overview, incidents, audit, branding, reports } = all;
  assert.ok(overview.status === 200 && overview.body.tenant.id === a.id);
  assert.ok(incidents.status === 200);
  assert.deepEqual(new Set(incidents.body.items.map((i) => i.id)), new Set(a.investigations));
  assert.ok(audit.status === 200);
  for (const id of a.audit)
    assert.ok(
      audit.body.items.some((row) => row.id === id),
      id,
    );
  assert.ok(branding.status === 200 && branding.body.app_name === 'ALPHA Portal');
  assert.ok(reports.status === 200 && reports.body.top_rules[0]?.rule_id === 'ALPHA-rule-12');
}

test("§9.5.5 cross-tenant probe: with A's customer session every endpoint returns only A's rows", async () => {
  await assertOnlyA(await signedIn(api, a.viewer.email), 'session');
});

test("§9.5.5 cross-tenant probe: with A's tenant bearer token every endpoint returns only A's rows", async () => {
  await assertOnlyA(await withTenantToken(api, a.viewer.id, a.id), 'token');
});

test('§9.5.5 a tenant named in the request is refused: ?tenant_id=B or any unknown parameter is 400 validation_failed', async () => {
  const viewer = await signedIn(api, a.viewer.email);
  const probes = [
    { tenant_id: b.id },
    { tenant: b.id },
    { TENANT_ID: b.id },
    { limit: '5', tenant_id: b.id },
    { unexpected: '1' },
  ];
  for (const name of Object.keys(tenantContract) as (keyof typeof tenantContract)[]) {
    for (const query of probes) {
      // Cast: the contract has no such parameters, which is the point of the probe. Routes of
      // one incident get A's own incident, so only the query is wrong.
      const res = await viewer.tenant[name]({
        params: { id: a.investigations[0] },
        query: query as never,
      } as never);
      assert.equal(res.status, 400, `${name} ${JSON.stringify(query)}`);
      assert.equal(problemCode(res), 'validation_failed');
      const unknown = Object.keys(query).filter((key) => key !== 'limit');
      const paths = errorPaths(res);
      for (const key of unknown) assert.ok(paths.includes(`/query/${key}`), paths.join());
    }
  }
  assert.equal(api.events.status().subscribers, 0, 'no stream was opened');
});

test('§9.5.5 headers naming B and a cursor issued to B never move A out of its tenant', async () => {
  const viewer = await signedIn(api, a.viewer.email);
  const forged = { 'x-tenant-id': b.id, 'x-current-tenant': b.id, 'x-forwarded-tenant': b.id };
  const res = await viewer.tenant.incidents({ headers: forged });
  assert.equal(res.status, 200);
  assertNoneOf(res.body, b.secrets, 'incidents with tenant headers');

  const ofB = await (await signedIn(api, b.viewer.email)).tenant.incidents({ query: { limit: 1 } });
  assert.ok(ofB.status === 200 && ofB.body.next_cursor);
  const replayed = await viewer.tenant.incidents({ query: { cursor: ofB.body.next_cursor } });
  assert.equal(replayed.status, 200);
  assertNoneOf(replayed.body, b.secrets, "incidents after B's cursor");
});

test('§5.7.3 the audit view shows impersonation rows of A and neither B rows nor install-scoped rows', async () => {
  const viewer = await signedIn(api, a.viewer.email);
  const res = await viewer.tenant.audit({ query: { action: 'user.impersonate' } });
  assert.equal(res.status, 200);
  if (res.status !== 200) return;
  assert.deepEqual(
    res.body.items.map((row) => [row.acting_as, row.impersonated]),
    [[a.id, true]],
  );
  const settings = await viewer.tenant.audit({ query: { action: 'settings.update' } });
  assert.ok(settings.status === 200);
  assert.equal(settings.body.items.length, 1, 'the install-scoped settings.update is not shown');
  assertNoneOf(settings.body, [INSTALL_SECRET, ...b.secrets], 'audit');
});
