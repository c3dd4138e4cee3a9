import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { createHostPolicy } from '../../src/http/hosts.ts';
import { createApp } from '../../src/http/server/app.ts';
import { createLogger } from '../../src/log/index.ts';

// Issue 14: svc serves the built consoles from the same origin as the API; the host decides
// the app. A stand-in build (two index pages, one asset) keeps these tests off `vite build`.

const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});\n`;
let dist: string;
let empty: string;

before(async () => {
  dist = await mkdtemp(path.join(tmpdir(), 'svc-web-'));
  empty = await mkdtemp(path.join(tmpdir(), 'svc-web-empty-'));
  for (const app of ['mssp', 'portal']) {
    await mkdir(path.join(dist, app));
    await writeFile(path.join(dist, app, 'index.html'), `<!doctype html><title>${app}</title>`);
  }
  await mkdir(path.join(dist, 'assets'));
  await writeFile(path.join(dist, 'assets', 'App-Ab12_cd.js'), SCRIPT);
  await writeFile(path.join(dist, 'assets', '.hidden.js'), SCRIPT);
  await writeFile(path.join(dist, 'secret.js'), SCRIPT);
});
after(async () => {
  await rm(dist, { recursive: true, force: true });
  await rm(empty, { recursive: true, force: true });
});

function app(
  root = dist,
  hosts = { customerHostname: '*.customers.example.test', localSubdomains: true },
) {
  return createApp({
    authMode: 'internal',
    trustedProxyCidrs: [],
    logger: createLogger('silent'),
    databaseReady: async () => true,
    web: { root, hosts: createHostPolicy(hosts) },
  });
}

async function get(target: string, headers: Record<string, string> = {}) {
  const res = await app().request(target, { headers: { host: 'localhost:8080', ...headers } });
  return { res, text: await res.text() };
}

test('issue 14 the host decides the app: customer hosts get the portal, any other the console', async () => {
  const cases: [string, string][] = [
    ['localhost:8080', 'mssp'],
    ['127.0.0.1:8080', 'mssp'],
    ['mssp.example.test', 'mssp'],
    ['acme.localhost:8080', 'portal'],
    ['acme.customers.example.test', 'portal'],
    ['ACME.Customers.Example.Test:443', 'portal'],
    // One label only, as the CSRF origin policy reads the wildcard.
    ['a.b.customers.example.test', 'mssp'],
    ['a.b.localhost:8080', 'mssp'],
    ['customers.example.test', 'mssp'],
  ];
  for (const [host, expected] of cases) {
    const { res, text } = await get('/', { host });
    assert.equal(res.status, 200, host);
    assert.equal(text, `<!doctype html><title>${expected}</title>`, host);
  }
});

test('issue 14 `<slug>.localhost` is a portal only on the local default', async () => {
  const configured = app(dist, {
    customerHostname: '*.customers.example.test',
    localSubdomains: false,
  });
  const res = await configured.request('/', { headers: { host: 'acme.localhost:8080' } });
  assert.equal(await res.text(), '<!doctype html><title>mssp</title>');
});

test('issue 14 history fallback: every client-side route loads its app', async () => {
  for (const target of ['/login', '/account/password', '/tenants/42?tab=users', '/a/b/c']) {
    const { res, text } = await get(target);
    assert.equal(res.status, 200, target);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(text, '<!doctype html><title>mssp</title>', target);
  }
});

test('issue 14 security headers on pages and assets; index revalidated, assets immutable', async () => {
  const page = await get('/login');
  const asset = await get('/assets/App-Ab12_cd.js');
  for (const { res } of [page, asset]) {
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /img-src 'self' data: https:/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('referrer-policy'), 'same-origin');
  }
  assert.equal(page.res.headers.get('cache-control'), 'no-cache');
  assert.equal(asset.res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  assert.equal(asset.res.headers.get('content-type'), 'text/javascript; charset=utf-8');
  assert.equal(asset.text, SCRIPT);
});

test('issue 14 assets are sent gzipped to a client that accepts it', async () => {
  const res = await app().request('/assets/App-Ab12_cd.js', {
    headers: { 'accept-encoding': 'br, gzip;q=0.8' },
  });
  assert.equal(res.headers.get('content-encoding'), 'gzip');
  assert.equal(res.headers.get('vary'), 'Accept-Encoding');
  const packed = Buffer.from(await res.arrayBuffer());
  assert.ok(packed.length < SCRIPT.length / 10, `${packed.length} bytes`);
  assert.equal(gunzipSync(packed).toString('utf8'), SCRIPT);
  const refused = await app().request('/assets/App-Ab12_cd.js', {
    headers: { 'accept-encoding': 'gzip;q=0' },
  });
  assert.equal(refused.headers.get('content-encoding'), null);
});

test('issue 14 only built assets are served: no dot files, no escaping the folder, no fallback', async () => {
  for (const target of [
    '/assets/missing-123.js',
    '/assets/.hidden.js',
    '/assets/..%2fsecret.js',
    '/assets/%2e%2e%2fsecret.js',
    '/assets/App-Ab12_cd.exe',
  ]) {
    const { res, text } = await get(target);
    assert.equal(res.status, 404, target);
    assert.doesNotMatch(text, /console\.log|<title>/, target);
  }
});

test('issue 14 without a build the pages answer 503 saying what to run', async () => {
  const res = await app(empty).request('/', { headers: { host: 'localhost:8080' } });
  assert.equal(res.status, 503);
  assert.equal(await res.text(), 'The web consoles are not built: run `npm run build:web`.\n');
  const portal = await app(empty).request('/x', { headers: { host: 'acme.localhost:8080' } });
  assert.equal(portal.status, 503);
});

test('issue 14 /api and /healthz are untouched by the consoles', async () => {
  const missing = await get('/api/nothing-here');
  assert.equal(missing.res.status, 404);
  assert.equal(missing.res.headers.get('content-type'), 'application/problem+json');
  assert.equal((JSON.parse(missing.text) as { code: string }).code, 'not_found');
  const bare = await get('/api');
  assert.equal(bare.res.headers.get('content-type'), 'application/problem+json');
  const health = await get('/healthz');
  assert.equal((JSON.parse(health.text) as { status: string }).status, 'ok');
  const openapi = await get('/api/openapi.json');
  assert.match(openapi.res.headers.get('content-type') ?? '', /^application\/json/);
  // Only GET loads a page: a POST to a page path is not an app route.
  const post = await app().request('/login', { method: 'POST' });
  assert.equal(post.status, 404);
  assert.equal(post.headers.get('content-type'), 'application/problem+json');
});
