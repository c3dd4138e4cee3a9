// `npm run build:binary` (issue 17, docs/packaging.md "Single binary"): dist/svc-linux-x64, a
// Node single-executable application. It is the Node binary of the `node` npm package with a
// SEA blob injected (postject): the main script is src/app/sea-runtime.ts bundled as CommonJS
// (Node 24's SEA runs no ES module main), and the assets are the whole `npm run build` output,
// which that main unpacks into the data directory and imports. `--out <file>` writes elsewhere.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmod,
  copyFile,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  realpath,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { MANIFEST_ASSET, type PayloadManifest } from '../src/app/sea-runtime.ts';
import { BUNDLE_NAME, buildBundle } from './build.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const DEFAULT_BINARY = path.join(ROOT, 'dist', `svc-${process.platform}-${process.arch}`);
/** Node's documented sentinel: postject flips it so the binary looks for its blob. */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const POSTJECT = path.join(ROOT, 'node_modules', 'postject', 'dist', 'cli.js');

/** The real Node 24 binary of the `node` npm package (node_modules/.bin/node is a link to it). */
async function nodeBinary(): Promise<string> {
  return realpath(path.join(ROOT, 'node_modules', 'node', 'bin', 'node'));
}

/** Every file and symlink under `dir`, as payload entries with their digests. */
async function payloadOf(dir: string): Promise<PayloadManifest> {
  const manifest: PayloadManifest = { entry: BUNDLE_NAME, files: [], links: [] };
  const visit = async (rel: string): Promise<void> => {
    for (const entry of await readdir(path.join(dir, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      const full = path.join(dir, child);
      if (entry.isDirectory()) await visit(child);
      else if (entry.isSymbolicLink())
        manifest.links.push({ path: child, target: await readlink(full) });
      else if (entry.isFile()) {
        const sha256 = createHash('sha256')
          .update(await readFile(full))
          .digest('hex');
        // Executable or not is all that matters; the rest follows from it.
        const mode = (await lstat(full)).mode & 0o111 ? 0o755 : 0o644;
        manifest.files.push({ path: child, sha256, mode });
      }
    }
  };
  await visit('');
  manifest.files.sort((a, b) => a.path.localeCompare(b.path));
  manifest.links.sort((a, b) => a.path.localeCompare(b.path));
  return manifest;
}

/** Runs a tool quietly (postject warns about every ELF note it skips); its output on failure. */
function run(program: string, args: string[], cwd: string): void {
  const result = spawnSync(program, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (result.status !== 0)
    throw new Error(
      `${path.basename(args[0] ?? program)} failed (${result.status ?? result.signal}):\n${result.stdout}${result.stderr}`,
    );
}

/** Removes the symbol tables (about 18 MB) when binutils is installed; optional. */
function strip(file: string): boolean {
  return spawnSync('strip', [file], { stdio: 'ignore' }).status === 0;
}

export interface BinaryResult {
  file: string;
  bytes: number;
  payloadFiles: number;
  stripped: boolean;
}

export async function buildBinary(out = DEFAULT_BINARY): Promise<BinaryResult> {
  const stage = await mkdtemp(path.join(tmpdir(), 'svc-binary-'));
  try {
    const bundle = path.join(stage, 'bundle');
    await buildBundle({ out: bundle, minify: true });
    const manifest = await payloadOf(bundle);
    await writeFile(path.join(stage, MANIFEST_ASSET), JSON.stringify(manifest));

    await build({
      stdin: {
        contents: `import * as sea from 'node:sea';
import { runFromSea } from './src/app/sea-runtime.ts';
runFromSea(sea).catch((error) => { process.stderr.write(\`svc: \${error?.stack ?? error}\\n\`); process.exit(1); });`,
        resolveDir: ROOT,
        loader: 'ts',
      },
      outfile: path.join(stage, 'sea-main.cjs'),
      bundle: true,
      format: 'cjs',
      platform: 'node',
      target: 'node24',
      logLevel: 'warning',
    });

    const assets: Record<string, string> = { [MANIFEST_ASSET]: path.join(stage, MANIFEST_ASSET) };
    for (const file of manifest.files) assets[file.path] = path.join(bundle, file.path);
    await writeFile(
      path.join(stage, 'sea-config.json'),
      JSON.stringify({
        main: path.join(stage, 'sea-main.cjs'),
        output: path.join(stage, 'sea.blob'),
        disableExperimentalSEAWarning: true,
        useCodeCache: false,
        assets,
      }),
    );
    const node = await nodeBinary();
    run(node, ['--experimental-sea-config', 'sea-config.json'], stage);

    const binary = path.join(stage, 'svc');
    await copyFile(node, binary);
    await chmod(binary, 0o755);
    const stripped = strip(binary);
    run(
      node,
      [
        POSTJECT,
        binary,
        'NODE_SEA_BLOB',
        path.join(stage, 'sea.blob'),
        '--sentinel-fuse',
        SEA_FUSE,
      ],
      stage,
    );
    await mkdir(path.dirname(path.resolve(out)), { recursive: true });
    // Copied beside the target and renamed: a reader never sees half a binary.
    const partial = `${path.resolve(out)}.partial-${process.pid}`;
    await copyFile(binary, partial);
    await chmod(partial, 0o755);
    await rename(partial, out);
    return {
      file: path.resolve(out),
      bytes: (await stat(out)).size,
      payloadFiles: manifest.files.length + manifest.links.length,
      stripped,
    };
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const outIndex = args.indexOf('--out');
  const started = performance.now();
  const result = await buildBinary(outIndex >= 0 ? args[outIndex + 1] : undefined);
  console.log(
    `built ${path.relative(process.cwd(), result.file)} (${(result.bytes / 2 ** 20).toFixed(1)} MiB, ${result.payloadFiles} payload files${result.stripped ? '' : ', not stripped: no strip(1)'}) in ${Math.round(performance.now() - started)} ms`,
  );
}
