import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { assetPath, svcVersion } from '../assets/index.ts';
import { parseCompatList } from '../db/compat.ts';

/**
 * `svc --version`: the program, the system chart it ships and the tenant chart versions the
 * compatibility list lets it run (spec §2.10), one per line. Reads only files svc carries, so
 * it needs no configuration and no database; blocked tenant versions are left out.
 */
export function versionReport(): string {
  const version = svcVersion();
  const chart = parse(
    readFileSync(path.join(assetPath('charts'), 'svc-system', 'Chart.yaml'), 'utf8'),
  ) as { version: string };
  const list = parseCompatList(
    readFileSync(path.join(assetPath('sql'), 'chart-compatibility.yaml'), 'utf8'),
  );
  const tenant = (list.find((entry) => entry.system === version)?.tenant ?? []).filter(
    (t) => t.status !== 'blocked',
  );
  return [
    `svc ${version}`,
    `svc-system chart ${chart.version}`,
    ...tenant.map((t) => `svc-tenant chart ${t.version} (${t.status})`),
    '',
  ].join('\n');
}
