// Issue 32, a release published for real: scripts/release/publish.sh (the script release.yml
// runs) pushes the image and both charts to a real OCI registry (testcluster/registry: the CNCF
// distribution registry, TLS on loopback, anonymous pull, push only with credentials), with the
// system chart pinning the pushed image by digest (spec §9.3.1); the test then pulls anonymously
// and installs the system chart from the registry into the test cluster.
//
// Not covered here: build.sh itself (the binary and image come from the cache
// test/packaging/artifacts.ts keeps, which runs the same build scripts) and the GitHub release
// (publish.sh --no-github-release: there is no GitHub here; release.test.ts checks that step's
// command in a dry run).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ApiException, AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { type Registry, startRegistry } from '../../testcluster/registry/registry.ts';
import {
  helmWithValues,
  mergeValues,
  sampleValues,
  type Values,
} from '../policies/system-chart.ts';
import {
  createTenantVia,
  svcProcessEnv,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
  waitForStep,
} from '../provisioning/support.ts';
import { getTestCluster } from '../support/cluster.ts';
import { testStorageClass } from '../support/volumes.ts';
import { builtBinary, builtImage } from './artifacts.ts';
import { exec, ROOT } from './exec.ts';

const cluster = getTestCluster();
const helm = path.join(cluster.binDir, 'helm');
const OWNER = 'acme-mssp';
/** A database, install namespace and API for the tenant tests; their orchestrator is an OS process. */
const o = useOrchestration({ run: false });

const version = (
  JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
  }
).version;
const tenantVersion = (
  parse(await readFile(path.join(ROOT, 'charts/svc-tenant/Chart.yaml'), 'utf8')) as {
    version: string;
  }
).version;

let registry: Registry;
let work: string;
/** The release directory publish.sh reads: the cached binary and image, linked. */
let release: string;
/** The manifest digest of the image in the archive: what the registry must hold. */
let archiveDigest: string;
/** A helm registry config nobody logged into: every helm call below is anonymous. */
let anonymousHelm: string[];
/** `oci://…/svc-tenant@sha256:…`: the published tenant package, as svc-system names it. */
let tenantPackage: string;

before(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'svc-registry-test-'));
  const [image, binary, started] = await Promise.all([
    builtImage(),
    builtBinary(),
    startRegistry({ dir: work }),
  ]);
  registry = started;
  release = path.join(work, 'release');
  await mkdir(release);
  await symlink(binary, path.join(release, 'svc-linux-x64'));
  await symlink(image, path.join(release, 'svc-image.oci.tar'));
  const index = JSON.parse((await exec('tar', ['-xOf', image, './index.json'])).stdout) as {
    manifests: { digest: string; annotations?: Record<string, string> }[];
  };
  const tagged = index.manifests.find(
    (m) => m.annotations?.['org.opencontainers.image.ref.name'] === version,
  );
  assert.ok(tagged, `the archive tags the image ${version}`);
  archiveDigest = tagged.digest;
  anonymousHelm = [
    '--ca-file',
    registry.caFile,
    '--registry-config',
    path.join(work, 'helm-anonymous.json'),
  ];
});

after(async () => {
  await registry?.stop();
  await rm(work, { recursive: true, force: true });
});

/** publish.sh against the test registry with the given credentials (none when undefined). */
function publish(credentials?: { user: string; password: string }, extra: string[] = []) {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_HELM_BIN: helm,
    // node from the project first (publish.sh reads the archive's index with it).
    PATH: `${path.join(ROOT, 'node_modules/.bin')}${path.delimiter}${process.env.PATH ?? ''}`,
    HOME: work,
  };
  delete env.REGISTRY_USER;
  delete env.REGISTRY_PASSWORD;
  if (credentials) {
    env.REGISTRY_USER = credentials.user;
    env.REGISTRY_PASSWORD = credentials.password;
  }
  return exec(
    'bash',
    [
      'scripts/release/publish.sh',
      '--registry',
      registry.host,
      '--owner',
      OWNER,
      '--dir',
      release,
      '--ca-file',
      registry.caFile,
      '--no-github-release',
      ...extra,
    ],
    env,
  );
}

/** Anonymous skopeo against the test registry (its CA trusted, no credentials at all). */
function skopeo(args: string[]) {
  return exec('skopeo', [
    ...args.slice(0, 1),
    '--cert-dir',
    registry.certDir,
    '--no-creds',
    ...args.slice(1),
  ]);
}

/** The registry's manifest for `ref` (anonymous) and its digest. */
async function manifestOf(
  ref: string,
): Promise<{ digest: string; manifest: { config?: { mediaType?: string } } }> {
  const raw = await skopeo(['inspect', '--raw', `docker://${ref}`]);
  assert.equal(raw.code, 0, raw.stderr);
  return {
    digest: `sha256:${createHash('sha256').update(raw.stdout).digest('hex')}`,
    manifest: JSON.parse(raw.stdout) as { config?: { mediaType?: string } },
  };
}

test('issue 32: pushes without credentials or with wrong ones are refused and write nothing', async () => {
  const none = await publish();
  assert.notEqual(none.code, 0);
  assert.match(none.stderr, /REGISTRY_USER is required/);

  const wrong = await publish({ user: registry.user, password: 'not-the-password' });
  assert.notEqual(wrong.code, 0);
  assert.match(wrong.stderr, /401|unauthorized|invalid username\/password/i, wrong.stderr);
  const stranger = await publish({ user: 'someone-else', password: registry.password });
  assert.notEqual(stranger.code, 0);

  // Straight at the registry, skipping publish.sh's login: an anonymous push is denied.
  const image = path.join(release, 'svc-image.oci.tar');
  const anonymous = await exec('skopeo', [
    'copy',
    '--dest-cert-dir',
    registry.certDir,
    '--dest-no-creds',
    `oci-archive:${image}:${version}`,
    `docker://${registry.host}/${OWNER}/svc:anonymous`,
  ]);
  assert.notEqual(anonymous.code, 0);
  assert.match(anonymous.stderr, /unauthorized|denied|authentication required/i, anonymous.stderr);
  const chart = path.join(work, 'anonymous-chart');
  const packaged = await exec(helm, ['package', path.join(ROOT, 'charts/svc-tenant'), '-d', chart]);
  assert.equal(packaged.code, 0, packaged.stderr);
  const helmPush = await exec(helm, [
    'push',
    path.join(chart, `svc-tenant-${tenantVersion}.tgz`),
    `oci://${registry.host}/${OWNER}/charts`,
    ...anonymousHelm,
  ]);
  assert.notEqual(helmPush.code, 0);
  assert.match(helmPush.stderr, /unauthorized|denied|authentication required/i, helmPush.stderr);

  // Nothing arrived: every repository is still unknown to an anonymous reader.
  for (const ref of [
    `${OWNER}/svc:${version}`,
    `${OWNER}/svc:anonymous`,
    `${OWNER}/charts/svc-system:${version}`,
    `${OWNER}/charts/svc-tenant:${tenantVersion}`,
  ]) {
    const inspect = await skopeo(['inspect', '--raw', `docker://${registry.host}/${ref}`]);
    assert.notEqual(inspect.code, 0, `${ref} was not pushed`);
    assert.match(inspect.stderr, /manifest unknown|name unknown|not found/i, inspect.stderr);
  }
});

test('issue 32: publish.sh pushes the image and both charts; anyone pulls them; svc-system pins the image digest', async () => {
  const published = await publish({ user: registry.user, password: registry.password });
  assert.equal(published.code, 0, `${published.stdout}\n${published.stderr}\n${registry.output()}`);
  const imageRef = `${registry.host}/${OWNER}/svc`;
  assert.match(published.stderr, new RegExp(`image ${imageRef}:${version}@${archiveDigest}`));

  // The image, anonymously, under the archive's digest, by tag and by digest.
  const byTag = await manifestOf(`${imageRef}:${version}`);
  assert.equal(byTag.digest, archiveDigest, 'the registry stores the archive manifest unchanged');
  const byDigest = await skopeo(['inspect', `docker://${imageRef}@${archiveDigest}`]);
  assert.equal(byDigest.code, 0, byDigest.stderr);
  assert.equal((JSON.parse(byDigest.stdout) as { Digest: string }).Digest, archiveDigest);

  // SHA256SUMS covers the binary and the charts as published.
  const files = (await readdir(release)).sort();
  assert.deepEqual(files, [
    'SHA256SUMS',
    'svc-image.digest',
    'svc-image.oci.tar',
    'svc-linux-x64',
    `svc-system-${version}.tgz`,
    `svc-tenant-${tenantVersion}.tgz`,
  ]);
  const sums = await exec('bash', ['-c', `cd '${release}' && sha256sum -c SHA256SUMS`]);
  assert.equal(sums.code, 0, sums.stdout);
  assert.match(sums.stdout, new RegExp(`svc-system-${version}\\.tgz: OK`));

  // Both charts, anonymously, by version; the system chart again by its manifest digest.
  const charts = `${registry.host}/${OWNER}/charts`;
  const system = await manifestOf(`${charts}/svc-system:${version}`);
  assert.equal(system.manifest.config?.mediaType, 'application/vnd.cncf.helm.config.v1+json');
  const tenant = await manifestOf(`${charts}/svc-tenant:${tenantVersion}`);
  tenantPackage = `oci://${charts}/svc-tenant@${tenant.digest}`;
  assert.match(published.stderr, new RegExp(`tenant package ${escapeRegExp(tenantPackage)}`));
  const pulled = path.join(work, 'pulled');
  await mkdir(pulled);
  const pull = (ref: string, extra: string[] = []) =>
    exec(helm, ['pull', `oci://${ref}`, '-d', pulled, ...extra, ...anonymousHelm]);
  const tenantPull = await pull(`${charts}/svc-tenant`, ['--version', tenantVersion]);
  assert.equal(tenantPull.code, 0, tenantPull.stderr);
  const systemPull = await pull(`${charts}/svc-system@${system.digest}`);
  assert.equal(systemPull.code, 0, systemPull.stderr);
  // helm names a chart pulled by digest after the digest.
  const pulledSystem = `svc-system@${system.digest.replace(':', '-')}.tgz`;
  assert.deepEqual((await readdir(pulled)).sort(), [
    pulledSystem,
    `svc-tenant-${tenantVersion}.tgz`,
  ]);
  const sha = async (file: string) =>
    createHash('sha256')
      .update(await readFile(file))
      .digest('hex');
  assert.equal(
    await sha(path.join(pulled, pulledSystem)),
    await sha(path.join(release, `svc-system-${version}.tgz`)),
    'the chart pulled by digest is the one publish.sh packaged',
  );

  // A digest the repository does not hold — random, or the tenant chart's — is refused.
  const refusedDir = path.join(work, 'refused');
  await mkdir(refusedDir);
  for (const digest of [`sha256:${randomBytes(32).toString('hex')}`, tenant.digest]) {
    const refused = await exec(helm, [
      'pull',
      `oci://${charts}/svc-system@${digest}`,
      '-d',
      refusedDir,
      ...anonymousHelm,
    ]);
    assert.notEqual(refused.code, 0, `svc-system@${digest} must not pull`);
    assert.match(refused.stderr, /not found|manifest unknown/i, refused.stderr);
  }
  assert.deepEqual(await readdir(refusedDir), []);

  // The pulled chart's values pin the pushed image, and every svc container runs exactly it:
  // <registry>/<owner>/svc:<version>@<digest> (the runtime pulls the digest; the tag documents it).
  const values = parse(
    (await exec('tar', ['-xzOf', path.join(pulled, pulledSystem), 'svc-system/values.yaml']))
      .stdout,
  ) as {
    image: { registry: string; digest: string };
    database: { image: { digest: string } };
    tenants: { packages: string[] };
  };
  assert.equal(values.image.registry, `${registry.host}/${OWNER}`);
  // …and name the tenant package svc installs by the digest the registry stores it under.
  assert.deepEqual(values.tenants.packages, [tenantPackage]);
  assert.equal(values.image.digest, archiveDigest);
  assert.equal(values.database.image.digest, '', 'only svc image is rewritten');
  const pinned = `${imageRef}:${version}@${archiveDigest}`;
  const rendered = await helmWithValues(
    helm,
    ['template', 'svc', path.join(pulled, pulledSystem), '--namespace', 'svc-system'],
    operatorValues('svc-system'),
  );
  const svcImages = [...rendered.matchAll(/image: "?([^"\s]+\/svc[:@][^"\s]*)"?/g)].map(
    (m) => m[1],
  );
  assert.ok(svcImages.length >= 3, rendered.slice(0, 2000));
  for (const image of svcImages) assert.equal(image, pinned);
  assert.match(rendered, new RegExp(`name: SVC_ADAPTER_IMAGE\\s+value: "${escapeRegExp(pinned)}"`));
});

test('issue 32: helm install oci://…/svc-system@<digest> from the registry, anonymously, runs the pushed image digest', {
  timeout: 240_000,
}, async () => {
  const namespace = await createTestNamespace(cluster, 'svc-system');
  const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
  // As docs/packaging.md tells an operator: the chart by its manifest digest.
  const ref = `${registry.host}/${OWNER}/charts/svc-system`;
  const chart = `oci://${ref}@${(await manifestOf(`${ref}:${version}`)).digest}`;
  try {
    await helmWithValues(
      helm,
      [
        'install',
        'svc',
        chart,
        '--namespace',
        namespace,
        '--kubeconfig',
        cluster.kubeconfigPath,
        '--timeout',
        '2m',
        ...anonymousHelm,
      ],
      operatorValues(namespace),
    );
    const pinned = `${registry.host}/${OWNER}/svc:${version}@${archiveDigest}`;
    for (const name of ['svc-api', 'svc-orchestrator', 'svc-worker']) {
      const deployment = await apps.readNamespacedDeployment({ name, namespace });
      const images = deployment.spec?.template.spec?.containers.map((c) => c.image);
      assert.deepEqual(images, [pinned], name);
      // The tenant package the installed svc pulls: the published one, by digest.
      const env = deployment.spec?.template.spec?.containers[0]?.env ?? [];
      const packages = env.find((e) => e.name === 'SVC_TENANT_PACKAGES')?.value;
      assert.equal(packages, tenantPackage, name);
    }
    const list = await exec(helm, [
      'list',
      '--namespace',
      namespace,
      '--kubeconfig',
      cluster.kubeconfigPath,
      '-o',
      'json',
    ]);
    assert.equal(list.code, 0, list.stderr);
    const releases = JSON.parse(list.stdout) as { name: string; status: string; chart: string }[];
    assert.deepEqual(
      releases.map((r) => [r.name, r.status, r.chart]),
      [['svc', 'deployed', `svc-system-${version}`]],
    );
  } finally {
    await exec(helm, [
      'uninstall',
      'svc',
      '--namespace',
      namespace,
      '--kubeconfig',
      cluster.kubeconfigPath,
    ]);
    await core.deleteNamespace({ name: namespace }).catch((error: unknown) => {
      if (!(error instanceof ApiException && error.code === 404)) throw error;
    });
  }
});

/** What an operator passes: the §2.9 keys without defaults, and no image.* (the chart pins it). */
function operatorValues(namespace: string): Values {
  return mergeValues(sampleValues(namespace, { installId: randomUUID(), msspId: randomUUID() }), {
    image: null,
  });
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `svc orchestrator` as its own OS process on this file's database, install and cluster. */
function startOrchestrator(dataDir: string, packages: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'orchestrator'], {
    cwd: ROOT,
    env: svcProcessEnv(o, dataDir, {
      SVC_LOG_LEVEL: 'info',
      SVC_HELM_BIN: helm,
      SVC_TENANT_STORAGE_CLASS: testStorageClass,
      SVC_ADAPTER_IMAGE: 'registry.test/svc-adapter:0.1.0',
      SVC_API_URL: o.deps.settings.apiUrl,
      SVC_ORCHESTRATOR_POLL: '200ms',
      SVC_TENANT_PACKAGES: packages,
      SVC_TENANT_PACKAGES_CA_FILE: registry.caFile,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
  });
  child.stderr.on('data', (d) => {
    output += d;
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return { child, exited, output: () => output };
}

test('issue 32: an orchestrator given the published tenant package by digest pulls it from the registry, anonymously, and installs tenants from it', {
  timeout: 400_000,
}, async () => {
  assert.ok(tenantPackage, 'the publish test ran first');
  const dataDir = await mkdtemp(path.join(work, 'orchestrator-'));
  const slug = uniqueSlug('oci');
  const id = await createTenantVia(o, tenantConfig(slug));
  const run = startOrchestrator(dataDir, tenantPackage);
  try {
    await waitForStep(o, id, 'step:package_installed');
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${run.output()}`);
  } finally {
    run.child.kill('SIGTERM');
    await run.exited;
  }
  // Where it came from: logged with the reference, and the pulled chart kept by its digest.
  const logged = run
    .output()
    .split('\n')
    .filter((line) => line.includes('tenant package from the registry'))
    .map((line) => JSON.parse(line) as { reference: string; version: string });
  assert.deepEqual(
    logged.map((l) => [l.reference, l.version]),
    [[tenantPackage, tenantVersion]],
  );
  const digestHex = tenantPackage.split('@sha256:')[1] ?? '';
  const pulled = path.join(dataDir, 'tenant-packages', digestHex);
  assert.equal(await readFile(path.join(pulled, '.svc-pulled-digest'), 'utf8'), tenantPackage);
  const pulledChart = parse(
    await readFile(path.join(pulled, 'svc-tenant', 'Chart.yaml'), 'utf8'),
  ) as { name: string; version: string };
  assert.deepEqual([pulledChart.name, pulledChart.version], ['svc-tenant', tenantVersion]);
  // The tenant's release is that chart: helm's own record of what it installed.
  const metadata = await exec(helm, [
    'get',
    'metadata',
    'svc-tenant',
    '--namespace',
    `tenant-${slug}`,
    '--kubeconfig',
    cluster.kubeconfigPath,
    '-o',
    'json',
  ]);
  assert.equal(metadata.code, 0, metadata.stderr);
  const release = JSON.parse(metadata.stdout) as { chart: string; version: string };
  assert.deepEqual([release.chart, release.version], ['svc-tenant', tenantVersion]);
  assert.equal((await tenantRow(o, id))?.chart_version, tenantVersion);
});

test('issue 32: a tenant package digest the registry does not hold stops the orchestrator with the reference named; nothing is kept', {
  timeout: 120_000,
}, async () => {
  assert.ok(tenantPackage, 'the publish test ran first');
  const repository = tenantPackage.split('@')[0] ?? '';
  const system = await manifestOf(`${registry.host}/${OWNER}/charts/svc-system:${version}`);
  for (const digest of [`sha256:${randomBytes(32).toString('hex')}`, system.digest]) {
    const wrong = `${repository}@${digest}`;
    const dataDir = await mkdtemp(path.join(work, 'refused-'));
    const run = startOrchestrator(dataDir, wrong);
    assert.equal(await run.exited, 1, run.output());
    assert.match(
      run.output(),
      new RegExp(
        `^svc: SVC_TENANT_PACKAGES: ${escapeRegExp(wrong)}: cannot pull it: .*(not found|manifest unknown)`,
        'im',
      ),
    );
    assert.deepEqual(
      (await readdir(path.join(dataDir, 'tenant-packages'))).filter((f) => f !== '.helm'),
      [],
      'no pulled package is left',
    );
  }
  // A reference that is not one never reaches the registry: the configuration is refused.
  const dataDir = await mkdtemp(path.join(work, 'tagged-'));
  const tagged = startOrchestrator(dataDir, `${repository}:${tenantVersion}`);
  assert.equal(await tagged.exited, 2, tagged.output());
  assert.match(
    tagged.output(),
    /^svc: invalid configuration: SVC_TENANT_PACKAGES: entry 1 .* it is not pinned by @sha256:<64 hex>/m,
  );
});

test('issue 32: stop() ends the registry and its token server and removes their files', async () => {
  const { host } = registry;
  assert.ok((await readdir(work)).some((f) => f.startsWith('svc-registry-')));
  await registry.stop();
  assert.deepEqual(
    (await readdir(work)).filter((f) => f.startsWith('svc-registry-')),
    [],
    'the registry directory is gone',
  );
  const [hostname, port] = host.split(':');
  const refused = await new Promise<string>((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
  });
  assert.equal(refused, 'ECONNREFUSED');
  // A second stop (the after hook's) is harmless.
  await registry.stop();
});
