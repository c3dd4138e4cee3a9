// `npm start` step 1 (issue 14 "Budgets": a fresh clone serves both consoles with no extra
// command): build web/dist when it is missing or older than what it is built from. Compares
// modification times only, so an up-to-date build costs a directory walk, not a build.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** Everything the bundle is made of: the apps, the contracts they import, the dependencies. */
const SOURCES = ['web/shared', 'web/mssp', 'web/portal', 'web/vite.config.ts', 'contracts'];
const LOCKFILE = 'package-lock.json';
const BUILT = 'web/dist/.vite/manifest.json';

function newest(target: string): number {
  const stat = statSync(target, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const entry of readdirSync(target))
    latest = Math.max(latest, newest(path.join(target, entry)));
  return latest;
}

const built = statSync(path.join(ROOT, BUILT), { throwIfNoEntry: false })?.mtimeMs ?? 0;
const sources = Math.max(...[...SOURCES, LOCKFILE].map((s) => newest(path.join(ROOT, s))));
if (built < sources) {
  console.error(
    built === 0 ? 'svc: building the web consoles…' : 'svc: web sources changed, rebuilding…',
  );
  const result = spawnSync('npm', ['run', '--silent', 'build:web'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  process.exit(result.status ?? 1);
}
