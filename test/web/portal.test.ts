import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { WRONG_APP_MSSP, WRONG_APP_TENANT } from '../../web/shared/texts.ts';
import {
  axe,
  loginForm,
  type SeededTenant,
  type SeededUser,
  seedTenant,
  seedUser,
  signIn,
  walkPages,
  webSuite,
} from './support.ts';

/**
 * Issue 14 "Branding" and the portal half of "Tests": `http://<slug>.localhost:<port>/` is
 * that tenant's portal, branded before sign-in, and shows a customer only their own tenant.
 */
// A 1x1 PNG: a logo svc stores as a data URL (tenant-config.ts allows png, svg, jpeg).
const LOGO =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const ACME = {
  slug: 'acme',
  appName: 'Acme Shield',
  primaryColor: '#0b5394',
  secondaryColor: '#e69138',
  logoUrl: LOGO,
  incidents: ['Acme-only: ransomware note on FS01'],
};
const GLOBEX = {
  slug: 'globex',
  appName: 'Globex Guard',
  primaryColor: '#38761d',
  secondaryColor: '#cc0000',
  incidents: ['Globex-only: exfiltration over DNS'],
};

let acme: SeededTenant;
let globex: SeededTenant;
let acmeViewer: SeededUser;
let globexViewer: SeededUser;
const suite = webSuite(async (svc) => {
  acme = await seedTenant(svc, ACME);
  globex = await seedTenant(svc, GLOBEX);
  acmeViewer = await seedUser(svc, { role: 'customer_viewer', tenant: acme });
  globexViewer = await seedUser(svc, { role: 'customer_viewer', tenant: globex });
});

const ME_401 = { path: '/api/auth/me', status: 401 } as const;

/** Every text the page ever rendered, collected from its first paint on. */
async function recordTexts(page: Page): Promise<() => Promise<string>> {
  await page.addInitScript(() => {
    const g = globalThis as unknown as {
      __seen: string[];
      location: { pathname: string };
      document: { body: { textContent: string } | null };
      MutationObserver: new (cb: () => void) => { observe(n: unknown, o: unknown): void };
    };
    g.__seen = [];
    // The sign-in page is the host's to brand: only what the page draws once it is left counts
    // (its tab title changes with the next page's own, asserted separately).
    new g.MutationObserver(() => {
      if (g.location.pathname !== '/login') g.__seen.push(g.document.body?.textContent ?? '');
    }).observe(g.document, { childList: true, subtree: true, characterData: true });
  });
  return async () =>
    (await page.evaluate(() => (globalThis as unknown as { __seen: string[] }).__seen)).join('\n');
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

test("issue 14 §5.9.1: the portal at <slug>.localhost shows that tenant's app name, logo and colours before sign-in", async () => {
  const w = await suite.open({ expect: [ME_401] });
  try {
    const texts = await recordTexts(w.page);
    await w.page.goto(`${suite.svc.portalUrl(acme.slug)}/`);
    await w.page.waitForURL((url) => url.pathname === '/login');
    await w.page.getByText(ACME.appName, { exact: true }).first().waitFor();
    assert.equal(await w.page.locator('img.brand-logo').getAttribute('src'), LOGO);
    assert.equal(await brandVariable(w.page, '--brand-primary'), ACME.primaryColor);
    assert.equal(await brandVariable(w.page, '--brand-secondary'), ACME.secondaryColor);
    const button = w.page.getByRole('button', { name: 'Sign in.' });
    assert.equal(
      await button.evaluate(
        (el) =>
          (
            globalThis as unknown as {
              getComputedStyle(e: unknown): { backgroundColor: string };
            }
          ).getComputedStyle(el).backgroundColor,
      ),
      'rgb(11, 83, 148)',
      'the primary action wears the primary colour',
    );
    assert.doesNotMatch(await texts(), /Globex/, "never another tenant's name");
    await axe(w.page, 'portal /login (branded)');
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('issue 14: an unknown slug reads like the install, revealing nothing about tenants', async () => {
  const install = (await (await fetch(`${suite.svc.consoleUrl}/api/public/branding`)).json()) as {
    app_name: string;
  };
  const w = await suite.open({ expect: [ME_401] });
  try {
    await w.page.goto(`${suite.svc.portalUrl('no-such-tenant')}/login`);
    await w.page.getByText(install.app_name, { exact: true }).first().waitFor();
    assert.equal(await w.page.locator('img.brand-logo').count(), 0);
    w.assertClean();
  } finally {
    await w.close();
  }
});

test("issue 14: a customer signed in at their portal sees their tenant's data and branding, never another's", async () => {
  const w = await suite.open({ expect: [ME_401] });
  try {
    const texts = await recordTexts(w.page);
    await signIn(w.page, suite.svc.portalUrl(acme.slug), acmeViewer);
    await w.page.getByText(ACME.appName, { exact: true }).first().waitFor();
    const visited = await walkPages(w.page, suite.svc.portalUrl(acme.slug));
    assert.ok(visited.length >= 1, `pages walked: ${visited.join(', ')}`);
    const seen = await texts();
    assert.doesNotMatch(seen, /Globex/, 'nothing of the other tenant on any page');
    w.assertClean();
  } finally {
    await w.close();
  }
});

/**
 * The session decides whose data a page shows, never the host: the tenant API has no way to
 * name another tenant. So A's customer signing in at B's host sees A's own data under A's own
 * branding (web/shared/branding.ts), and nothing of B's beyond B's sign-in page.
 */
test("issue 14: A's customer signing in at B's host is never shown B's data", async () => {
  const w = await suite.open({ expect: [ME_401] });
  try {
    const tenantAnswers: unknown[] = [];
    w.page.on('response', async (r) => {
      if (new URL(r.url()).pathname.startsWith('/api/tenant/') && r.ok()) {
        const type = r.headers()['content-type'] ?? '';
        if (type.includes('json')) tenantAnswers.push(await r.json());
      }
    });
    const texts = await recordTexts(w.page);
    await w.page.goto(`${suite.svc.portalUrl(globex.slug)}/login`);
    await w.page.getByText(GLOBEX.appName, { exact: true }).first().waitFor();
    const form = loginForm(w.page);
    await form.email.fill(acmeViewer.email);
    await form.password.fill(acmeViewer.password);
    // B's sign-in page is B's to show; from the click on, nothing of B may appear.
    await w.page.evaluate(() => {
      (globalThis as unknown as { __seen: string[] }).__seen = [];
    });
    await form.submit.click();
    await w.page.waitForURL((url) => url.pathname !== '/login');
    await w.page.getByRole('heading', { level: 1 }).first().waitFor();
    await w.page.waitForLoadState('networkidle');
    const after = await texts();
    assert.doesNotMatch(after, /Globex/, "B's name and data never shown once signed in");
    // The title is set by the signed-in page once it has rendered, which can come after the
    // first heading and the network going quiet: it may still read the sign-in page's title.
    await w.page.waitForFunction(() =>
      (globalThis as unknown as { document: { title: string } }).document.title.includes(
        'Acme Shield',
      ),
    );
    assert.doesNotMatch(await w.page.title(), /Globex/);
    assert.doesNotMatch(JSON.stringify(tenantAnswers), new RegExp(globex.id));
    assert.doesNotMatch(JSON.stringify(tenantAnswers), /Globex/);
    await w.page.getByText(ACME.appName, { exact: true }).first().waitFor();
    w.assertClean();
  } finally {
    await w.close();
  }
  // And the other way round, B's own customer at B's host sees B (the check can fail).
  const b = await suite.open({ expect: [ME_401] });
  try {
    await signIn(b.page, suite.svc.portalUrl(globex.slug), globexViewer);
    await b.page.getByText(GLOBEX.appName, { exact: true }).first().waitFor();
    b.assertClean();
  } finally {
    await b.close();
  }
});

test('issue 14: MSSP staff signing in at a portal are sent to the MSSP console, shown nothing of the tenant', async () => {
  const staff = await seedUser(suite.svc, { role: 'platform_admin' });
  const w = await suite.open({ expect: [ME_401] });
  try {
    await signIn(w.page, suite.svc.portalUrl(acme.slug), staff);
    await w.page.getByText(WRONG_APP_MSSP, { exact: true }).waitFor();
    assert.equal(await w.page.locator('nav[aria-label="Main"]').count(), 0, 'no portal pages');
    await axe(w.page, 'portal, wrong app');
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('issue 14: a customer signing in at the MSSP console is shown no console page', async () => {
  const w = await suite.open({ expect: [ME_401] });
  try {
    await signIn(w.page, suite.svc.consoleUrl, acmeViewer);
    await w.page.getByText(WRONG_APP_TENANT, { exact: true }).waitFor();
    assert.equal(await w.page.locator('nav[aria-label="Main"]').count(), 0, 'no console pages');
    assert.doesNotMatch(await w.page.content(), /Globex|Acme-only/, 'no tenant data either');
    await axe(w.page, 'console, wrong app');
    w.assertClean();
  } finally {
    await w.close();
  }
});
