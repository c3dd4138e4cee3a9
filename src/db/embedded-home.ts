import { createHash, randomBytes } from 'node:crypto';
import {
  chmod,
  chown,
  cp,
  mkdir,
  readdir,
  realpath,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import type { Binaries, PostgresIds } from './postgres-process.ts';

/**
 * Where the embedded server's files go so that it can reach them (docs/testing.md "Trying the quick
 * start on a clean Debian 12"). As root, the server runs as the OS user `postgres`, which must be
 * able to traverse every directory above its binaries and its data. A checkout under a home
 * directory of mode 700 (`/root`) allows neither, so then:
 *
 * - the binaries are copied once per version to `<root>/postgres-<version>` (root-owned,
 *   world-readable), and
 * - a new cluster's data goes to `<root>/data-<digest of the data directory's real path>`
 *   (owned by postgres, mode 700), recorded in the data directory's `embedded.json`.
 *
 * `<root>` is `/var/lib/svc/embedded`. Without root, or where `postgres` can reach them, both
 * stay where they are (data in `<dataDir>/pg`), as before.
 */
export const DEFAULT_RUNTIME_ROOT = '/var/lib/svc/embedded';

export interface Placement {
  binaries: Binaries;
  pgDir: string;
  /** A cluster found where the new one would go, recorded by no SVC_DATA_DIR: left alone. */
  orphan?: string;
}

/**
 * True when a process with `ids` can traverse every directory from `/` down to `dir` (the
 * execute bit for its owner, group or others, as it applies to that process). POSIX ACLs are
 * not consulted; a directory they open up is reported unreachable and merely relocated.
 */
export async function reachable(dir: string, ids: PostgresIds): Promise<boolean> {
  if (!ids) return true;
  let current = path.resolve(dir);
  for (;;) {
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(current);
    } catch {
      // Not created yet: what matters is the part that exists.
      const parent = path.dirname(current);
      if (parent === current) return true;
      current = parent;
      continue;
    }
    const mode = info.mode;
    const bit =
      info.uid === ids.uid ? mode & 0o100 : info.gid === ids.gid ? mode & 0o010 : mode & 0o001;
    if (!bit) return false;
    const parent = path.dirname(current);
    if (parent === current) return true;
    current = parent;
  }
}

/** The binaries the server can run: the packaged ones, or a copy it can reach. */
async function runnableBinaries(
  packaged: Binaries,
  ids: PostgresIds,
  root: string,
): Promise<Binaries> {
  if (await reachable(path.join(packaged.dir, 'bin'), ids)) return packaged;
  const target = path.join(root, `postgres-${packaged.version}`);
  const stamp = path.join(target, '.complete');
  if (!(await exists(stamp))) {
    // Copied beside the target and renamed, so a crash mid-copy never leaves a partial copy
    // that looks complete. Library symlinks (libpq.so -> libpq.so.5.18) are kept as links.
    const partial = `${target}.partial-${process.pid}`;
    await rm(partial, { recursive: true, force: true });
    await cp(packaged.dir, partial, { recursive: true, verbatimSymlinks: true });
    await writeFile(path.join(partial, '.complete'), `${packaged.version}\n`);
    await rm(target, { recursive: true, force: true });
    await rename(partial, target);
  }
  return { dir: target, version: packaged.version };
}

/** `<root>` itself: root-owned, traversable but not listable by others. */
async function prepareRoot(root: string): Promise<void> {
  await mkdir(root, { recursive: true, mode: 0o711 });
  await chmod(root, 0o711);
  // Its parents are created 0711 too (mkdir's mode applies to each new one); an existing parent
  // the server cannot traverse makes this root unusable, and says so.
}

/**
 * Decides where the binaries and the data of the cluster under `dataDir` are. `recorded` is
 * the data directory a previous start chose (from embedded.json), kept when it still exists.
 */
export async function placeEmbedded(options: {
  dataDir: string;
  packaged: Binaries;
  ids: PostgresIds;
  recorded: string | undefined;
  root?: string | undefined;
}): Promise<Placement> {
  const { dataDir, packaged, ids } = options;
  const root = options.root ?? DEFAULT_RUNTIME_ROOT;
  const local = path.join(dataDir, 'pg');
  const binariesReachable = await reachable(path.join(packaged.dir, 'bin'), ids);
  const dataReachable = await reachable(dataDir, ids);
  if (binariesReachable && dataReachable && options.recorded === undefined)
    return { binaries: packaged, pgDir: local };

  if (!binariesReachable || !dataReachable) {
    await prepareRoot(root);
    if (!(await reachable(root, ids)))
      throw new Error(
        `the embedded database's user cannot reach ${root}; make its parent directories traversable (chmod o+x) or set SVC_DATABASE_HOST`,
      );
  }
  const binaries = binariesReachable ? packaged : await runnableBinaries(packaged, ids, root);
  if (options.recorded !== undefined && (await exists(options.recorded)))
    return { binaries, pgDir: options.recorded };
  if (dataReachable || (await exists(path.join(local, 'PG_VERSION'))))
    return { binaries, pgDir: local };
  const digest = createHash('sha256')
    .update(await realpath(dataDir))
    .digest('hex')
    .slice(0, 16);
  const base = path.join(root, `data-${digest}`);
  // A data directory removed and made again at the same path (a re-clone, `rm -rf .svc`) took
  // the old cluster's superuser password with its embedded.json: that cluster cannot be used,
  // and initdb refuses a non-empty directory. The new one goes beside it; nothing is deleted.
  const orphan = (await readdir(base).catch(() => [])).length > 0 ? base : undefined;
  const pgDir = orphan ? `${base}-${randomBytes(4).toString('hex')}` : base;
  await mkdir(pgDir, { recursive: true, mode: 0o700 });
  if (ids) await chown(pgDir, ids.uid, ids.gid);
  return orphan ? { binaries, pgDir, orphan } : { binaries, pgDir };
}

/** Whether a path exists (any kind of file). */
export async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}
