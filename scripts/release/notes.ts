// Release notes (spec §9.2 item 3: "release notes state supported ranges"; issue 32): svc's
// version, the chart versions this release ships, the tenant chart versions it runs by status,
// and the whole compatibility matrix — read from the files svc itself carries, so the notes and
// `svc --version` (src/app/version.ts) cannot disagree.
//
//   tsx scripts/release/notes.ts [--checksums dist/release/SHA256SUMS] > NOTES.md

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { type CompatList, type CompatStatus, parseCompatList } from '../../src/db/compat.ts';
import { compareSemver } from '../../src/orchestrator/catalog.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

async function chartVersion(root: string, chart: string): Promise<string> {
  const meta = parse(await readFile(path.join(root, 'charts', chart, 'Chart.yaml'), 'utf8')) as {
    version: string;
  };
  return meta.version;
}

/** `0.1.0 – 0.3.0 (0.1.0, 0.2.0, 0.3.0)`, or the one version, or `none`. */
export function range(versions: readonly string[]): string {
  const sorted = [...versions].sort(compareSemver);
  if (sorted.length === 0) return 'none';
  if (sorted.length === 1) return sorted[0] as string;
  return `${sorted[0]} – ${sorted.at(-1)} (${sorted.join(', ')})`;
}

export interface NotesInput {
  readonly version: string;
  readonly systemChart: string;
  readonly tenantChart: string;
  readonly matrix: CompatList;
  readonly checksums?: string | undefined;
}

export function renderNotes(input: NotesInput): string {
  const { version, systemChart, tenantChart, matrix } = input;
  const mine = matrix.find((entry) => entry.system === version)?.tenant ?? [];
  const by = (status: CompatStatus) =>
    range(mine.filter((t) => t.status === status).map((t) => t.version));
  const lines = [
    `# svc ${version}`,
    '',
    '## Packages',
    '',
    `- svc ${version} (binary \`svc-linux-x64\`, image \`svc:${version}\`, pinned by digest in the published system chart)`,
    `- svc-system chart ${systemChart}`,
    `- svc-tenant chart ${tenantChart} (the tenant package this release installs for new tenants)`,
    '',
    `## Tenant packages svc ${version} runs (spec §9.2)`,
    '',
    `- supported: ${by('supported')}`,
    `- deprecated (runs, upgrade advised): ${by('deprecated')}`,
    `- blocked (refused): ${by('blocked')}`,
    '',
    'Any other tenant package version is out of range and refused.',
    '',
    '## Compatibility matrix',
    '',
    '| system | tenant chart | status | notes |',
    '| --- | --- | --- | --- |',
    ...[...matrix]
      .sort((a, b) => compareSemver(b.system, a.system))
      .flatMap((entry) =>
        [...entry.tenant]
          .sort((a, b) => compareSemver(b.version, a.version))
          .map((t) => `| ${entry.system} | ${t.version} | ${t.status} | ${t.notes ?? ''} |`),
      ),
  ];
  if (input.checksums !== undefined) {
    lines.push('', '## SHA256SUMS', '', '```', input.checksums.trimEnd(), '```');
  }
  return `${lines.join('\n')}\n`;
}

export async function notesFor(root = ROOT, checksumsFile?: string): Promise<string> {
  const { version } = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as {
    version: string;
  };
  return renderNotes({
    version,
    systemChart: await chartVersion(root, 'svc-system'),
    tenantChart: await chartVersion(root, 'svc-tenant'),
    matrix: parseCompatList(
      await readFile(path.join(root, 'sql', 'chart-compatibility.yaml'), 'utf8'),
    ),
    checksums: checksumsFile === undefined ? undefined : await readFile(checksumsFile, 'utf8'),
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  let checksums: string | undefined;
  let bad: string | undefined;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--checksums' && args[i + 1] !== undefined) checksums = args[++i];
    else bad ??= args[i];
  }
  if (bad !== undefined) {
    console.error(`notes: unknown argument ${bad}\nusage: notes.ts [--checksums FILE]`);
    process.exitCode = 2;
  } else {
    notesFor(ROOT, checksums).then(
      (text) => process.stdout.write(text),
      (error: Error) => {
        console.error(`notes: ${error.message}`);
        process.exitCode = 1;
      },
    );
  }
}
