import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  chromium,
  type Page,
} from 'playwright-core';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { freePort } from '../../src/db/embedded.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Debian's Chromium (`apt-get install chromium`); playwright-core never downloads a browser. */
export const CHROMIUM = process.env.SVC_TEST_CHROMIUM ?? '/usr/bin/chromium';
/** ../shared/NOTES.md "Browser": what a headless Chromium as root in a container needs. */
const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** The first admin's password once the harness has changed the generated one. */
export const ADMIN_PASSWORD = 'browser suite admin passphrase';
/** Every seeded user's password after its first change. */
export const USER_PASSWORD = 'browser suite user passphrase';

export const DESKTOP = { width: 1280, height: 800 } as const;
export const MOBILE = { width: 390, height: 844 } as const;

export interface SvcProcess {
  port: number;
  /** `http://localhost:<port>`: the MSSP console, as the README tells people to open it. */
  consoleUrl: string;
  /** `http://<slug>.localhost:<port>`: that tenant's portal. */
  portalUrl(slug: string): string;
  adminEmail: string;
  /** The typed SDK signed in as the first admin (password already changed). */
  admin: SvcClient;
  /** svc_mssp on the embedded database (BYPASSRLS), for rows no API can create without a cluster. */
  sql: pg.Pool;
  /** Everything svc printed so far. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * One real `svc serve` on a fresh data directory (embedded PostgreSQL), as `npm start` runs
 * it; the first admin's generated password is read from its stderr and changed at once, so
 * tests sign in as an admin without the forced change unless they ask for it.
 */
export async function startSvc(extraEnv: Record<string, string> = {}): Promise<SvcProcess> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'svc-web-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_DATA_DIR: dataDir,
    SVC_PORT: String(port),
    SVC_LOG_LEVEL: 'warn',
    SVC_ORCHESTRATOR: 'off',
    // Every sign-in of a file comes from 127.0.0.1; the default 100 per 15 minutes would
    // turn the later tests of a file into 429s.
    SVC_LOGIN_RATE_LIMIT_IP: '10000',
    ...extraEnv,
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const append = (d: Buffer) => {
    output += d;
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const stopChild = async () => {
    await stopProcess(child);
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    await healthy(child, port, () => output);
    const generated = /created platform_admin (\S+) with password:\n\n {4}(\S+)\n/.exec(output);
    assert.ok(generated?.[1] && generated[2], `svc printed no first admin:\n${output}`);
    const consoleUrl = `http://localhost:${port}`;
    const admin = await apiSession(consoleUrl, generated[1], generated[2], ADMIN_PASSWORD);
    const sql = new pg.Pool({ ...(await embeddedMssp(dataDir)), max: 2 });
    // pg-pool's end() resolves before its clients have closed: one still closing when svc's
    // embedded PostgreSQL shuts down gets 57P01 and must not crash the file (a clean-clone CI
    // run's test/web/cross-tenant.test.ts did; test/support/database.ts does the same).
    sql.on('error', () => undefined);
    return {
      port,
      consoleUrl,
      portalUrl: (slug) => `http://${slug}.localhost:${port}`,
      adminEmail: generated[1],
      admin,
      sql,
      output: () => output,
      stop: async () => {
        await sql.end();
        await stopChild();
      },
    };
  } catch (error) {
    await stopChild();
    throw error;
  }
}

async function healthy(child: ChildProcess, port: number, output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`svc exited early:\n${output()}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`svc did not become healthy:\n${output()}`);
}

/** SIGTERM, as an operator stops it: svc stops its embedded PostgreSQL before exiting. */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const late = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(late);
}

/**
 * svc_mssp on the embedded database, read from the files `svc db url` reads (embedded.json,
 * credentials.json): running that command costs a second program start (~5 s under tsx).
 */
async function embeddedMssp(dataDir: string): Promise<pg.PoolConfig> {
  const read = async (name: string) => JSON.parse(await readFile(path.join(dataDir, name), 'utf8'));
  const { port } = (await read('embedded.json')) as { port: number };
  const { mssp } = (await read('credentials.json')) as {
    mssp: { user: string; password: string };
  };
  return { host: '127.0.0.1', port, database: 'svc', user: mssp.user, password: mssp.password };
}

/** The typed SDK holding a session, after changing `initial` to `password` when they differ. */
async function apiSession(
  baseUrl: string,
  email: string,
  initial: string,
  password: string,
): Promise<SvcClient> {
  const client = createSvcClient({ baseUrl, headers: { origin: baseUrl } });
  const login = await client.auth.login({ body: { email, password: initial } });
  assert.equal(login.status, 200, `API sign-in as ${email}`);
  if (initial !== password) {
    const changed = await client.auth.changePassword({
      body: { current_password: initial, new_password: password },
    });
    assert.equal(changed.status, 200, `password change of ${email}`);
  }
  return client;
}

export interface TenantSeed {
  slug: string;
  appName: string;
  primaryColor: string;
  secondaryColor: string;
  logoUrl?: string;
  /** Titles of investigations to create, so a page can be searched for this tenant's data. */
  incidents?: string[];
}

export interface SeededTenant {
  id: string;
  slug: string;
}

/**
 * An active tenant with branding and incidents. Written as rows: creating a tenant through the
 * API needs a cluster (503 cluster_unavailable without one), and the portal only reads them.
 */
export async function seedTenant(svc: SvcProcess, seed: TenantSeed): Promise<SeededTenant> {
  const client = await svc.sql.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ id: string }>(
      `INSERT INTO tenants (slug, display_name, state) VALUES ($1, $2, 'active') RETURNING id`,
      [seed.slug, seed.appName],
    );
    const id = rows[0]?.id;
    assert.ok(id);
    await client.query(
      `INSERT INTO branding_configs (tenant_id, app_name, logo_url, primary_color, secondary_color)
       VALUES ($1, $2, $3, $4, $5)`,
      [id, seed.appName, seed.logoUrl ?? null, seed.primaryColor, seed.secondaryColor],
    );
    for (const title of seed.incidents ?? []) {
      await client.query(
        `INSERT INTO investigations (tenant_id, title, severity) VALUES ($1, $2, 'high')`,
        [id, title],
      );
    }
    await client.query('COMMIT');
    return { id, slug: seed.slug };
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}

export type SeedRole = 'platform_admin' | 'mssp_admin' | 'analyst' | 'customer_viewer';

export interface SeededUser {
  id: string;
  email: string;
  role: SeedRole;
  /** The password that signs in now: USER_PASSWORD, or the initial one when mustChange. */
  password: string;
}

/**
 * A user created through the API by the first admin, as an operator would. Unless
 * `mustChange`, the initial password is changed to USER_PASSWORD through the API too.
 */
export async function seedUser(
  svc: SvcProcess,
  options: { role: SeedRole; tenant?: SeededTenant; mustChange?: boolean; email?: string },
): Promise<SeededUser> {
  const email =
    options.email ?? `${options.role.replaceAll('_', '-')}-${randomUUID().slice(0, 8)}@web.test`;
  const res =
    options.role === 'customer_viewer'
      ? await svc.admin.mssp.createTenantUser({
          params: { tenant_id: requiredTenant(options.tenant).id },
          body: { email },
        })
      : await svc.admin.mssp.createUser({ body: { email, role: options.role } });
  assert.equal(res.status, 201, `create ${options.role} ${email}: ${JSON.stringify(res.body)}`);
  if (res.status !== 201) throw new Error('unreachable');
  const initial = res.body.initial_password;
  assert.ok(initial, 'internal mode returns an initial password');
  const password = options.mustChange ? initial : USER_PASSWORD;
  // Node does not resolve `*.localhost`, so the API side of seeding goes through the console host.
  if (!options.mustChange) await apiSession(svc.consoleUrl, email, initial, password);
  return { id: res.body.user.id, email, role: options.role, password };
}

function requiredTenant(tenant: SeededTenant | undefined): SeededTenant {
  assert.ok(tenant, 'a customer user needs a tenant');
  return tenant;
}

/** A fresh session of `user`, as the cookie value sign-in sets. */
async function sessionCookie(svc: SvcProcess, user: SeededUser): Promise<string> {
  const res = await fetch(`${svc.consoleUrl}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: svc.consoleUrl },
    body: JSON.stringify({ email: user.email, password: user.password }),
  });
  assert.equal(res.status, 200, `API sign-in of ${user.email}`);
  const value = /(?:^|;\s*)svc_session=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1];
  assert.ok(value, 'sign-in sets svc_session');
  return value;
}

/** One browser for a test file: contexts are cheap, launches are not. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
}

export interface WebSuite {
  readonly svc: SvcProcess;
  readonly browser: Browser;
  /** A fresh context (its own cookies) and a watched page in it. */
  open(options?: OpenOptions): Promise<WatchedPage>;
}

export interface OpenOptions {
  viewport?: { width: number; height: number };
  /** Answers the page is expected to receive (see `Expected`). */
  expect?: Expected[];
  /**
   * Starts signed in: a session from the API, its cookie set for `at`. For tests about what a
   * signed-in page shows, not about signing in (which costs a page load and a hash per test).
   */
  session?: { user: SeededUser; at: string };
}

/**
 * The per-file fixture: one svc and one browser for all of a file's tests, closed after them.
 * Contexts opened through `open` are closed with the browser. `seed` runs in the same hook once
 * svc answers (a file's own `before` is not ordered after this one).
 */
export function webSuite(
  seed?: (svc: SvcProcess) => Promise<void>,
  /** More settings for svc (e.g. KUBECONFIG of the test cluster), made before it starts. */
  env?: () => Promise<Record<string, string>>,
): WebSuite {
  let svc: SvcProcess | undefined;
  let browser: Browser | undefined;
  before(async () => {
    const extraEnv = (await env?.()) ?? {};
    [svc, browser] = await Promise.all([startSvc(extraEnv), launchBrowser()]);
    await seed?.(svc);
  });
  after(async () => {
    await Promise.all([browser?.close(), svc?.stop()]);
  });
  const suite: WebSuite = {
    get svc() {
      assert.ok(svc, 'svc starts in before()');
      return svc;
    },
    get browser() {
      assert.ok(browser, 'the browser starts in before()');
      return browser;
    },
    async open(options = {}) {
      const context = await suite.browser.newContext(contextOptions(options.viewport));
      // A page answers within a second or two here; 30 s defaults only slow a failure down.
      context.setDefaultTimeout(10_000);
      if (options.session) {
        const value = await sessionCookie(suite.svc, options.session.user);
        await context.addCookies([
          { name: 'svc_session', value, url: options.session.at, httpOnly: true, secure: true },
        ]);
      }
      return watch(context, await context.newPage(), options.expect ?? []);
    },
  };
  return suite;
}

export function contextOptions(viewport: { width: number; height: number } = DESKTOP) {
  return {
    viewport,
    // Fixed so texts with times (the unlock time) read the same on every machine.
    locale: 'en-US',
    timezoneId: 'UTC',
    // axe is injected as a script; a Content-Security-Policy of the app must not refuse it.
    bypassCSP: true,
  } satisfies BrowserContextOptions;
}

/**
 * An answer the protocol gives on purpose (a 401 to a wrong password, an aborted request in a
 * network-failure test): not a fault of the page. Anything else is.
 */
export interface Expected {
  path: string | RegExp;
  /** An HTTP status, or 'failed' for a request that never got an answer. */
  status: number | 'failed';
}

export interface WatchedPage {
  page: Page;
  context: BrowserContext;
  /** Console errors, uncaught exceptions, failed requests and error answers not expected. */
  problems(): string[];
  /** Fails the test when `problems()` is not empty. */
  assertClean(label?: string): void;
  close(): Promise<void>;
}

function matches(expected: Expected[], url: string, status: number | 'failed'): boolean {
  const { pathname } = new URL(url);
  return expected.some(
    (e) =>
      e.status === status &&
      (typeof e.path === 'string' ? e.path === pathname : e.path.test(pathname)),
  );
}

/**
 * The page-walk collector. Chromium logs every answer >= 400 as a console error ("Failed to
 * load resource"); those are judged by their answer (expected or not) rather than twice.
 */
export function watch(context: BrowserContext, page: Page, expected: Expected[]): WatchedPage {
  const problems: string[] = [];
  const answered = new Set<string>();
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const url = message.location().url;
    if (message.text().startsWith('Failed to load resource') && answered.has(url)) return;
    problems.push(`console error: ${message.text()} (${url})`);
  });
  page.on('response', (response) => {
    const status = response.status();
    if (status < 400) return;
    answered.add(response.url());
    if (!matches(expected, response.url(), status)) {
      problems.push(`${status} ${response.request().method()} ${response.url()}`);
    }
  });
  page.on('requestfailed', (request) => {
    const reason = request.failure()?.errorText ?? 'failed';
    // Leaving a page or unmounting a query cancels what is in flight (event streams above all).
    if (reason === 'net::ERR_ABORTED' && !request.isNavigationRequest()) return;
    answered.add(request.url());
    if (!matches(expected, request.url(), 'failed')) {
      problems.push(`request failed (${reason}): ${request.method()} ${request.url()}`);
    }
  });
  return {
    page,
    context,
    problems: () => [...problems],
    assertClean(label = page.url()) {
      assert.deepEqual(problems, [], `page walk of ${label}`);
    },
    close: () => context.close(),
  };
}

const require = createRequire(import.meta.url);
const AXE_SCRIPT = require.resolve('axe-core/axe.min.js');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/** axe-core's scan of the page as it is now: violations of impact serious or critical. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.addScriptTag({ path: AXE_SCRIPT });
  const violations = await page.evaluate(async () => {
    interface AxeResult {
      violations: {
        id: string;
        impact: string | null;
        help: string;
        nodes: { target: unknown[] }[];
      }[];
    }
    const axe = (globalThis as unknown as { axe: { run(): Promise<AxeResult> } }).axe;
    const result = await axe.run();
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => n.target.join(' ')),
    }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** Fails with axe's own words when the page has a serious or critical violation. */
export async function axe(page: Page, label = page.url()): Promise<void> {
  assert.deepEqual(await seriousViolations(page), [], `axe on ${label}`);
}

/** Where the suite's screenshots go: SVC_SCREENSHOT_DIR (CI collects it) or a temp dir. */
export async function screenshotDir(): Promise<string> {
  const dir = process.env.SVC_SCREENSHOT_DIR ?? path.join(tmpdir(), 'svc-screenshots');
  await mkdir(dir, { recursive: true });
  return dir;
}

/** A full-page PNG named `<name>.png` in `dir`; returns its path. */
export async function screenshot(page: Page, dir: string, name: string): Promise<string> {
  const file = path.join(dir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** The login form's fields and button as W1 labels them (texts checked in login.test.ts). */
export function loginForm(page: Page) {
  return {
    email: page.getByLabel('Email', { exact: true }),
    password: page.getByLabel('Password', { exact: true }),
    submit: page.getByRole('button', { name: 'Sign in.' }),
  };
}

/** Signs in through the UI at `base` and waits until the SPA has left /login. */
export async function signIn(
  page: Page,
  base: string,
  user: { email: string; password: string },
  route = '/login',
): Promise<void> {
  await page.goto(`${base}${route}`);
  const form = loginForm(page);
  await form.email.fill(user.email);
  await form.password.fill(user.password);
  await form.submit.click();
  await page.waitForURL((url) => url.pathname !== '/login');
}

/** The header navigation's pages, as paths, in order. */
export async function navPaths(page: Page): Promise<string[]> {
  // Attached, not visible: a narrow screen may fold the navigation behind a button.
  const nav = page.locator('nav[aria-label="Main"]');
  await nav.waitFor({ state: 'attached' });
  const hrefs = await nav
    .locator('a')
    .evaluateAll((links) => links.map((a) => (a as unknown as { href: string }).href));
  return hrefs.map((href) => new URL(href).pathname);
}

/**
 * The page walk of a signed-in app: every page the navigation offers and the first detail page
 * each one links to (a path under its own), each scanned by axe once it has settled. Returns
 * the paths visited; the caller asserts the walk was clean.
 */
export async function walkPages(page: Page, base: string): Promise<string[]> {
  const visited: string[] = [];
  const visit = async (target: string) => {
    await page.goto(`${base}${target}`);
    await settled(page);
    await axe(page, target);
    visited.push(target);
  };
  for (const top of await navPaths(page)) {
    await visit(top);
    const prefix = top === '/' ? undefined : `${top}/`;
    const detail = prefix
      ? await page
          .getByRole('main')
          .locator(`a[href^="${prefix}"]`)
          .first()
          .getAttribute('href', { timeout: 1_000 })
          .catch(() => null)
      : null;
    if (detail) await visit(detail);
  }
  return visited;
}

/**
 * A page has settled when its heading is there and nothing says `Loading…` any more
 * (web/shared/states.tsx): its queries answered. Not `networkidle`: an event stream never idles.
 */
export async function settled(page: Page): Promise<void> {
  await page.getByRole('heading', { level: 1 }).first().waitFor();
  await page.getByText('Loading…', { exact: true }).first().waitFor({ state: 'detached' });
}
