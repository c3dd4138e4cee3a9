import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import type { EventPayload } from '../../contracts/events.ts';
import {
  type SeededTenant,
  type SeededUser,
  seedTenant,
  seedUser,
  signIn,
  type WatchedPage,
  webSuite,
} from './support.ts';

/**
 * Live updates from the event catalog (docs/events.md "Catalog"; docs/web.md): open pages
 * subscribe to every catalog type by name, so an event the pipeline writes — here
 * `case.opened`, which the hand-kept list of old lacked — refreshes the console's incident list
 * and the portal's incident list and detail without a reload.
 */
const INCIDENT = {
  id: randomUUID(),
  title: `Live: credential dumping on DC-${randomUUID().slice(0, 4)}`,
};

let acme: SeededTenant;
let analyst: SeededUser;
let viewer: SeededUser;
const suite = webSuite(async (svc) => {
  acme = await seedTenant(svc, {
    slug: 'livecorp',
    appName: 'Livecorp Shield',
    primaryColor: '#0b5394',
    secondaryColor: '#e69138',
  });
  analyst = await seedUser(svc, { role: 'analyst' });
  viewer = await seedUser(svc, { role: 'customer_viewer', tenant: acme });
  // The investigation as the projector leaves it while its review waits.
  await svc.sql.query(
    `INSERT INTO investigations (tenant_id, id, title, severity, status, opened_at, updated_at)
     VALUES ($1, $2, $3, 'high', 'awaiting_review', now() - interval '5 minutes',
             now() - interval '5 minutes')`,
    [acme.id, INCIDENT.id, INCIDENT.title],
  );
});

const ME_401 = { path: '/api/auth/me', status: 401 } as const;

/** The table row of the incident (found by its link). */
function incidentRow(page: Page): Locator {
  return page
    .getByRole('row')
    .filter({ has: page.getByRole('link', { name: INCIDENT.title, exact: true }) });
}

/** The portal detail's Status field. */
function statusField(page: Page): Locator {
  return page
    .locator('dl.fields > div')
    .filter({ has: page.locator('dt', { hasText: /^Status$/ }) });
}

/**
 * Resolves once the page at `pagePath` has its event stream open (answered, so positioned: the
 * server subscribes before it answers). Matched by the request's referrer, so a stream the
 * previous page opened (the portal's overview has one) does not count.
 */
function streamOpen(page: Page, pagePath: string): Promise<unknown> {
  return page.waitForResponse(async (r) => {
    if (!/\/events$/.test(new URL(r.url()).pathname) || !r.ok()) return false;
    const referrer = await r.request().headerValue('referer');
    return referrer !== null && new URL(referrer).pathname === pagePath;
  });
}

/**
 * What the act job commits when TheHive opened the case (docs/pipeline.md "Act"): the read
 * model moves to resolved and `case.opened` is appended in one transaction, so the stream's
 * notice comes when the new row can be read.
 */
async function caseOpened(): Promise<void> {
  const payload: EventPayload<'case.opened'> = {
    investigation_id: INCIDENT.id,
    review_id: randomUUID(),
    case_id: '~4242',
    case_number: 42,
  };
  const client = await suite.svc.sql.connect();
  try {
    await client.query('BEGIN');
    await client.query(
      `UPDATE investigations SET status = 'resolved', verdict = 'true_positive',
              resolved_at = now(), updated_at = now()
        WHERE tenant_id = $1 AND id = $2`,
      [acme.id, INCIDENT.id],
    );
    await client.query(
      `INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, actor,
                           occurred_at)
       VALUES ($1, 'investigation', $2, 1, 'case.opened', $3::jsonb, 'worker:live-updates', now())`,
      [acme.id, INCIDENT.id, JSON.stringify(payload)],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}

test('Catalog live updates: the console incident list and the portal incident list and detail turn resolved on case.opened, without a reload', async () => {
  const opened: WatchedPage[] = [];
  try {
    const consoleList = await suite.open({ expect: [ME_401] });
    opened.push(consoleList);
    await signIn(consoleList.page, suite.svc.consoleUrl, analyst);
    const consoleStream = streamOpen(consoleList.page, '/incidents');
    await consoleList.page.goto(`${suite.svc.consoleUrl}/incidents?tenant=${acme.id}`);

    const portalList = await suite.open({ expect: [ME_401] });
    opened.push(portalList);
    await signIn(portalList.page, suite.svc.portalUrl(acme.slug), viewer);
    const portalListStream = streamOpen(portalList.page, '/incidents');
    await portalList.page.goto(`${suite.svc.portalUrl(acme.slug)}/incidents`);

    const portalDetail = await suite.open({ expect: [ME_401] });
    opened.push(portalDetail);
    await signIn(portalDetail.page, suite.svc.portalUrl(acme.slug), viewer);
    const portalDetailStream = streamOpen(portalDetail.page, `/incidents/${INCIDENT.id}`);
    await portalDetail.page.goto(`${suite.svc.portalUrl(acme.slug)}/incidents/${INCIDENT.id}`);

    await incidentRow(consoleList.page)
      .filter({ hasText: /awaiting/i })
      .waitFor();
    await incidentRow(portalList.page)
      .filter({ hasText: /awaiting/i })
      .waitFor();
    await statusField(portalDetail.page)
      .filter({ hasText: /awaiting/i })
      .waitFor();
    await Promise.all([consoleStream, portalListStream, portalDetailStream]);
    // A reload would drop this mark.
    for (const w of opened) await w.page.evaluate(() => Object.assign(globalThis, { liveMark: 1 }));

    await caseOpened();

    await incidentRow(consoleList.page)
      .filter({ hasText: /resolved/i })
      .waitFor();
    await incidentRow(portalList.page)
      .filter({ hasText: /resolved/i })
      .waitFor();
    await statusField(portalDetail.page)
      .filter({ hasText: /resolved/i })
      .waitFor();
    for (const w of opened) {
      const mark = await w.page.evaluate(() => (globalThis as { liveMark?: number }).liveMark);
      assert.equal(mark, 1, `${w.page.url()} was refreshed in place, not reloaded`);
    }
    for (const w of opened) w.assertClean();
  } finally {
    await Promise.all(opened.map((w) => w.close()));
  }
});
