import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import {
  axe,
  type Expected,
  type SeededTenant,
  type SeededUser,
  seedTenant,
  seedUser,
  signIn,
  webSuite,
} from './support.ts';

/**
 * Issue 14 "incidents across tenants and per tenant; the review queue", in a real browser
 * against a real svc: the console's incident list and review queue show every tenant until
 * the picker narrows them to one.
 */
let north: SeededTenant;
let south: SeededTenant;
let analyst: SeededUser;
const NORTH_INCIDENT = 'Impossible travel for finance admin';
const SOUTH_INCIDENT = 'Ransomware note on file server';

const suite = webSuite(async (svc) => {
  north = await seedTenant(svc, {
    slug: 'north',
    appName: 'North Co',
    primaryColor: '#113355',
    secondaryColor: '#eeeeee',
    incidents: [NORTH_INCIDENT],
  });
  south = await seedTenant(svc, {
    slug: 'south',
    appName: 'South Co',
    primaryColor: '#553311',
    secondaryColor: '#eeeeee',
    incidents: [SOUTH_INCIDENT],
  });
  analyst = await seedUser(svc, { role: 'analyst' });
});

const ME_401: Expected = { path: '/api/auth/me', status: 401 };

async function signedIn(fn: (page: Page) => Promise<void>): Promise<void> {
  const w = await suite.open({ expect: [ME_401] });
  try {
    await signIn(w.page, suite.svc.consoleUrl, analyst);
    await w.page.getByRole('heading', { level: 1 }).first().waitFor();
    await fn(w.page);
    w.assertClean();
  } finally {
    await w.close();
  }
}

async function open(page: Page, path: string, heading: string): Promise<void> {
  await page.goto(`${suite.svc.consoleUrl}${path}`);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

/** The table row of an incident title. */
const rowOf = (page: Page, title: string) =>
  page.getByRole('row').filter({ has: page.getByRole('cell', { name: title }) });

test('issue 14: incidents show every tenant by default with a Tenant column linking to it; the picker narrows to one', async () => {
  await signedIn(async (page) => {
    const listed = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/mssp/incidents');
    await open(page, '/incidents', 'Incidents');
    assert.equal((await listed).status(), 200);
    assert.equal(await page.getByLabel('Tenant').inputValue(), '', 'All tenants is chosen');
    await rowOf(page, NORTH_INCIDENT).getByRole('link', { name: 'north' }).waitFor();
    await rowOf(page, SOUTH_INCIDENT).getByRole('link', { name: 'south' }).waitFor();
    await page.getByRole('columnheader', { name: 'Tenant' }).waitFor();
    await axe(page, 'incidents across tenants');

    await page.getByLabel('Tenant').selectOption(south.id);
    await rowOf(page, SOUTH_INCIDENT).waitFor();
    await rowOf(page, NORTH_INCIDENT).waitFor({ state: 'detached' });
    assert.equal(await page.getByRole('columnheader', { name: 'Tenant' }).count(), 0);

    await page.getByLabel('Tenant').selectOption('');
    await rowOf(page, NORTH_INCIDENT).getByRole('link', { name: 'north' }).click();
    await page.waitForURL(`**/tenants/${north.id}`);
    await page.getByRole('heading', { level: 1, name: 'North Co' }).waitFor();
  });
});

test('issue 14: the review queue across tenants decides a review through its own tenant’s route', async () => {
  const { rows } = await suite.svc.sql.query<{ id: string; tenant_id: string }>(
    `INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, rationale, risk,
       confidence, requested_by)
     SELECT tenant_id, id, CASE WHEN tenant_id = $1 THEN 'block_ip' ELSE 'isolate_host' END,
       'Seen in both tenants', 'high', 0.9, 'triage'
       FROM investigations WHERE tenant_id IN ($1, $2)
     RETURNING id, tenant_id`,
    [north.id, south.id],
  );
  assert.equal(rows.length, 2);
  const ofSouth = rows.find((r) => r.tenant_id === south.id);
  assert.ok(ofSouth);
  await signedIn(async (page) => {
    await open(page, '/reviews', 'Review queue');
    const card = (action: string) =>
      page.locator('li.card').filter({ has: page.getByRole('heading', { name: action }) });
    await card('block_ip').getByRole('link', { name: 'north' }).waitFor();
    const isolate = card('isolate_host');
    await isolate.getByRole('link', { name: 'south' }).waitFor();
    await axe(page, 'review queue across tenants');

    await isolate.getByLabel('Note').fill('Isolated after call with South');
    const approved = page.waitForResponse((r) => r.url().includes(':approve'));
    await isolate.getByRole('button', { name: 'Approve' }).click();
    const answer = await approved;
    assert.equal(answer.status(), 200);
    assert.equal(
      new URL(answer.url()).pathname,
      `/api/mssp/tenants/${south.id}/reviews/${ofSouth.id}:approve`,
    );
    await isolate.waitFor({ state: 'detached' });
    await card('block_ip').waitFor();
  });
  const decided = await suite.svc.sql.query(
    `SELECT tenant_id, decision, decision_note FROM pending_reviews WHERE decision IS NOT NULL`,
  );
  assert.deepEqual(decided.rows, [
    { tenant_id: south.id, decision: 'approved', decision_note: 'Isolated after call with South' },
  ]);
});
