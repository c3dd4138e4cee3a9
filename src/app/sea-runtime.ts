// The single binary's own first code (docs/packaging.md "Single binary"). The binary
// is Node with the `npm run build` output (dist/: svc.mjs, the files it reads, the native
// packages) injected as SEA assets. Code that the runtime loads must be a file on disk: a
// native addon for dlopen, PostgreSQL's programs for exec, the ES module bundle for import().
// So the payload is written once into `<data dir>/runtime/<digest>/` and run from there.
import { createHash } from 'node:crypto';
import {
  chmod,
  mkdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** The SEA asset holding the PayloadManifest; every other asset is keyed by its payload path. */
export const MANIFEST_ASSET = 'payload.json';

export interface PayloadFile {
  /** Relative, '/'-separated, as in the asset key. */
  path: string;
  sha256: string;
  /** Permission bits (the executables of PostgreSQL keep their x bits). */
  mode: number;
}

export interface PayloadManifest {
  /** The program's entry module within the payload (svc.mjs). */
  entry: string;
  files: PayloadFile[];
  /** Library symlinks of the PostgreSQL binaries (libpq.so.5 -> libpq.so.5.18). */
  links: { path: string; target: string }[];
}

/** Names a payload: the same content always unpacks into the same directory. */
export function payloadDigest(manifest: PayloadManifest): string {
  return createHash('sha256').update(JSON.stringify(manifest)).digest('hex').slice(0, 16);
}

export interface UnpackResult {
  dir: string;
  /** Payload paths written in this call: all of them on a first start, none when intact. */
  written: string[];
}

/**
 * Makes `<root>/<digest>` hold exactly the payload: each file is read back and its SHA-256
 * compared on every start (about 70 MB), and a missing, altered or mis-moded file is written
 * again from the asset. Writes go to a temporary name and are renamed, so two processes
 * starting at once, or a crash mid-write, never leave a torn file. An intact directory is only
 * read: the image ships one pre-unpacked on its read-only root (SVC_RUNTIME_DIR).
 */
export async function unpackPayload(
  root: string,
  manifest: PayloadManifest,
  asset: (key: string) => ArrayBuffer,
): Promise<UnpackResult> {
  // World-readable, so the embedded database's OS user (when svc runs as root) can run it.
  const dir = path.join(root, payloadDigest(manifest));
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const written: string[] = [];
  await inBatches(manifest.files, 16, async (file) => {
    if (await intact(path.join(dir, file.path), file)) return;
    await writeAtomically(path.join(dir, file.path), Buffer.from(asset(file.path)), file.mode);
    written.push(file.path);
  });
  for (const link of manifest.links) {
    const at = path.join(dir, link.path);
    const current = await readlink(at).catch(() => undefined);
    if (current === link.target) continue;
    await rm(at, { force: true, recursive: true });
    await mkdir(path.dirname(at), { recursive: true, mode: 0o755 });
    await symlink(link.target, at);
    written.push(link.path);
  }
  return { dir, written: written.sort() };
}

async function intact(file: string, expected: PayloadFile): Promise<boolean> {
  try {
    const info = await stat(file);
    if (!info.isFile() || (info.mode & 0o777) !== expected.mode) return false;
    const digest = createHash('sha256')
      .update(await readFile(file))
      .digest('hex');
    return digest === expected.sha256;
  } catch {
    return false;
  }
}

async function writeAtomically(file: string, data: Buffer, mode: number): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
  const partial = `${file}.partial-${process.pid}`;
  await writeFile(partial, data, { mode });
  // writeFile's mode is filtered by the umask.
  await chmod(partial, mode);
  await rename(partial, file);
}

async function inBatches<T>(items: T[], size: number, each: (item: T) => Promise<void>) {
  for (let i = 0; i < items.length; i += size)
    await Promise.all(items.slice(i, i + size).map(each));
}

/**
 * Where payloads are unpacked: SVC_RUNTIME_DIR, else `<data dir>/runtime` with the data
 * directory resolved as src/config/server.ts does (SVC_DATA_DIR, default ./.svc) and created
 * private, as startEmbedded creates it.
 */
export async function runtimeRoot(env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  if (env.SVC_RUNTIME_DIR) return path.resolve(cwd, env.SVC_RUNTIME_DIR);
  const dataDir = path.resolve(cwd, env.SVC_DATA_DIR || '.svc');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  return path.join(dataDir, 'runtime');
}

/**
 * The binary's main: unpack (or check) the payload, point SVC_ASSETS_DIR at it unless the
 * operator set it, and run the bundle from there, so `import.meta.url`, the native packages
 * in its node_modules and the PostgreSQL binaries resolve as they do beside dist/svc.mjs.
 */
export async function runFromSea(sea: {
  getAsset(key: string, encoding: string): string;
  getRawAsset(key: string): ArrayBuffer;
}): Promise<void> {
  const manifest = JSON.parse(sea.getAsset(MANIFEST_ASSET, 'utf8')) as PayloadManifest;
  let unpacked: UnpackResult;
  let root = 'the runtime directory';
  try {
    root = await runtimeRoot(process.env, process.cwd());
    unpacked = await unpackPayload(root, manifest, (key) => sea.getRawAsset(key));
  } catch (error) {
    process.stderr.write(
      `svc: cannot unpack the program's files into ${root} (set SVC_DATA_DIR or SVC_RUNTIME_DIR to a writable directory): ${(error as Error).message}\n`,
    );
    process.exit(1);
  }
  process.env.SVC_ASSETS_DIR ||= unpacked.dir;
  await import(pathToFileURL(path.join(unpacked.dir, manifest.entry)).href);
}
