import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import { assetPath } from '../assets/index.ts';

/** One tenant package version svc can install: the chart directory and its defaults. */
export interface TenantChart {
  version: string;
  path: string;
  /** The chart's values.yaml, parsed (spec §2.9 defaults). */
  defaults: unknown;
  /** Where it came from: its directory, or the `oci://…@sha256:…` reference it was pulled by. */
  source: string;
}

export interface ChartCatalog {
  versions(): string[];
  get(version: string): TenantChart | undefined;
}

/** The repository's (and the container image's) own charts directory. */
export const BUNDLED_CHARTS_DIR = assetPath('charts');

/** A chart directory's name and version, or undefined when it has no readable Chart.yaml. */
export async function readChartMeta(
  chartDir: string,
): Promise<{ name?: unknown; version?: unknown } | undefined> {
  try {
    return parse(await readFile(path.join(chartDir, 'Chart.yaml'), 'utf8')) ?? {};
  } catch {
    return undefined;
  }
}

/**
 * Every `svc-tenant` chart directly under `dir` (spec §9.1: the tenant package has its own
 * semver). svc ships one; an MSSP that keeps older versions beside it can upgrade between them,
 * and the compatibility matrix decides which moves are allowed (§9.2).
 */
export async function loadChartCatalog(dir: string = BUNDLED_CHARTS_DIR): Promise<ChartCatalog> {
  const found: { path: string; source: string }[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const chartDir = path.join(dir, entry.name);
    const meta = await readChartMeta(chartDir);
    if (meta?.name !== 'svc-tenant' || typeof meta.version !== 'string') continue;
    found.push({ path: chartDir, source: chartDir });
  }
  return catalogOf(found, dir);
}

/**
 * A catalog of given `svc-tenant` chart directories (the pulled tenant packages,
 * package-source.ts); each must be one, and no two may carry the same version.
 */
export async function catalogOf(
  charts: { path: string; source: string }[],
  where: string,
): Promise<ChartCatalog> {
  const byVersion = new Map<string, TenantChart>();
  for (const chart of charts) {
    const meta = await readChartMeta(chart.path);
    if (meta?.name !== 'svc-tenant' || typeof meta.version !== 'string') {
      throw new Error(`${chart.source} is not an svc-tenant chart`);
    }
    const twin = byVersion.get(meta.version);
    if (twin) {
      throw new Error(
        `two svc-tenant charts of version ${meta.version} in ${where}: ${twin.source} and ${chart.source}`,
      );
    }
    const defaults: unknown = parse(await readFile(path.join(chart.path, 'values.yaml'), 'utf8'));
    byVersion.set(meta.version, {
      version: meta.version,
      path: chart.path,
      defaults,
      source: chart.source,
    });
  }
  return {
    versions: () => [...byVersion.keys()].sort(compareSemver),
    get: (version) => byVersion.get(version),
  };
}

/** Semver precedence for release versions (prereleases sort before their release). */
export function compareSemver(a: string, b: string): number {
  const split = (v: string) => {
    const [core = '', pre] = v.split('-', 2);
    return { nums: core.split('.').map(Number), pre };
  };
  const x = split(a);
  const y = split(b);
  for (let i = 0; i < 3; i++) {
    const d = (x.nums[i] ?? 0) - (y.nums[i] ?? 0);
    if (d !== 0) return d;
  }
  if (x.pre === y.pre) return 0;
  if (x.pre === undefined) return 1;
  if (y.pre === undefined) return -1;
  return x.pre < y.pre ? -1 : 1;
}
