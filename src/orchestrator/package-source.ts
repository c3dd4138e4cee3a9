import { access, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { HelmError, helmPull } from '../cluster/helm.ts';
import { ConfigError } from '../config/env.ts';
import type { OrchestratorConfig, TenantPackageReference } from '../config/orchestrator.ts';
import type { Logger } from '../log/index.ts';
import {
  BUNDLED_CHARTS_DIR,
  type ChartCatalog,
  catalogOf,
  loadChartCatalog,
  readChartMeta,
} from './catalog.ts';

/**
 * A tenant package that could not be pulled, or is not what its reference pins. A
 * ConfigError: the process stops with the reference in its one-line message, because
 * installing anything else than the pinned package would be wrong (docs/orchestrator.md
 * "Tenant packages from a registry").
 */
export class TenantPackageError extends ConfigError {
  override name = 'TenantPackageError';
  readonly reference: string;

  constructor(reference: string, why: string, options?: ErrorOptions) {
    super(`SVC_TENANT_PACKAGES: ${reference}: ${why}`, options);
    this.reference = reference;
  }
}

export interface TenantPackagePull {
  packages: TenantPackageReference[];
  caFile?: string | undefined;
  /** Pulled charts live in `<dir>/<digest hex>/svc-tenant` and are reused while they last. */
  dir: string;
  helmBinary: string;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Tries per package when the registry cannot be reached (default 5, backing off from 1 s). */
  attempts?: number;
  retryMs?: number;
  timeoutMs?: number;
}

/** What a registry answers for a digest it does not hold, or a reader it refuses: no retry. */
const PERMANENT =
  /not found|manifest unknown|name unknown|unauthorized|denied|forbidden|x509|certificate/i;
/** Marks a pulled directory as checked (name and digest), so a restart may reuse it. */
const CHECKED = '.svc-pulled-digest';

/**
 * Pulls every package (anonymously: spec §9.1 publishes them for anyone to pull) by its digest
 * and checks that each is an `svc-tenant` chart and that helm pulled exactly that digest.
 */
export async function pullTenantPackages(
  o: TenantPackagePull,
): Promise<{ path: string; source: string }[]> {
  const helmHome = path.join(o.dir, '.helm');
  await mkdir(helmHome, { recursive: true });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HELM_CACHE_HOME: path.join(helmHome, 'cache'),
    HELM_CONFIG_HOME: path.join(helmHome, 'config'),
    HELM_DATA_HOME: path.join(helmHome, 'data'),
  };
  if (o.caFile !== undefined) {
    try {
      await access(o.caFile);
    } catch {
      throw new ConfigError(`SVC_TENANT_PACKAGES_CA_FILE: cannot read ${o.caFile}`);
    }
  }
  const pulled: { path: string; source: string }[] = [];
  for (const pkg of o.packages) {
    const chartDir = await pullOne(o, pkg, env, path.join(helmHome, 'anonymous.json'));
    const meta = await readChartMeta(chartDir);
    o.logger.info(
      { reference: pkg.reference, version: meta?.version, path: chartDir },
      'tenant package from the registry',
    );
    pulled.push({ path: chartDir, source: pkg.reference });
  }
  return pulled;
}

async function pullOne(
  o: TenantPackagePull,
  pkg: TenantPackageReference,
  env: NodeJS.ProcessEnv,
  registryConfig: string,
): Promise<string> {
  const home = path.join(o.dir, pkg.digest.replace('sha256:', ''));
  const chartDir = path.join(home, 'svc-tenant');
  const checked = await readFile(path.join(home, CHECKED), 'utf8').catch(() => '');
  if (checked === pkg.reference) return chartDir;

  const attempts = o.attempts ?? 5;
  let delay = o.retryMs ?? 1_000;
  const staging = `${home}.partial`;
  for (let attempt = 1; ; attempt++) {
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    try {
      const digest = await helmPull({
        binary: o.helmBinary,
        reference: pkg.reference,
        untarDir: staging,
        caFile: o.caFile,
        registryConfig,
        env,
        timeoutMs: o.timeoutMs ?? 120_000,
      });
      if (digest !== undefined && digest !== pkg.digest) {
        throw new TenantPackageError(pkg.reference, `the registry served ${digest}`);
      }
      break;
    } catch (error) {
      await rm(staging, { recursive: true, force: true });
      if (!(error instanceof HelmError)) throw error;
      const why = error.message.replace(/^helm pull failed \(exit \d+\): /, '');
      if (PERMANENT.test(error.stderr) || attempt >= attempts) {
        const tries = attempt > 1 ? ` (after ${attempt} tries)` : '';
        throw new TenantPackageError(pkg.reference, `cannot pull it${tries}: ${why}`, {
          cause: error,
        });
      }
      o.logger.warn(
        { reference: pkg.reference, attempt, retryInMs: delay, err: why },
        'tenant package pull failed; retrying',
      );
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 30_000);
    }
  }
  const meta = await readChartMeta(path.join(staging, 'svc-tenant'));
  if (meta?.name !== 'svc-tenant' || typeof meta.version !== 'string') {
    await rm(staging, { recursive: true, force: true });
    throw new TenantPackageError(pkg.reference, 'the pulled package is not an svc-tenant chart');
  }
  await writeFile(path.join(staging, CHECKED), pkg.reference);
  await rm(home, { recursive: true, force: true });
  await rename(staging, home);
  return chartDir;
}

/**
 * The tenant packages this process installs from: pulled from SVC_TENANT_PACKAGES when set
 * (only those: the pinned digests are the release), else the charts under
 * SVC_TENANT_CHARTS_DIR (default the bundled ones).
 */
export async function loadTenantCatalog(o: {
  orchestrator: Pick<
    OrchestratorConfig,
    'chartsDir' | 'tenantPackages' | 'tenantPackagesCaFile' | 'helmBinary'
  >;
  dataDir: string;
  logger: Pick<Logger, 'info' | 'warn'>;
}): Promise<ChartCatalog> {
  const { orchestrator } = o;
  if (orchestrator.tenantPackages.length === 0) {
    return loadChartCatalog(orchestrator.chartsDir ?? BUNDLED_CHARTS_DIR);
  }
  const charts = await pullTenantPackages({
    packages: orchestrator.tenantPackages,
    caFile: orchestrator.tenantPackagesCaFile,
    dir: path.join(o.dataDir, 'tenant-packages'),
    helmBinary: orchestrator.helmBinary,
    logger: o.logger,
  });
  try {
    return await catalogOf(charts, 'SVC_TENANT_PACKAGES');
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
}
