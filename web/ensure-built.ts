// `npm start` step 1 (docs/web.md "Budgets and builds": a fresh clone serves both consoles with no
// extra command): build web/dist when it is missing or older than what it is built from. Compares
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

/**
 * The bundler's native binary is an optional dependency for Node ^20.19 || >=22.12, and npm
 * silently skips it when `npm install` runs on an older Node (Debian 12's own nodejs is 18);
 * the build then dies in a stack trace. npm names its Node in the user agent it exports.
 */
function npmNodeTooOld(userAgent: string): string | undefined {
  const match = /\bnode\/v(\d+)\.(\d+)\.\d+/.exec(userAgent);
  if (!match) return undefined;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  const supported = (major === 20 && minor >= 19) || (major === 22 && minor >= 12) || major > 22;
  return supported ? undefined : match[0].slice('node/'.length);
}

const tooOld = npmNodeTooOld(process.env.npm_config_user_agent ?? '');
if (tooOld) {
  console.error(
    `svc: npm runs on Node ${tooOld}; svc needs Node 20.19+ (or 22.12+) for npm install. ` +
      'Install a newer Node, then: rm -rf node_modules && npm install',
  );
  process.exit(1);
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
