import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import {
  axe,
  type Expected,
  type SeededTenant,
  type SeededUser,
  seedTenant,
  seedUser,
  settled,
  webSuite,
} from './support.ts';

/**
 * Issue 14 "Branding" (mssp_admin edits a tenant's branding) and issue 15 (validated colours,
 * no script-bearing SVG), in a real browser against a real svc: the tenant page's Branding
 * section with its live preview, and the portal at the tenant's host showing the result.
 */
let acme: SeededTenant;
let globex: SeededTenant;
let msspAdmin: SeededUser;
let analyst: SeededUser;

const suite = webSuite(async (svc) => {
  acme = await seedTenant(svc, {
    slug: 'acme',
    appName: 'Acme Shield',
    primaryColor: '#0b5394',
    secondaryColor: '#f1c232',
  });
  globex = await seedTenant(svc, {
    slug: 'globex',
    appName: 'Globex Watch',
    primaryColor: '#38761d',
    secondaryColor: '#cccccc',
  });
  msspAdmin = await seedUser(svc, { role: 'mssp_admin' });
  analyst = await seedUser(svc, { role: 'analyst' });
});

const ME_401: Expected = { path: '/api/auth/me', status: 401 };
const LOGO_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><circle cx="5" cy="5" r="4" fill="#7a0019"/></svg>';

async function tenantPage(user: SeededUser, tenant: SeededTenant, expect: Expected[] = []) {
  const w = await suite.open({ session: { user, at: suite.svc.consoleUrl }, expect });
  await w.page.goto(`${suite.svc.consoleUrl}/tenants/${tenant.id}`);
  await w.page.getByRole('heading', { level: 2, name: 'Branding' }).waitFor();
  await settled(w.page);
  return w;
}

function preview(page: Page): Locator {
  return page.getByRole('figure', { name: 'Preview of the portal' });
}

/** A computed style of the first element `locator` finds. */
function computed(locator: Locator, property: 'borderBottomColor' | 'backgroundColor') {
  return locator.evaluate(
    (el, p) =>
      (
        globalThis as unknown as { getComputedStyle(e: unknown): Record<string, string> }
      ).getComputedStyle(el)[p],
    property,
  );
}

/** The CSS custom property the branding sets on the document (web/shared/branding.ts). */
function brandVariable(page: Page, name: string): Promise<string> {
  return page.evaluate(
    (n) =>
      (
        globalThis as unknown as {
          document: { documentElement: { style: { getPropertyValue(p: string): string } } };
        }
      ).document.documentElement.style.getPropertyValue(n),
    name,
  );
}

test("issue 14 Branding: an mssp_admin edits app name, colour and logo with a live preview; the portal at the tenant's host shows them", async () => {
  const w = await tenantPage(msspAdmin, acme);
  const { page } = w;
  try {
    await page.getByLabel('App name').fill('Acme Fortress');
    await page.getByLabel('Primary colour').fill('#7a0019');
    await page.getByLabel('Upload logo').setInputFiles({
      name: 'logo.svg',
      mimeType: 'image/svg+xml',
      buffer: Buffer.from(LOGO_SVG),
    });
    // The preview follows the draft before anything is saved.
    const header = preview(page).locator('.branding-preview-header');
    await header.getByText('Acme Fortress', { exact: true }).waitFor();
    assert.equal(await computed(header, 'borderBottomColor'), 'rgb(122, 0, 25)');
    assert.equal(
      await computed(preview(page).getByText('Primary action'), 'backgroundColor'),
      'rgb(122, 0, 25)',
    );
    const logo = `data:image/svg+xml;base64,${Buffer.from(LOGO_SVG).toString('base64')}`;
    assert.equal(await preview(page).locator('img').getAttribute('src'), logo);
    await page.getByText('Logo: uploaded svg image').waitFor();
    await axe(page, 'tenant page, branding form');

    const answered = page.waitForResponse(
      (r) => r.url().endsWith(`/tenants/${acme.id}/branding`) && r.request().method() === 'PUT',
    );
    await page.getByRole('button', { name: 'Save branding' }).click();
    assert.equal((await answered).status(), 200);
    await page.getByRole('status').filter({ hasText: 'Branding saved.' }).waitFor();
    w.assertClean();

    const portal = await suite.open({ expect: [ME_401] });
    try {
      await portal.page.goto(`${suite.svc.portalUrl(acme.slug)}/`);
      await portal.page.waitForURL((url) => url.pathname === '/login');
      await portal.page.getByText('Acme Fortress', { exact: true }).first().waitFor();
      assert.equal(await brandVariable(portal.page, '--brand-primary'), '#7a0019');
      assert.equal(await brandVariable(portal.page, '--brand-secondary'), '#f1c232');
      assert.equal(await portal.page.locator('img.brand-logo').getAttribute('src'), logo);
      assert.doesNotMatch(await portal.page.title(), /Acme Shield/);
      await axe(portal.page, 'portal /login after the edit');
      portal.assertClean();
    } finally {
      await portal.close();
    }
  } finally {
    await w.close();
  }
});

test('issue 15 Branding: a script-bearing SVG and a bad colour are refused next to their fields; nothing changes', async () => {
  const branding = `/api/mssp/tenants/${globex.id}/branding`;
  const w = await tenantPage(msspAdmin, globex, [
    { path: branding, status: 422 },
    { path: branding, status: 400 },
  ]);
  const { page } = w;
  try {
    await page.getByLabel('Upload logo').setInputFiles({
      name: 'evil.svg',
      mimeType: 'image/svg+xml',
      buffer: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'),
    });
    await page.getByRole('button', { name: 'Save branding' }).click();
    await page.getByText('An SVG may not carry event handler attributes').waitFor();
    assert.equal(await page.getByLabel('Upload logo').getAttribute('aria-invalid'), 'true');
    await page.getByRole('alert').filter({ hasText: 'Correct the marked fields.' }).waitFor();

    await page.getByRole('button', { name: 'Remove logo' }).click();
    await page.getByLabel('Secondary colour').fill('grey');
    await page.getByRole('button', { name: 'Save branding' }).click();
    const colour = page.getByLabel('Secondary colour');
    await page.locator('#branding-secondary[aria-invalid="true"]').waitFor();
    assert.equal(await colour.inputValue(), 'grey', 'the form keeps what was typed');
    await axe(page, 'tenant page, branding refused');
    w.assertClean();
  } finally {
    await w.close();
  }
  const stored = await suite.svc.admin.mssp.getBranding({ params: { tenant_id: globex.id } });
  assert.equal(stored.status, 200);
  if (stored.status !== 200) return;
  assert.deepEqual(
    [stored.body.app_name, stored.body.logo_url, stored.body.secondary_color],
    ['Globex Watch', null, '#cccccc'],
  );
});

test('issue 14 Branding: an analyst sees the branding and its preview, but no form', async () => {
  const w = await tenantPage(analyst, globex);
  const { page } = w;
  try {
    const section = page.getByRole('region', { name: 'Branding' });
    await section.getByText('Globex Watch', { exact: true }).first().waitFor();
    await preview(page).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Save branding' }).count(), 0);
    assert.equal(await page.getByLabel('App name').count(), 0);
    assert.equal(await page.getByLabel('Upload logo').count(), 0);
    await axe(page, 'tenant page as analyst');
    w.assertClean();
  } finally {
    await w.close();
  }
});
