// Issue 32: tenant packages pulled by digest (src/orchestrator/package-source.ts), the paths a
// live registry does not reach (test/packaging/registry.test.ts pulls from a real one): a
// registry that cannot be reached is retried and then named; a CA file that cannot be read is
// a configuration error before helm runs; two packages of one version are refused.
import assert from 'node:assert/strict';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { loadConfig } from '../../src/config/index.ts';
import { BUNDLED_CHARTS_DIR, catalogOf } from '../../src/orchestrator/catalog.ts';
import {
  loadTenantCatalog,
  pullTenantPackages,
  TenantPackageError,
} from '../../src/orchestrator/package-source.ts';
import { getTestCluster } from '../support/cluster.ts';

const helm = path.join(getTestCluster().binDir, 'helm');
const work = await mkdtemp(path.join(tmpdir(), 'svc-package-source-'));
after(() => rm(work, { recursive: true, force: true }));

/** A loopback port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function packagesOf(value: string) {
  return loadConfig({ SVC_TENANT_PACKAGES: value }).orchestrator.tenantPackages;
}

test('issue 32: an unreachable registry is tried again, then stops with the reference and the last error; nothing is kept', async () => {
  const reference = `oci://127.0.0.1:${await closedPort()}/acme/charts/svc-tenant@sha256:${'d'.repeat(64)}`;
  const dir = path.join(work, 'unreachable');
  const warnings: unknown[] = [];
  const error = await pullTenantPackages({
    packages: packagesOf(reference),
    dir,
    helmBinary: helm,
    attempts: 3,
    retryMs: 10,
    logger: { info: () => undefined, warn: (fields: unknown) => warnings.push(fields) },
  }).then(
    () => assert.fail('pulled from a closed port'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof TenantPackageError);
  assert.equal(error.reference, reference);
  assert.match(
    error.message,
    new RegExp(
      `^SVC_TENANT_PACKAGES: ${reference.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: cannot pull it \\(after 3 tries\\): .*connection refused`,
    ),
  );
  assert.equal(warnings.length, 2, 'a warning before each retry');
  assert.deepEqual(await readdir(dir), ['.helm'], 'no pulled or partial package left');
});

test('issue 32: an unreadable CA file is a configuration error before anything is pulled', async () => {
  await assert.rejects(
    loadTenantCatalog({
      orchestrator: {
        chartsDir: undefined,
        tenantPackages: packagesOf(`oci://registry.test/svc-tenant@sha256:${'e'.repeat(64)}`),
        tenantPackagesCaFile: path.join(work, 'no-such-ca.pem'),
        helmBinary: helm,
      },
      dataDir: path.join(work, 'data'),
      logger: { info: () => undefined, warn: () => undefined },
    }),
    {
      name: 'ConfigError',
      message: `SVC_TENANT_PACKAGES_CA_FILE: cannot read ${path.join(work, 'no-such-ca.pem')}`,
    },
  );
});

test('issue 32: a catalog of given charts refuses a directory that is not svc-tenant and two of one version', async () => {
  const bundled = path.join(BUNDLED_CHARTS_DIR, 'svc-tenant');
  const twin = path.join(work, 'twin');
  await cp(bundled, twin, { recursive: true });
  const version = /^version: (.*)$/m.exec(
    await readFile(path.join(bundled, 'Chart.yaml'), 'utf8'),
  )?.[1];
  await assert.rejects(
    catalogOf(
      [
        { path: bundled, source: 'oci://a.test/svc-tenant@sha256:1' },
        { path: twin, source: 'oci://b.test/svc-tenant@sha256:2' },
      ],
      'SVC_TENANT_PACKAGES',
    ),
    {
      message: `two svc-tenant charts of version ${version} in SVC_TENANT_PACKAGES: oci://a.test/svc-tenant@sha256:1 and oci://b.test/svc-tenant@sha256:2`,
    },
  );
  const other = path.join(work, 'other');
  await cp(bundled, other, { recursive: true });
  const chartFile = path.join(other, 'Chart.yaml');
  await writeFile(
    chartFile,
    (await readFile(chartFile, 'utf8')).replace(/^name: .*$/m, 'name: other'),
  );
  await assert.rejects(catalogOf([{ path: other, source: 'oci://c.test/x' }], 'test'), {
    message: 'oci://c.test/x is not an svc-tenant chart',
  });
  const catalog = await catalogOf([{ path: bundled, source: 'oci://a.test/svc-tenant' }], 'test');
  assert.deepEqual(catalog.versions(), [version]);
  assert.equal(catalog.get(version ?? '')?.source, 'oci://a.test/svc-tenant');
});
