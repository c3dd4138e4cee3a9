import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { STALE_INCIDENT } from '../../web/shared/texts.ts';
import { seedIncident } from './desk-seed.ts';
import {
  axe,
  DESKTOP,
  type Expected,
  MOBILE,
  type SeededTenant,
  type SeededUser,
  type SvcProcess,
  seedTenant,
  seedUser,
  settled,
  webSuite,
} from './support.ts';

/**
 * The analyst's desk in a real browser against a real svc (docs/investigations.md, docs/web.md
 * "Console pages"): an analyst takes an incident, reads its alerts and timeline, writes an
 * internal and a shared note (markdown, rendered without HTML), closes it as a false positive
 * and reopens it; an edit made on an outdated page is refused with the stale-version message;
 * the customer's portal shows the shared note and never the internal one.
 */
let tenant: SeededTenant;
let analyst: SeededUser;
let colleague: SeededUser;
let customer: SeededUser;

const TITLE = 'SSH brute force against bastion-01';
const RATIONALE = 'Forty failed logins from one address in two minutes, then silence.';
const RAW_LOG = 'sshd[4242]: Failed password for invalid user admin from 203.0.113.9';
const INTERNAL = 'Checked with **on-call**: scanner of the pentest vendor.';
const SHARED = 'We blocked the source address. See [the runbook](https://example.org/runbook).';

let incidentId: string;

/** The typed SDK signed in as `user` on the console host. */
async function apiAs(svc: SvcProcess, user: SeededUser): Promise<SvcClient> {
  const client = createSvcClient({ baseUrl: svc.consoleUrl, headers: { origin: svc.consoleUrl } });
  const login = await client.auth.login({ body: { email: user.email, password: user.password } });
  assert.equal(login.status, 200, `API sign-in as ${user.email}`);
  return client;
}

const suite = webSuite(async (svc) => {
  tenant = await seedTenant(svc, {
    slug: 'desk',
    appName: 'Desk Co',
    primaryColor: '#1f4e79',
    secondaryColor: '#eeeeee',
  });
  incidentId = await seedIncident(svc, tenant.id, {
    title: TITLE,
    rationale: RATIONALE,
    log: RAW_LOG,
  });
  // One after another: concurrent sign-ins are refused (429) while hashing is busy.
  analyst = await seedUser(svc, { role: 'analyst' });
  colleague = await seedUser(svc, { role: 'analyst' });
  customer = await seedUser(svc, { role: 'customer_viewer', tenant });
});

const detailPath = () => `/tenants/${tenant.id}/incidents/${incidentId}`;

/** The value of a fact (`<dt>` → `<dd>`) of the incident's header. */
function fact(page: Page, name: string): Locator {
  return page.locator('dl.facts').first().locator(`dt:text-is("${name}") + dd`);
}

async function waitForText(locator: Locator, expected: string | RegExp): Promise<void> {
  await locator.filter({ hasText: expected }).waitFor();
}

test('desk: an analyst takes an incident, reads its alerts and timeline, writes notes, closes it as false positive and reopens it', async () => {
  const w = await suite.open({ session: { user: analyst, at: suite.svc.consoleUrl } });
  const { page } = w;
  try {
    await page.goto(`${suite.svc.consoleUrl}/incidents?tenant=${tenant.id}&assignee=none`);
    await page.getByRole('link', { name: TITLE }).click();
    await page.waitForURL(`**${detailPath()}`);
    await page.getByRole('heading', { level: 1, name: TITLE }).waitFor();
    await settled(page);
    await waitForText(fact(page, 'Assignee'), 'Unassigned');
    await axe(page, 'incident detail');

    // Take it.
    await page.getByRole('button', { name: 'Take' }).click();
    await waitForText(fact(page, 'Assignee'), analyst.email);
    assert.equal(await page.getByRole('button', { name: 'Take' }).count(), 0);

    // The alerts in the fields an analyst reads, the raw document on demand.
    const alerts = page.getByRole('region', { name: 'Alerts, newest first' }).locator('tbody tr');
    await alerts.nth(1).waitFor();
    assert.equal(await alerts.count(), 2);
    const first = alerts.first();
    await waitForText(first, 'brute force trying to get access');
    await waitForText(first, 'bastion-01');
    await waitForText(first, '203.0.113.9:51002');
    await waitForText(first, 'T1110');
    await first.getByRole('button', { name: /^Raw/ }).click();
    const dialog = page.getByRole('dialog', { name: 'Alert document' });
    await dialog.getByText(RAW_LOG, { exact: false }).waitFor();
    await axe(page, 'raw alert document');
    await dialog.getByRole('button', { name: 'Close' }).click();
    await dialog.waitFor({ state: 'hidden' });

    // The timeline: grouping, the model's reasoning, the assignment, who did it.
    const timeline = page.locator('ol.timeline');
    await waitForText(timeline.locator('li'), 'Opened by grouping: rule 5712 on agent 007');
    await waitForText(timeline.locator('li'), RATIONALE);
    await waitForText(timeline.locator('li').last(), `Assigned to ${analyst.email}`);

    // An internal note, then a shared one, in markdown; HTML in a note stays text.
    const note = page.getByLabel('Note (markdown)');
    const hostile = `${INTERNAL} <img src=x onerror="window.__pwned=1"> [x](javascript:window.__pwned=2)`;
    await note.fill(hostile);
    await page.getByRole('button', { name: 'Add note' }).click();
    const internal = timeline.locator('li.timeline-internal').last();
    await waitForText(internal, 'Internal note');
    await internal.locator('strong', { hasText: 'on-call' }).waitFor();
    await waitForText(internal, '<img src=x onerror="window.__pwned=1">');
    assert.equal(await internal.locator('img').count(), 0, 'no image element from the note');
    assert.equal(await timeline.locator('a[href^="javascript"]').count(), 0);
    assert.equal(await note.inputValue(), '', 'the form is cleared after the note is saved');

    await note.fill(SHARED);
    await page.getByLabel('Shared with the customer').check();
    await page.getByRole('button', { name: 'Add note' }).click();
    const shared = timeline.locator('li.timeline-shared').last();
    await waitForText(shared, 'Shared with the customer');
    const link = shared.getByRole('link', { name: 'the runbook' });
    assert.equal(await link.getAttribute('href'), 'https://example.org/runbook');
    assert.equal(await link.getAttribute('rel'), 'noopener noreferrer');
    assert.equal(
      await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned),
      undefined,
    );
    await axe(page, 'incident with notes');

    // Close as false positive, with a reason.
    await page.getByText('Close…').click();
    const close = page.getByRole('form', { name: 'Close the incident' });
    await close.getByLabel('Verdict').selectOption('false_positive');
    await close.getByLabel('Reason').fill('Authorised pentest traffic');
    await close.getByRole('button', { name: 'Close incident' }).click();
    await waitForText(fact(page, 'Status'), 'closed');
    await waitForText(fact(page, 'Verdict'), 'false positive');
    await waitForText(timeline.locator('li').last(), 'Closed as false positive');

    // Reopen it.
    await page.getByText('Reopen…').click();
    const reopen = page.getByRole('form', { name: 'Reopen the incident' });
    await reopen.getByLabel('Reason').fill('The pentest ended yesterday');
    await reopen.getByRole('button', { name: 'Reopen incident' }).click();
    await waitForText(fact(page, 'Status'), 'open');
    await waitForText(timeline.locator('li').last(), 'Reopened: The pentest ended yesterday');
    await axe(page, 'reopened incident');

    // At 390 px the page itself never scrolls sideways (its tables scroll in their regions).
    await page.setViewportSize(MOBILE);
    await page.reload();
    await settled(page);
    const width = await page.evaluate(
      () =>
        (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } })
          .document.documentElement.scrollWidth,
    );
    assert.ok(width <= MOBILE.width, `the incident page scrolls sideways: ${width} px`);
    await axe(page, 'incident detail at 390 px');
    await page.setViewportSize(DESKTOP);

    // The list's "assigned to me" finds it.
    await page.goto(`${suite.svc.consoleUrl}/incidents?tenant=${tenant.id}&assignee=me`);
    await page.getByRole('link', { name: TITLE }).waitFor();
    await axe(page, 'incidents assigned to me');
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('desk: an edit on an outdated page answers 409 stale_version and the page says so, then reloads', async () => {
  const severityPath = `/api/mssp/tenants/${tenant.id}/incidents/${incidentId}:severity`;
  const stale: Expected = { path: severityPath, status: 409 };
  const w = await suite.open({
    session: { user: analyst, at: suite.svc.consoleUrl },
    expect: [stale],
  });
  const { page } = w;
  try {
    // The page must not learn of the colleague's edit live, as a page whose stream dropped:
    // its event stream stays open without events.
    await page.route(`**/api/mssp/tenants/${tenant.id}/events`, (route) =>
      route.fulfill({
        status: 200,
        headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
        body: 'retry: 600000\n\n',
      }),
    );
    await page.goto(`${suite.svc.consoleUrl}${detailPath()}`);
    await page.getByRole('heading', { level: 1, name: TITLE }).waitFor();
    await settled(page);

    // A colleague writes a note meanwhile (through the API, at the current version).
    const colleagueApi = await apiAs(suite.svc, colleague);
    const current = await colleagueApi.mssp.incident({
      params: { tenant_id: tenant.id, id: incidentId },
    });
    assert.equal(current.status, 200);
    if (current.status !== 200) return;
    const noted = await colleagueApi.mssp.addIncidentNote({
      params: { tenant_id: tenant.id, id: incidentId },
      body: {
        body: 'Colleague was here',
        visibility: 'internal',
        version: current.body.incident.version,
      },
    });
    assert.equal(noted.status, 200);

    await page.getByText('Change severity…').click();
    const form = page.getByRole('form', { name: 'Change the severity' });
    await form.getByLabel('Severity').selectOption('critical');
    await form.getByLabel('Reason').fill('Bastion hosts are crown jewels');
    const answer = page.waitForResponse((r) => new URL(r.url()).pathname === severityPath);
    await form.getByRole('button', { name: 'Change severity' }).click();
    assert.equal((await answer).status(), 409);
    const alert = form.getByRole('alert');
    await waitForText(alert, STALE_INCIDENT);
    await axe(page, 'stale edit');
    // Nothing was saved; the reload shows the colleague's note, and the same edit then goes in.
    await waitForText(fact(page, 'Severity'), 'high');
    await alert.getByRole('button', { name: 'Reload the incident' }).click();
    await page.locator('ol.timeline li').filter({ hasText: 'Colleague was here' }).waitFor();
    await form.getByRole('button', { name: 'Change severity' }).click();
    await waitForText(fact(page, 'Severity'), 'critical');
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('desk: the customer sees the shared note and never the internal one', async () => {
  const w = await suite.open({ session: { user: customer, at: suite.svc.portalUrl(tenant.slug) } });
  const { page } = w;
  try {
    await page.goto(`${suite.svc.portalUrl(tenant.slug)}/incidents`);
    await page.getByRole('link', { name: TITLE }).click();
    await page.getByRole('heading', { level: 1, name: TITLE }).waitFor();
    await settled(page);
    const timeline = page.locator('ol.timeline');
    await timeline.getByText('We blocked the source address.').waitFor();
    await timeline.getByRole('link', { name: 'the runbook' }).waitFor();
    const text = (await page.locator('main').textContent()) ?? '';
    assert.ok(!text.includes('on-call'), 'the internal note is not on the page');
    assert.ok(!text.includes('Colleague was here'), 'no internal note is on the page');
    assert.ok(!text.includes(analyst.email), 'no staff identity is on the page');
    assert.equal(await page.getByText('Internal note').count(), 0);
    const alerts = page
      .getByRole('region', { name: 'Alerts of this incident', exact: true })
      .locator('tbody tr');
    await alerts.nth(1).waitFor();
    await axe(page, 'portal incident detail');
    w.assertClean();
  } finally {
    await w.close();
  }
});

test("desk: the incident page shows a colleague's note live, from the tenant's event stream", async () => {
  const w = await suite.open({ session: { user: analyst, at: suite.svc.consoleUrl } });
  const { page } = w;
  try {
    const streamed = page.waitForResponse(
      (r) => new URL(r.url()).pathname === `/api/mssp/tenants/${tenant.id}/events`,
    );
    await page.goto(`${suite.svc.consoleUrl}${detailPath()}`);
    await page.getByRole('heading', { level: 1, name: TITLE }).waitFor();
    await settled(page);
    assert.equal((await streamed).status(), 200);
    const colleagueApi = await apiAs(suite.svc, colleague);
    const params = { tenant_id: tenant.id, id: incidentId };
    const current = await colleagueApi.mssp.incident({ params });
    assert.equal(current.status, 200);
    if (current.status !== 200) return;
    const noted = await colleagueApi.mssp.addIncidentNote({
      params,
      body: {
        body: 'Live from a colleague',
        visibility: 'internal',
        version: current.body.incident.version,
      },
    });
    assert.equal(noted.status, 200);
    // No reload: the stream's note.added marks the detail stale and it is fetched again.
    await page.locator('ol.timeline li').filter({ hasText: 'Live from a colleague' }).waitFor();
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('desk: the review queue pages past its first 50 reviews with Show more, oldest first, and each card opens its incident', async () => {
  const queue = await seedTenant(suite.svc, {
    slug: 'queue',
    appName: 'Queue Co',
    primaryColor: '#1f4e79',
    secondaryColor: '#eeeeee',
    incidents: ['Beaconing from the print server'],
  });
  await suite.svc.sql.query(
    `INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, rationale, risk,
       confidence, requested_by, requested_at)
     SELECT i.tenant_id, i.id, 'block_ip_' || n, 'Review ' || n, 'medium', 0.8, 'triage',
            now() - make_interval(mins => 100 - n)
       FROM investigations i, generate_series(1, 60) AS n
      WHERE i.tenant_id = $1`,
    [queue.id],
  );
  const w = await suite.open({ session: { user: analyst, at: suite.svc.consoleUrl } });
  const { page } = w;
  try {
    await page.goto(`${suite.svc.consoleUrl}/reviews?tenant=${queue.id}`);
    const cards = page.locator('li.card');
    await page.getByText('Showing the oldest 50 reviews.').waitFor();
    assert.equal(await cards.count(), 50);
    assert.equal(await text(cards.first().getByRole('heading', { level: 2 })), 'block_ip_1');
    await page.getByRole('button', { name: 'Show more' }).click();
    await page.getByText('All 60 reviews shown.').waitFor();
    assert.equal(await cards.count(), 60);
    assert.equal(await text(cards.last().getByRole('heading', { level: 2 })), 'block_ip_60');
    await axe(page, 'review queue, two pages');
    await cards.first().getByRole('link', { name: 'Open the incident' }).click();
    await page
      .getByRole('heading', { level: 1, name: 'Beaconing from the print server' })
      .waitFor();
    await settled(page);
    w.assertClean();
  } finally {
    await w.close();
  }
});

async function text(locator: Locator): Promise<string> {
  return ((await locator.textContent()) ?? '').trim();
}
