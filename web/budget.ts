// `npm run build:web` step 2 (docs/web.md "Budgets and builds"): the initial JS of each app,
// gzipped, is at most 200 KB. Initial = the entry chunk and everything it imports statically (what
// the browser loads before the first page renders); lazy pages (dynamic imports) do not count.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const LIMIT_BYTES = 200 * 1024;
const DIST = fileURLToPath(new URL('dist/', import.meta.url));
const ENTRIES = { 'MSSP console': 'mssp/index.html', 'customer portal': 'portal/index.html' };

interface Chunk {
  file: string;
  imports?: string[];
}

function initialFiles(manifest: Record<string, Chunk>, key: string, seen = new Set<string>()) {
  const chunk = manifest[key];
  if (!chunk || seen.has(chunk.file)) return seen;
  seen.add(chunk.file);
  for (const next of chunk.imports ?? []) initialFiles(manifest, next, seen);
  return seen;
}

const manifest = JSON.parse(readFileSync(`${DIST}.vite/manifest.json`, 'utf8')) as Record<
  string,
  Chunk
>;
let over = false;
for (const [app, entry] of Object.entries(ENTRIES)) {
  const files = [...initialFiles(manifest, entry)].filter((f) => f.endsWith('.js'));
  if (files.length === 0) throw new Error(`${entry} is not in the build manifest`);
  const bytes = files.reduce((sum, f) => sum + gzipSync(readFileSync(`${DIST}${f}`)).length, 0);
  const kb = (bytes / 1024).toFixed(1);
  console.log(`${app}: initial JS ${kb} KB gzipped (${files.length} files; limit 200 KB)`);
  if (bytes > LIMIT_BYTES) over = true;
}
if (over) {
  console.error('web budget exceeded: make pages lazy (docs/web.md "Budgets")');
  process.exit(1);
}
