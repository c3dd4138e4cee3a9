import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { type Context, Hono } from 'hono';
import { assetPath } from '../../assets/index.ts';
import type { HostPolicy } from '../hosts.ts';

/** Where `npm run build:web` puts the consoles (web/vite.config.ts `build.outDir`). */
export const WEB_DIST_DIR = assetPath('web');

/** The built consoles and which host gets which. */
export interface WebDeps {
  /** web/dist: `mssp/index.html`, `portal/index.html` and the shared `assets/`. */
  root: string;
  hosts: HostPolicy;
}

/**
 * Same-origin pages only: scripts, styles, fetches and event streams from svc itself; images
 * may also be a tenant's logo (https or data:). Styles are set through the CSSOM (React's
 * `style`, the branding colours), which CSP does not restrict, so no 'unsafe-inline'.
 */
const CSP = [
  "default-src 'self'",
  "img-src 'self' data: https:",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};
/** Text worth compressing; images and fonts are compressed already. */
const COMPRESSIBLE = new Set(['.js', '.css', '.svg']);

// Vite names every asset `<name>-<hash>.<ext>`: one path segment, never a dot file.
const ASSET = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

const gzip = promisify(gzipCallback);

/** `gzip` listed and not refused with q=0 (RFC 9110 §12.5.3). */
function acceptsGzip(header: string | undefined): boolean {
  const entry = header
    ?.split(',')
    .map((part) => part.trim().toLowerCase())
    .find((part) => part === 'gzip' || part.startsWith('gzip;'));
  return entry !== undefined && !/;\s*q=0(\.0{0,3})?$/.test(entry);
}

function secure(c: Context): void {
  c.header('Content-Security-Policy', CSP);
  c.header('X-Content-Type-Options', 'nosniff');
  c.header('Referrer-Policy', 'same-origin');
  c.header('Cross-Origin-Opener-Policy', 'same-origin');
}

async function readOrUndefined(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Every GET outside `/api` and `/healthz`: the app of the request's host (a customer host →
 * the portal, any other → the MSSP console) with history fallback to its index.html, so a
 * deep link or a reload of a client-side route loads the app. Registered after the API.
 */
export function webRoutes(deps: WebDeps): Hono {
  const app = new Hono();
  // Each asset is compressed once: its name changes with its content, so a kept copy never
  // goes stale. The budget of web/budget.ts is this gzipped size.
  const compressed = new Map<string, Buffer>();
  app.get('/assets/:name', async (c) => {
    const name = c.req.param('name');
    const ext = path.extname(name);
    const type = TYPES[ext];
    const file = path.join(deps.root, 'assets', name);
    const body = ASSET.test(name) && type ? await readOrUndefined(file) : undefined;
    secure(c);
    if (!body || !type) return c.text('Not Found\n', 404);
    // Content-hashed names: a new build is a new URL, so a copy never needs revalidating.
    c.header('Cache-Control', 'public, max-age=31536000, immutable');
    c.header('Content-Type', type);
    if (!COMPRESSIBLE.has(ext)) return c.body(new Uint8Array(body));
    c.header('Vary', 'Accept-Encoding');
    if (!acceptsGzip(c.req.header('accept-encoding'))) return c.body(new Uint8Array(body));
    let packed = compressed.get(file);
    if (!packed) {
      packed = await gzip(body);
      compressed.set(file, packed);
    }
    c.header('Content-Encoding', 'gzip');
    return c.body(new Uint8Array(packed));
  });
  app.get('*', async (c) => {
    // /metrics lives on its own port (src/metrics/server.ts): a scraper pointed here gets 404.
    if (c.req.path === '/api' || c.req.path.startsWith('/api/') || c.req.path === '/metrics')
      return c.notFound();
    const which = deps.hosts.customerSlug(c.req.header('host')) === undefined ? 'mssp' : 'portal';
    const html = await readOrUndefined(path.join(deps.root, which, 'index.html'));
    secure(c);
    // Always revalidated: it names the current build's assets.
    c.header('Cache-Control', 'no-cache');
    if (!html) return c.text('The web consoles are not built: run `npm run build:web`.\n', 503);
    return c.html(html.toString('utf8'));
  });
  return app;
}
