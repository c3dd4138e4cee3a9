import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { seedIncident } from '../test/web/desk-seed.ts';
import {
  contextOptions,
  DESKTOP,
  launchBrowser,
  MOBILE,
  navPaths,
  type SvcProcess,
  screenshot,
  seedTenant,
  seedUser,
  settled,
  signIn,
  startSvc,
} from '../test/web/support.ts';

/**
 * `npm run screenshots [dir]`: the main pages of the MSSP console and of a customer portal at
 * desktop (1280 px) and mobile (390 px) width, into docs/screenshots/ unless a directory is
 * given. A real svc on a fresh embedded database with one branded tenant; the page list is the
 * header navigation each app offers, so a new page is photographed without editing this file,
 * and the detail pages named here (an incident's, in both apps).
 */
const DEFAULT_DIR = fileURLToPath(new URL('../docs/screenshots/', import.meta.url));

const WIDTHS = { desktop: DESKTOP, mobile: MOBILE } as const;

export interface ScreenshotRun {
  svc: SvcProcess;
  browser: Browser;
  dir: string;
}

/** Photographs both apps; returns the files written. */
export async function takeScreenshots({ svc, browser, dir }: ScreenshotRun): Promise<string[]> {
  const tenant = await seedTenant(svc, {
    slug: 'northwind',
    appName: 'Northwind Security',
    primaryColor: '#0b5394',
    secondaryColor: '#e69138',
    incidents: ['Brute force against the VPN gateway', 'Malware beacon from a finance laptop'],
  });
  const staff = await seedUser(svc, { role: 'platform_admin' });
  const customer = await seedUser(svc, { role: 'customer_viewer', tenant });
  // An incident with alerts, triage and notes for the detail page of each app.
  const incident = await seedIncident(svc, tenant.id, {
    title: 'SSH brute force against bastion-01',
    rationale: 'Forty failed logins from one address in two minutes, then silence.',
    log: 'sshd[4242]: Failed password for invalid user admin from 203.0.113.9',
  });
  await annotate(svc, tenant.id, incident);
  const apps = [
    {
      name: 'mssp',
      base: svc.consoleUrl,
      user: staff,
      details: { 'incident-detail': `/tenants/${tenant.id}/incidents/${incident}` },
    },
    {
      name: 'portal',
      base: svc.portalUrl(tenant.slug),
      user: customer,
      details: { 'incident-detail': `/incidents/${incident}` },
    },
  ];
  const files: string[] = [];
  for (const app of apps) {
    for (const [width, viewport] of Object.entries(WIDTHS)) {
      const context = await browser.newContext(contextOptions(viewport));
      const page = await context.newPage();
      try {
        await page.goto(`${app.base}/login`);
        await page.getByRole('button', { name: 'Sign in.' }).waitFor();
        files.push(await screenshot(page, dir, `${app.name}-login-${width}`));
        await signIn(page, app.base, app.user);
        for (const target of await navPaths(page)) {
          await page.goto(`${app.base}${target}`);
          await settled(page);
          files.push(await screenshot(page, dir, `${app.name}-${slugOf(target)}-${width}`));
        }
        for (const [name, target] of Object.entries(app.details)) {
          await page.goto(`${app.base}${target}`);
          await settled(page);
          files.push(await screenshot(page, dir, `${app.name}-${name}-${width}`));
        }
      } finally {
        await context.close();
      }
    }
  }
  return files;
}

/** The first admin takes the incident and writes an internal and a shared note. */
async function annotate(svc: SvcProcess, tenantId: string, id: string): Promise<void> {
  const params = { tenant_id: tenantId, id };
  const me = await svc.admin.auth.me();
  if (me.status !== 200) throw new Error(`GET /api/auth/me: ${me.status}`);
  const assignee_id = me.body.identity.user_id;
  const edits = [
    (version: number) => svc.admin.mssp.assignIncident({ params, body: { assignee_id, version } }),
    (version: number) =>
      svc.admin.mssp.addIncidentNote({
        params,
        body: {
          body: 'Source is **not** on the pentest list. Paging the customer.',
          visibility: 'internal',
          version,
        },
      }),
    (version: number) =>
      svc.admin.mssp.addIncidentNote({
        params,
        body: {
          body: 'We blocked `203.0.113.9` at the edge firewall.\n\n- no successful login\n- keys rotated',
          visibility: 'shared',
          version,
        },
      }),
  ];
  const detail = await svc.admin.mssp.incident({ params });
  if (detail.status !== 200) throw new Error(`incident detail: ${detail.status}`);
  let version = detail.body.incident.version;
  for (const edit of edits) {
    const res = await edit(version);
    if (res.status !== 200)
      throw new Error(`incident edit: ${res.status} ${JSON.stringify(res.body)}`);
    version = res.body.incident.version;
  }
}

/** A file-name part for a path: `/` is the landing page, `/tenants` → `tenants`. */
function slugOf(pathname: string): string {
  return pathname.replace(/^\/|\/$/g, '').replace(/[^a-z0-9]+/gi, '-') || 'landing';
}

async function main(): Promise<void> {
  const dir = path.resolve(process.argv[2] ?? DEFAULT_DIR);
  const [svc, browser] = await Promise.all([startSvc(), launchBrowser()]);
  try {
    const files = await takeScreenshots({ svc, browser, dir });
    process.stdout.write(`${files.join('\n')}\n`);
  } finally {
    await Promise.all([browser.close(), svc.stop()]);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
}
