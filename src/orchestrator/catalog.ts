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
}

export interface ChartCatalog {
  versions(): string[];
  get(version: string): TenantChart | undefined;
}

/** The repository's (and the container image's) own charts directory. */
export const BUNDLED_CHARTS_DIR = assetPath('charts');

/**
 * Every `svc-tenant` chart directly under `dir` (spec §9.1: the tenant package has its own
 * semver). svc ships one; an MSSP that keeps older versions beside it can upgrade between them,
 * and the compatibility matrix decides which moves are allowed (§9.2).
 */
export async function loadChartCatalog(dir: string = BUNDLED_CHARTS_DIR): Promise<ChartCatalog> {
  const charts = new Map<string, TenantChart>();
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const chartDir = path.join(dir, entry.name);
    let meta: { name?: string; version?: string };
    try {
      meta = parse(await readFile(path.join(chartDir, 'Chart.yaml'), 'utf8')) ?? {};
    } catch {
      continue;
    }
    if (meta.name !== 'svc-tenant' || typeof meta.version !== 'string') continue;
    if (charts.has(meta.version))
      throw new Error(`two svc-tenant charts of version ${meta.version} under ${dir}`);
    const defaults: unknown = parse(await readFile(path.join(chartDir, 'values.yaml'), 'utf8'));
    charts.set(meta.version, { version: meta.version, path: chartDir, defaults });
  }
  return {
    versions: () => [...charts.keys()].sort(compareSemver),
    get: (version) => charts.get(version),
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
