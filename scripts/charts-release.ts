// Chart versions (spec §9.1, issue 32): each chart has its own semver, and a released version is
// frozen. charts/released.yaml records the content digest of every chart version ever released;
// the check refuses a chart whose current version is recorded with another digest (changed
// without a bump) or is older than a released one. Between releases a chart may change freely
// under its next, unreleased version: the bump is owed to what was published, not to each commit.
//
//   tsx scripts/charts-release.ts check             (npm test runs it: test/charts/chart-versions.test.ts)
//   tsx scripts/charts-release.ts check --release   (scripts/release/build.sh: both charts recorded)
//   tsx scripts/charts-release.ts record            (the release commit: freeze both current versions)
//   tsx scripts/charts-release.ts digest <chart-dir>

import { createHash } from 'node:crypto';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { parse, stringify } from 'yaml';
import { compareSemver } from '../src/orchestrator/catalog.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const RELEASED_FILE = path.join(ROOT, 'charts', 'released.yaml');
export const RELEASE_CHARTS = ['svc-system', 'svc-tenant'] as const;

const semver = '^[0-9]+\\.[0-9]+\\.[0-9]+(-[0-9A-Za-z.-]+)?$';
const Released = Type.Array(
  Type.Object(
    {
      chart: Type.String({ minLength: 1 }),
      version: Type.String({ pattern: semver }),
      digest: Type.String({ pattern: '^sha256:[0-9a-f]{64}$' }),
    },
    { additionalProperties: false },
  ),
);
export type Released = Type.Static<typeof Released>;
const checkReleased = Compile(Released);

export class ChartVersionError extends Error {}

/** Parses charts/released.yaml (an empty file or `[]` is no release yet); duplicates are errors. */
export function parseReleased(text: string): Released {
  const data: unknown = parse(text) ?? [];
  if (!checkReleased.Check(data)) {
    const first = checkReleased.Errors(data)[0];
    throw new ChartVersionError(
      `charts/released.yaml: ${first?.instancePath || '/'} ${first?.message}`,
    );
  }
  const seen = new Set<string>();
  for (const { chart, version } of data) {
    const key = `${chart}@${version}`;
    if (seen.has(key)) throw new ChartVersionError(`charts/released.yaml: ${key} recorded twice`);
    seen.add(key);
  }
  return data;
}

/** Patterns of a .helmignore as helm applies them to paths relative to the chart. */
function helmignore(text: string): (rel: string, isDir: boolean) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  return (rel, isDir) =>
    rules.some((rule) => {
      const dirOnly = rule.endsWith('/');
      const pattern = dirOnly ? rule.slice(0, -1) : rule;
      if (dirOnly && !isDir) return false;
      // A pattern without a slash matches the base name at any depth, as in helm.
      const target = pattern.includes('/') ? rel : path.posix.basename(rel);
      return path.posix.matchesGlob(target, pattern);
    });
}

/**
 * What `helm package` puts into the archive, as a digest: every file's path (relative, POSIX) and
 * bytes, symlinks followed (svc-system's templates/admission), .helmignore applied. Archives
 * themselves carry timestamps, so the digest is of the content, not of a .tgz.
 */
export async function chartDigest(chartDir: string): Promise<string> {
  const ignoreFile = await readFile(path.join(chartDir, '.helmignore'), 'utf8').catch(() => '');
  const ignored = helmignore(ignoreFile);
  const files: string[] = [];
  const walk = async (rel: string) => {
    for (const name of (await readdir(path.join(chartDir, rel))).sort()) {
      const child = rel === '' ? name : `${rel}/${name}`;
      const info = await stat(path.join(chartDir, child));
      if (ignored(child, info.isDirectory())) continue;
      if (info.isDirectory()) await walk(child);
      else files.push(child);
    }
  };
  await walk('');
  const hash = createHash('sha256');
  for (const rel of files.sort()) {
    const body = await readFile(path.join(chartDir, rel));
    hash.update(`${rel}\0${body.length}\0`);
    hash.update(body);
  }
  return `sha256:${hash.digest('hex')}`;
}

export interface ChartState {
  readonly chart: string;
  readonly version: string;
  readonly digest: string;
}

export async function chartState(chartDir: string): Promise<ChartState> {
  const meta = parse(await readFile(path.join(chartDir, 'Chart.yaml'), 'utf8')) as {
    name?: unknown;
    version?: unknown;
  };
  if (typeof meta.name !== 'string' || typeof meta.version !== 'string')
    throw new ChartVersionError(`${chartDir}/Chart.yaml: no name or version`);
  return { chart: meta.name, version: meta.version, digest: await chartDigest(chartDir) };
}

/**
 * The problems of one chart against the released list (empty: fine). With `release`, its current
 * version must itself be recorded with its current digest.
 */
export function versionProblems(
  current: ChartState,
  released: Released,
  release = false,
): string[] {
  const mine = released.filter((r) => r.chart === current.chart);
  const same = mine.find((r) => r.version === current.version);
  const problems: string[] = [];
  if (same && same.digest !== current.digest) {
    problems.push(
      `${current.chart} ${current.version} was released with different content: a changed chart needs a new version in its Chart.yaml (spec §9.1)`,
    );
  }
  const newer = mine.filter((r) => compareSemver(r.version, current.version) > 0);
  if (newer.length > 0) {
    problems.push(
      `${current.chart} ${current.version} is older than released ${newer.map((r) => r.version).join(', ')}`,
    );
  }
  if (release && !same) {
    problems.push(
      `${current.chart} ${current.version} is not recorded in charts/released.yaml: run \`npm run charts:record\` in the release commit`,
    );
  }
  return problems;
}

/** svc-system is svc's own release: its version is package.json's (sql/chart-compatibility.yaml keys by it). */
export async function systemVersionProblem(root = ROOT): Promise<string | undefined> {
  const { version } = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as {
    version: string;
  };
  const system = await chartState(path.join(root, 'charts', 'svc-system'));
  return system.version === version
    ? undefined
    : `charts/svc-system/Chart.yaml has version ${system.version}, package.json ${version}: they are svc's release and move together`;
}

async function main(argv: string[]): Promise<number> {
  const [mode, ...rest] = argv;
  if (mode === 'digest' && rest.length === 1) {
    console.log(await chartDigest(path.resolve(rest[0] as string)));
    return 0;
  }
  if (mode !== 'check' && mode !== 'record') {
    console.error(
      'usage: charts-release.ts check [--release] | record | digest <chart-dir>  (spec §9.1)',
    );
    return 2;
  }
  const release = rest.includes('--release');
  const unknown = rest.filter((a) => a !== '--release' || mode !== 'check');
  if (unknown.length > 0) {
    console.error(`charts-release: unknown argument ${unknown[0]}`);
    return 2;
  }
  const released = parseReleased(await readFile(RELEASED_FILE, 'utf8'));
  const states = await Promise.all(
    RELEASE_CHARTS.map((c) => chartState(path.join(ROOT, 'charts', c))),
  );
  const problems = states.flatMap((s) => versionProblems(s, released, release));
  const system = await systemVersionProblem();
  if (system) problems.push(system);
  if (mode === 'record') {
    // Recording never overwrites: a recorded version with other content is the error above.
    const blocking = problems.filter((p) => !p.includes('is not recorded'));
    if (blocking.length > 0) {
      for (const p of blocking) console.error(`charts-release: ${p}`);
      return 1;
    }
    const added = states.filter(
      (s) => !released.some((r) => r.chart === s.chart && r.version === s.version),
    );
    const next = [
      ...released,
      ...added.map(({ chart, version, digest }) => ({ chart, version, digest })),
    ];
    await writeFile(
      RELEASED_FILE,
      `${header}${added.length + released.length > 0 ? stringify(next) : '[]\n'}`,
    );
    for (const s of added) console.log(`recorded ${s.chart} ${s.version} ${s.digest}`);
    return 0;
  }
  for (const p of problems) console.error(`charts-release: ${p}`);
  return problems.length > 0 ? 1 : 0;
}

export const header = `# Every chart version ever released, with the digest of its content (spec §9.1, issue 32).
# A released version is frozen: scripts/charts-release.ts check (npm test) fails when a chart
# changes under a recorded version. \`npm run charts:record\` appends the current versions in the
# commit a release is tagged from; scripts/release/build.sh refuses a tag whose charts are not
# recorded. Never edit an entry by hand.
`;

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: Error) => {
      console.error(`charts-release: ${error.message}`);
      process.exitCode = 1;
    },
  );
}
