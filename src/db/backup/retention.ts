import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';

/** `svc-20261128T143800Z.dump`: names that sort by time, written by `svc db backup --dir`. */
const ARCHIVE = /^svc-\d{8}T\d{6}Z\.dump$/;
/** A temp file of a run that died before its rename (src/db/backup/backup.ts). */
const TEMP = /^\.svc-\d{8}T\d{6}Z\.dump(\.manifest\.json)?\.tmp-[0-9a-f]{12}$/;
/** Older than any run could take: a temp file this old belongs to no live run. */
const STALE_TEMP_MS = 24 * 60 * 60 * 1000;

export function timestampedArchive(dir: string, now: Date): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
  return path.join(path.resolve(dir), `svc-${stamp}.dump`);
}

/**
 * Keeps the `keep` newest complete backups in `dir` (an archive counts once its manifest is
 * there) and deletes the older ones, archive and manifest; files svc did not name are never
 * touched. Returns the archives deleted.
 */
export async function pruneBackups(dir: string, keep: number, now: Date): Promise<string[]> {
  const names = await readdir(dir);
  const present = new Set(names);
  const complete = names
    .filter((n) => ARCHIVE.test(n) && present.has(`${n}.manifest.json`))
    .sort()
    .reverse();
  const deleted: string[] = [];
  for (const name of complete.slice(keep)) {
    // Manifest first: an archive without one is never taken for a backup.
    await rm(path.join(dir, `${name}.manifest.json`), { force: true });
    await rm(path.join(dir, name), { force: true });
    deleted.push(path.join(dir, name));
  }
  for (const name of names.filter((n) => TEMP.test(n))) {
    const file = path.join(dir, name);
    const info = await stat(file).catch(() => undefined);
    if (info && now.getTime() - info.mtimeMs > STALE_TEMP_MS) await rm(file, { force: true });
  }
  return deleted;
}
