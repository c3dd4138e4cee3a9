// Issues 17 and 32, the release: .github/workflows/release.yml passes actionlint (with
// shellcheck on its run: scripts), and the scripts it calls — chart packaging, SHA256SUMS,
// publishing — do what the workflow relies on when run here (publishing as a dry run: the exact
// commands; test/packaging/registry.test.ts publishes for real to a test registry).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import {
  access,
  appendFile,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  writeFile,
} from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { parse } from 'yaml';
import { ensureBinaries } from '../../testcluster/harness.ts';
import { exec, ROOT, type Run } from './exec.ts';

const cache = process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache');

const actionlintVersion = /^version=(\S+)$/m.exec(
  await readFile(path.join(ROOT, '.ci/install-actionlint'), 'utf8'),
)?.[1];
const actionlint =
  process.env.SVC_ACTIONLINT ??
  path.join(cache, 'svc', 'testcluster', `actionlint-${actionlintVersion}`, 'actionlint');

const version = (
  JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
  }
).version;

let work: string;
/** The test cluster's pinned helm, which scripts/release/helm.sh would also pick. */
let helmEnv: NodeJS.ProcessEnv;

before(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'svc-release-'));
  helmEnv = {
    ...process.env,
    SVC_HELM_BIN: path.join((await ensureBinaries()).binDir, 'helm'),
  };
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

async function lint(dir: string): Promise<Run> {
  try {
    await access(actionlint, constants.X_OK);
  } catch {
    throw new Error(`${actionlint} is missing: run \`bash .ci/install-actionlint\``);
  }
  const files = (await readdir(path.join(dir, '.github/workflows')))
    .filter((f) => f.endsWith('.yml'))
    .map((f) => path.join(dir, '.github/workflows', f));
  assert.ok(files.length > 0, `workflows under ${dir}`);
  return exec(actionlint, ['-no-color', ...files]);
}

test('issue 17: actionlint (with shellcheck) passes every workflow', async () => {
  const { stdout } = await exec('bash', ['-c', 'command -v shellcheck || true']);
  assert.ok(stdout.trim(), 'shellcheck is installed, so actionlint checks the run: scripts');
  const result = await lint(ROOT);
  assert.equal(result.code, 0, `actionlint:\n${result.stdout}${result.stderr}`);
});

test('issue 17: actionlint fails a broken copy of the release workflow', async () => {
  const dir = path.join(work, 'broken');
  await mkdir(path.join(dir, '.github/workflows'), { recursive: true });
  const original = await readFile(path.join(ROOT, '.github/workflows/release.yml'), 'utf8');
  // An unknown permission scope, and an unquoted expansion shellcheck reports (SC2086).
  const broken = original
    .replace('packages: write', 'pakages: write')
    .replace('bash scripts/release/build.sh --tag "$GITHUB_REF_NAME"', 'bash $BUILD --tag x');
  assert.notEqual(broken, original);
  await writeFile(path.join(dir, '.github/workflows/release.yml'), broken);
  const result = await lint(dir);
  assert.notEqual(result.code, 0, 'the broken copy fails');
  assert.match(result.stdout, /pakages/, result.stdout);
  assert.match(result.stdout, /SC2086/, result.stdout);
});

test('issue 17: the release workflow runs on v* tags, pins actions by commit, least privilege', async () => {
  const workflow = parse(
    await readFile(path.join(ROOT, '.github/workflows/release.yml'), 'utf8'),
  ) as {
    on: { push: { tags: string[] } };
    permissions: Record<string, string>;
    jobs: {
      release: { permissions: Record<string, string>; steps: { uses?: string; run?: string }[] };
    };
  };
  assert.deepEqual(workflow.on, { push: { tags: ['v*'] } });
  assert.deepEqual(workflow.permissions, {}, 'nothing granted at the top');
  const { permissions, steps } = workflow.jobs.release;
  assert.deepEqual(permissions, { contents: 'write', packages: 'write' });
  const uses = steps.flatMap((s) => (s.uses ? [s.uses] : []));
  assert.ok(uses.length >= 3);
  for (const u of uses) assert.match(u, /^[\w-]+\/[\w-]+@[0-9a-f]{40}$/, `${u} is pinned`);
  // Each pin names its tag in a comment (what a reviewer checks with `git ls-remote --tags`; the
  // tags themselves are out of reach here: docs/packaging.md "Release").
  const raw = await readFile(path.join(ROOT, '.github/workflows/release.yml'), 'utf8');
  const pinLines = raw.split('\n').filter((line) => /^\s*-?\s*uses:/.test(line));
  assert.equal(pinLines.length, uses.length);
  for (const line of pinLines) {
    assert.match(line, /uses: [\w-]+\/[\w-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$/, line);
  }
  const runs = steps.map((s) => s.run ?? '').join('\n');
  assert.match(runs, /scripts\/release\/build\.sh/);
  assert.match(runs, /scripts\/release\/publish\.sh/);
  // The workflow publishes what registry.test.ts publishes, plus the GitHub release, signed.
  assert.doesNotMatch(runs, /--no-github-release|--unrecorded-ok|--dry-run/);
  const publishStep = steps.find((s) => s.run?.includes('scripts/release/publish.sh')) as {
    env?: Record<string, string>;
  };
  assert.deepEqual(Object.keys(publishStep.env ?? {}).sort(), [
    'COSIGN_KEY',
    'COSIGN_PASSWORD',
    'GH_REPO',
    'GH_TOKEN',
    'OWNER',
    'REGISTRY_PASSWORD',
    'REGISTRY_USER',
  ]);
});

test('issue 17: package-charts.sh writes both charts as <name>-<Chart.yaml version>.tgz', async () => {
  const out = path.join(work, 'charts');
  const result = await exec('bash', ['scripts/release/package-charts.sh', '--out', out], helmEnv);
  assert.equal(result.code, 0, result.stderr);
  const expected: string[] = [];
  for (const chart of ['svc-system', 'svc-tenant']) {
    const meta = parse(await readFile(path.join(ROOT, 'charts', chart, 'Chart.yaml'), 'utf8')) as {
      name: string;
      version: string;
    };
    assert.equal(meta.name, chart);
    // §9.1: svc-system is svc's release; svc-tenant has its own version (checked apart).
    if (chart === 'svc-system') assert.equal(meta.version, version, 'svc-system is package.json');
    expected.push(`${meta.name}-${meta.version}.tgz`);
    // The packaged Chart.yaml says the same, and templates arrive as files.
    const inside = await exec('tar', [
      '-xzOf',
      path.join(out, expected.at(-1) ?? ''),
      `${chart}/Chart.yaml`,
    ]);
    assert.equal(inside.code, 0, inside.stderr);
    assert.equal((parse(inside.stdout) as { version: string }).version, meta.version);
  }
  assert.deepEqual((await readdir(out)).sort(), expected);
  assert.deepEqual(
    result.stdout.trim().split('\n'),
    expected.map((f) => path.join(out, f)),
  );
  // svc-system's templates/admission is a symlink to policies/: packaged as the policy files.
  const listing = await exec('tar', ['-tzvf', path.join(out, `svc-system-${version}.tgz`)]);
  const policies = (await readdir(path.join(ROOT, 'policies'))).filter((f) => f.endsWith('.yaml'));
  assert.ok(policies.length > 0);
  for (const policy of policies)
    assert.match(listing.stdout, new RegExp(`^-.* svc-system/templates/admission/${policy}$`, 'm'));
});

/** A copy of what package-charts.sh reads, for changing a chart without touching the tree. */
async function copyOfTree(name: string): Promise<string> {
  const copy = path.join(work, name);
  const made = await exec('bash', [
    '-c',
    `mkdir -p '${copy}' && cp -r package.json charts policies scripts testcluster '${copy}/'`,
  ]);
  assert.equal(made.code, 0, made.stderr);
  return copy;
}

async function bumpChart(copy: string, chart: string, to: string): Promise<void> {
  const chartYaml = path.join(copy, 'charts', chart, 'Chart.yaml');
  await writeFile(
    chartYaml,
    (await readFile(chartYaml, 'utf8')).replace(/^version: .*$/m, `version: ${to}`),
  );
}

test('issue 32: package-charts.sh refuses svc-system versioned apart from package.json; svc-tenant has its own', async () => {
  const skewed = await copyOfTree('skewed-system');
  await bumpChart(skewed, 'svc-system', '9.9.9');
  const out = path.join(skewed, 'out');
  const refused = await exec(
    'bash',
    [path.join(skewed, 'scripts/release/package-charts.sh'), '--out', out],
    helmEnv,
  );
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /svc-system\/Chart\.yaml has version 9\.9\.9, package\.json/);
  await assert.rejects(access(out), 'nothing was packaged');

  const tenant = await copyOfTree('own-tenant');
  await bumpChart(tenant, 'svc-tenant', '0.7.3');
  const packaged = await exec(
    'bash',
    [path.join(tenant, 'scripts/release/package-charts.sh'), '--out', path.join(tenant, 'out')],
    helmEnv,
  );
  assert.equal(packaged.code, 0, packaged.stderr);
  assert.deepEqual(packaged.stdout.trim().split('\n'), [
    path.join(tenant, 'out', `svc-system-${version}.tgz`),
    path.join(tenant, 'out', 'svc-tenant-0.7.3.tgz'),
  ]);
});

test('issue 32: package-charts.sh --image-digest pins svc-system to the image; bad values are refused', async () => {
  const out = path.join(work, 'pinned');
  const digest = `sha256:${createHash('sha256').update('image').digest('hex')}`;
  const result = await exec(
    'bash',
    [
      'scripts/release/package-charts.sh',
      '--out',
      out,
      '--image-registry',
      'registry.example.test:5000/acme',
      '--image-digest',
      digest,
    ],
    helmEnv,
  );
  assert.equal(result.code, 0, result.stderr);
  const valuesOf = async (file: string, chart: string) =>
    parse((await exec('tar', ['-xzOf', file, `${chart}/values.yaml`])).stdout) as {
      image?: { registry?: string; digest?: string };
      database: { image: { digest: string } };
      adapter?: { image: { digest: string } };
    };
  const system = await valuesOf(path.join(out, `svc-system-${version}.tgz`), 'svc-system');
  assert.equal(system.image?.registry, 'registry.example.test:5000/acme');
  assert.equal(system.image?.digest, digest);
  assert.equal(system.database.image.digest, '', 'only the svc image is pinned');
  // The chart in the tree is untouched; the packaged one differs only in those two values.
  const original = await readFile(path.join(ROOT, 'charts/svc-system/values.yaml'), 'utf8');
  const packaged = (
    await exec('tar', [
      '-xzOf',
      path.join(out, `svc-system-${version}.tgz`),
      'svc-system/values.yaml',
    ])
  ).stdout;
  const changed = original.split('\n').filter((line, n) => line !== packaged.split('\n')[n]);
  assert.deepEqual(changed, ['  # registry: ghcr.io/example', '  digest: ""']);
  // The tenant chart is not pinned: svc-system hands it SVC_ADAPTER_IMAGE at install time.
  const tenantFile = result.stdout.trim().split('\n')[1] ?? '';
  const tenantValues = await valuesOf(tenantFile, 'svc-tenant');
  assert.equal(tenantValues.adapter?.image.digest, '');

  for (const [args, message] of [
    [
      ['--image-registry', 'r.example.test/acme', '--image-digest', 'sha256:abc'],
      /--image-digest must be sha256:<64 hex>/,
    ],
    [
      ['--image-registry', 'r.example.test/acme', '--image-digest', 'latest'],
      /--image-digest must be/,
    ],
    [
      ['--image-registry', 'R.Example/Acme', '--image-digest', digest],
      /--image-registry must be <host>\/<owner>/,
    ],
    [['--image-registry', 'r.example.test', '--image-digest', digest], /--image-registry must be/],
    [['--image-digest', digest], /--image-registry must be/],
  ] as const) {
    const bad = path.join(work, 'bad-pin');
    const refused = await exec(
      'bash',
      ['scripts/release/package-charts.sh', '--out', bad, ...args],
      helmEnv,
    );
    assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.stderr}`);
    assert.match(refused.stderr, message);
    await assert.rejects(access(bad), 'nothing was packaged');
  }
});

test('issue 32: package-charts.sh --tenant-reference names the tenant package by digest in svc-system; --only packages one chart; bad values are refused', async () => {
  const out = path.join(work, 'tenant-ref');
  const reference = `oci://registry.example.test:5000/acme/charts/svc-tenant@sha256:${'c'.repeat(64)}`;
  const result = await exec(
    'bash',
    [
      'scripts/release/package-charts.sh',
      '--out',
      out,
      '--only',
      'svc-system',
      '--tenant-reference',
      reference,
    ],
    helmEnv,
  );
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(result.stdout.trim().split('\n'), [path.join(out, `svc-system-${version}.tgz`)]);
  assert.deepEqual(await readdir(out), [`svc-system-${version}.tgz`]);
  const packaged = (
    await exec('tar', [
      '-xzOf',
      path.join(out, `svc-system-${version}.tgz`),
      'svc-system/values.yaml',
    ])
  ).stdout;
  const values = parse(packaged) as { tenants: { packages: string[] }; image: { digest: string } };
  assert.deepEqual(values.tenants.packages, [reference]);
  assert.equal(values.image.digest, '', 'no --image-digest: the image is not pinned');

  const tenantOnly = await exec(
    'bash',
    [
      'scripts/release/package-charts.sh',
      '--out',
      path.join(work, 'tenant-only'),
      '--only',
      'svc-tenant',
    ],
    helmEnv,
  );
  assert.equal(tenantOnly.code, 0, tenantOnly.stderr);
  assert.match(tenantOnly.stdout.trim(), /\/svc-tenant-[0-9.]+\.tgz$/);
  assert.equal(tenantOnly.stdout.trim().split('\n').length, 1);

  for (const [args, message] of [
    [
      ['--tenant-reference', reference.replace(/@sha256:.*/, ':0.1.0')],
      /--tenant-reference must be oci:\/\/<host>\/<path>\/svc-tenant@sha256:<64 hex>/,
    ],
    [
      ['--tenant-reference', reference.replace('svc-tenant', 'svc-system')],
      /--tenant-reference must be/,
    ],
    [['--tenant-reference', reference.replace('oci://', 'https://')], /--tenant-reference must be/],
    [['--only', 'both'], /--only takes svc-system or svc-tenant/],
  ] as const) {
    const bad = path.join(work, 'bad-tenant-ref');
    const refused = await exec(
      'bash',
      ['scripts/release/package-charts.sh', '--out', bad, ...args],
      helmEnv,
    );
    assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.stderr}`);
    assert.match(refused.stderr, message);
    await assert.rejects(access(bad), 'nothing was packaged');
  }
});

test('issue 17: checksums.sh writes SHA256SUMS that sha256sum -c verifies, and catches a change', async () => {
  const dir = path.join(work, 'sums');
  await mkdir(dir);
  const files = { 'svc-linux-x64': 'binary\n', 'svc-system-1.tgz': 'a', 'svc-tenant-1.tgz': 'b' };
  for (const [name, data] of Object.entries(files)) await writeFile(path.join(dir, name), data);
  const result = await exec('bash', [
    'scripts/release/checksums.sh',
    dir,
    ...Object.keys(files).map((f) => path.join(dir, f)),
  ]);
  assert.equal(result.code, 0, result.stderr);
  const sums = await readFile(path.join(dir, 'SHA256SUMS'), 'utf8');
  assert.equal(
    sums,
    Object.entries(files)
      .map(([name, data]) => `${createHash('sha256').update(data).digest('hex')}  ${name}\n`)
      .join(''),
  );
  const check = () => exec('bash', ['-c', `cd '${dir}' && sha256sum -c SHA256SUMS`]);
  assert.equal((await check()).code, 0);
  await appendFile(path.join(dir, 'svc-linux-x64'), 'x');
  const failed = await check();
  assert.notEqual(failed.code, 0);
  assert.match(failed.stdout, /svc-linux-x64: FAILED/);
  const missing = await exec('bash', ['scripts/release/checksums.sh', dir, 'nothing-here']);
  assert.equal(missing.code, 1);
});

/** An OCI image layout archive as build-image.sh writes it (`tar -C layout -cf … .`). */
async function fakeImageArchive(file: string, refName: string, digest: string): Promise<void> {
  const layout = `${file}.layout`;
  await mkdir(layout, { recursive: true });
  await writeFile(path.join(layout, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
  const manifest = { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest, size: 352 };
  await writeFile(
    path.join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        { ...manifest, annotations: { 'org.opencontainers.image.ref.name': 'svc' } },
        { ...manifest, annotations: { 'org.opencontainers.image.ref.name': refName } },
      ],
    }),
  );
  const tar = await exec('tar', ['-C', layout, '-cf', file, '.']);
  assert.equal(tar.code, 0, tar.stderr);
  await rm(layout, { recursive: true });
}

test('issue 32: publish.sh --dry-run prints the push, the digest-pinned charts and the release, needs every file', async () => {
  const dir = path.join(work, 'publish');
  await mkdir(dir);
  const tenantVersion = (
    parse(await readFile(path.join(ROOT, 'charts/svc-tenant/Chart.yaml'), 'utf8')) as {
      version: string;
    }
  ).version;
  const charts = [`svc-system-${version}.tgz`, `svc-tenant-${tenantVersion}.tgz`];
  const sboms = ['sbom-npm.cdx.json', 'sbom-image.cdx.json'];
  for (const name of ['svc-linux-x64', ...sboms]) await writeFile(path.join(dir, name), name);
  const digest = `sha256:${createHash('sha256').update('manifest').digest('hex')}`;
  await fakeImageArchive(path.join(dir, 'svc-image.oci.tar'), version, digest);
  const before = (await readdir(dir)).sort();

  const args = ['scripts/release/publish.sh', '--dir', dir, '--registry', 'registry.example.test'];
  // No credentials and no cosign key in the environment: a dry run must not need them.
  const env = { PATH: process.env.PATH ?? '', HOME: work };
  const result = await exec('bash', [...args, '--owner', 'Acme-Corp', '--dry-run'], env);
  assert.equal(result.code, 0, result.stderr);
  const image = 'registry.example.test/acme-corp/svc';
  assert.match(result.stderr, new RegExp(`publish: image ${image}:${version}@${digest}`));
  assert.match(
    result.stderr,
    /publish: tenant package oci:\/\/registry\.example\.test\/acme-corp\/charts\/svc-tenant@DIGEST_OF_THE_PUSHED_SVC_TENANT/,
  );
  const script = (name: string) => path.join(ROOT, 'scripts/release', name);
  const signed = [
    `${dir}/svc-linux-x64`,
    ...charts.map((c) => `${dir}/${c}`),
    ...sboms.map((f) => `${dir}/${f}`),
    `${dir}/SHA256SUMS`,
  ];
  assert.deepEqual(result.stdout.trim().split('\n'), [
    `skopeo copy --all --digestfile ${dir}/svc-image.digest oci-archive:${dir}/svc-image.oci.tar:${version} docker://${image}:${version}`,
    // svc-tenant first: svc-system names it by the digest its push reports (known only then).
    `bash ${script('package-charts.sh')} --out ${dir} --only svc-tenant`,
    `helm push ${dir}/${charts[1]} oci://registry.example.test/acme-corp/charts`,
    `bash ${script('package-charts.sh')} --out ${dir} --only svc-system --image-registry registry.example.test/acme-corp --image-digest ${digest} --tenant-reference oci://registry.example.test/acme-corp/charts/svc-tenant@DIGEST_OF_THE_PUSHED_SVC_TENANT`,
    `bash ${script('checksums.sh')} ${dir} svc-linux-x64 ${charts.join(' ')} ${sboms.join(' ')}`,
    `helm push ${dir}/${charts[0]} oci://registry.example.test/acme-corp/charts`,
    `gh release create v${version} --verify-tag --title svc\\ ${version} --notes-file ${dir}/RELEASE-NOTES.md ` +
      `${signed.join(' ')} ${signed.map((f) => `${f}.bundle`).join(' ')} ${dir}/cosign.pub`,
  ]);
  assert.deepEqual((await readdir(dir)).sort(), before, 'a dry run writes nothing');
  // PUSH=0 is the same dry run.
  const push0 = await exec('bash', [...args, '--owner', 'Acme-Corp'], { ...env, PUSH: '0' });
  assert.equal(push0.stdout, result.stdout);
  // --no-github-release stops after the charts.
  const registryOnly = await exec(
    'bash',
    [...args, '--owner', 'Acme-Corp', '--dry-run', '--no-github-release'],
    env,
  );
  assert.equal(registryOnly.code, 0, registryOnly.stderr);
  assert.deepEqual(
    registryOnly.stdout.trim().split('\n'),
    result.stdout.trim().split('\n').slice(0, 6),
  );

  // A real release without a signing key stops before logging in or pushing anything.
  const unsigned = await exec('bash', [...args, '--owner', 'acme'], {
    ...env,
    REGISTRY_USER: 'u',
    REGISTRY_PASSWORD: 'p',
  });
  assert.equal(unsigned.code, 2);
  assert.equal(unsigned.stdout, '');
  assert.match(unsigned.stderr, /a release must be signed/);

  // Not a registry host and owner.
  for (const [registry, owner] of [
    ['registry.example.test/path', 'acme'],
    ['registry.example.test', 'acme/corp'],
    ['https://registry.example.test', 'acme'],
  ]) {
    const bad = await exec(
      'bash',
      [
        'scripts/release/publish.sh',
        '--dir',
        dir,
        '--registry',
        registry ?? '',
        '--owner',
        owner ?? '',
        '--dry-run',
      ],
      env,
    );
    assert.equal(bad.code, 2, `${registry} ${owner}`);
    assert.match(bad.stderr, /is not a registry host and owner/);
  }

  // An archive without the version's tag, or no archive at all, stops it before any push.
  await fakeImageArchive(path.join(dir, 'svc-image.oci.tar'), '9.9.9', digest);
  const untagged = await exec('bash', [...args, '--owner', 'acme', '--dry-run'], env);
  assert.equal(untagged.code, 1);
  assert.equal(untagged.stdout, '');
  assert.match(untagged.stderr, new RegExp(`not an OCI archive holding the image ${version}`));
  await writeFile(path.join(dir, 'svc-image.oci.tar'), 'not a tar');
  const garbage = await exec('bash', [...args, '--owner', 'acme', '--dry-run'], env);
  assert.equal(garbage.code, 1);
  assert.match(garbage.stderr, /not an OCI archive/);
  await rm(path.join(dir, 'sbom-npm.cdx.json'));
  const noSbom = await exec('bash', [...args, '--owner', 'acme', '--dry-run'], env);
  assert.equal(noSbom.code, 1);
  assert.match(noSbom.stderr, /no .*sbom-npm\.cdx\.json/);
  await rm(path.join(dir, 'svc-image.oci.tar'));
  const incomplete = await exec('bash', [...args, '--owner', 'acme', '--dry-run'], env);
  assert.equal(incomplete.code, 1);
  assert.match(incomplete.stderr, /no .*svc-image\.oci\.tar/);
});

test('issue 17: build.sh refuses a tag that is not v<package.json version> before building', async () => {
  const result = await exec('bash', [
    'scripts/release/build.sh',
    '--tag',
    'v999.0.0',
    '--out',
    path.join(work, 'never'),
  ]);
  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    new RegExp(`tag v999\\.0\\.0 does not match package.json version ${version}`),
  );
  await assert.rejects(access(path.join(work, 'never')), 'nothing was built');
});

test('issue 32: build.sh refuses a release whose chart versions are not frozen in charts/released.yaml', async () => {
  // Nothing is recorded yet in this tree (no release was cut), so the tag's build must stop at
  // the check, before the binary; --unrecorded-ok (test publishes only) skips it.
  const released = parse(await readFile(path.join(ROOT, 'charts/released.yaml'), 'utf8')) as {
    chart: string;
    version: string;
  }[];
  const chartVersion = async (chart: string) =>
    (
      parse(await readFile(path.join(ROOT, 'charts', chart, 'Chart.yaml'), 'utf8')) as {
        version: string;
      }
    ).version;
  const unrecorded = [];
  for (const chart of ['svc-system', 'svc-tenant']) {
    const v = await chartVersion(chart);
    if (!released.some((r) => r.chart === chart && r.version === v)) unrecorded.push([chart, v]);
  }
  assert.ok(unrecorded.length > 0, 'update this test once a release is recorded');
  const env = {
    ...process.env,
    PATH: `${path.join(ROOT, 'node_modules/.bin')}${path.delimiter}${process.env.PATH ?? ''}`,
  };
  const result = await exec(
    'bash',
    ['scripts/release/build.sh', '--tag', `v${version}`, '--out', path.join(work, 'unrecorded')],
    env,
  );
  assert.equal(result.code, 1, result.stderr);
  for (const [chart, v] of unrecorded)
    assert.match(
      result.stderr,
      new RegExp(`${chart} ${v} is not recorded in charts/released\\.yaml`),
    );
  await assert.rejects(access(path.join(work, 'unrecorded')), 'nothing was built');
});

test('issue 17: helm.sh picks the pinned helm', async () => {
  const env = { ...process.env };
  delete env.SVC_HELM_BIN;
  const result = await exec('bash', ['scripts/release/helm.sh'], env);
  assert.equal(result.code, 0, result.stderr);
  const pinned = /^HELM_VERSION=(\S+)$/m.exec(
    await readFile(path.join(ROOT, 'testcluster/versions.env'), 'utf8'),
  )?.[1];
  const reported = await exec(result.stdout.trim(), ['version', '--short']);
  assert.equal(reported.stdout.trim().split('+')[0], pinned);
  // SVC_HELM_BIN wins.
  const chosen = path.join(work, 'my-helm');
  await copyFile(result.stdout.trim(), chosen);
  const over = await exec('bash', ['scripts/release/helm.sh'], { ...env, SVC_HELM_BIN: chosen });
  assert.equal(over.stdout.trim(), chosen);
});
