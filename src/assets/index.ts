import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The one place that knows where svc's own files are (docs/packaging.md "How svc finds its files"):
 * the migrations, the charts, the admission policies, the built consoles, the common-password list
 * and package.json. They live in the checkout when svc runs from its sources (tsx), beside
 * `dist/svc.mjs` when it runs bundled (`npm run build`, docs/packaging.md), and wherever
 * SVC_ASSETS_DIR says when a single binary has unpacked them.
 */
export type Asset = 'sql' | 'charts' | 'policies' | 'web' | 'commonPasswords' | 'packageJson';

/** Each asset's path under the checkout. */
export const SOURCE_LAYOUT: Readonly<Record<Asset, string>> = {
  sql: 'sql',
  charts: 'charts',
  policies: 'policies',
  web: 'web/dist',
  commonPasswords: 'src/auth/common-passwords.txt',
  packageJson: 'package.json',
};

/** Each asset's path under `dist/` (scripts/build.ts copies SOURCE_LAYOUT to it). */
export const BUNDLE_LAYOUT: Readonly<Record<Asset, string>> = {
  sql: 'sql',
  charts: 'charts',
  policies: 'policies',
  web: 'web',
  commonPasswords: 'common-passwords.txt',
  packageJson: 'package.json',
};

// Defined as `true` by scripts/build.ts (esbuild `define`); undeclared when run from sources,
// where `typeof` of it is 'undefined'.
declare const __SVC_BUNDLED__: boolean;
const BUNDLED = typeof __SVC_BUNDLED__ !== 'undefined' && __SVC_BUNDLED__;

/** The directory the layout is relative to: SVC_ASSETS_DIR, the bundle's own, or the checkout. */
export function assetRoot(env: NodeJS.ProcessEnv = process.env): string {
  const override = env.SVC_ASSETS_DIR;
  if (override) return path.resolve(override);
  // Bundled, this module's code sits in dist/svc.mjs; from sources, in src/assets/.
  return fileURLToPath(new URL(BUNDLED ? '.' : '../..', import.meta.url));
}

/** The absolute path of one asset for this run. */
export function assetPath(asset: Asset, env: NodeJS.ProcessEnv = process.env): string {
  const layout = BUNDLED || env.SVC_ASSETS_DIR ? BUNDLE_LAYOUT : SOURCE_LAYOUT;
  return path.join(assetRoot(env), layout[asset]);
}

/** svc's own version, package.json's: `svc --version`, the matrix's system side, `releases`. */
export function svcVersion(env: NodeJS.ProcessEnv = process.env): string {
  return (JSON.parse(readFileSync(assetPath('packageJson', env), 'utf8')) as { version: string })
    .version;
}
