// Issue 17, the release: .github/workflows/release.yml passes actionlint (with shellcheck on
// its run: scripts), and the scripts it calls — chart packaging, SHA256SUMS, publishing — do
// what the workflow relies on when run here (publishing as a dry run: the exact commands).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
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
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { ensureBinaries } from '../../testcluster/harness.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const cache = process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function exec(bin: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve) => {
    execFile(bin, args, { cwd: ROOT, env, maxBuffer: 64 * 2 ** 20 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

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
  const runs = steps.map((s) => s.run ?? '').join('\n');
  assert.match(runs, /scripts\/release\/build\.sh/);
  assert.match(runs, /scripts\/release\/publish\.sh/);
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
    assert.equal(meta.version, version, `${chart} is versioned with package.json`);
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

test('issue 17: package-charts.sh refuses a chart versioned apart from package.json', async () => {
  // A copy of the scripts and charts with svc-tenant bumped alone.
  const copy = path.join(work, 'skewed');
  await exec('bash', [
    '-c',
    `mkdir -p '${copy}' && cp -r package.json charts policies scripts testcluster '${copy}/'`,
  ]);
  const chartYaml = path.join(copy, 'charts/svc-tenant/Chart.yaml');
  await writeFile(
    chartYaml,
    (await readFile(chartYaml, 'utf8')).replace(/^version: .*$/m, 'version: 9.9.9'),
  );
  const result = await exec(
    'bash',
    [path.join(copy, 'scripts/release/package-charts.sh'), '--out', path.join(copy, 'out')],
    helmEnv,
  );
  assert.equal(result.code, 1);
  assert.match(result.stderr, /svc-tenant\/Chart\.yaml has version 9\.9\.9, package\.json/);
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

test('issue 17: publish.sh --dry-run prints the exact pushes and the release, needs every file', async () => {
  const dir = path.join(work, 'publish');
  await mkdir(dir);
  const charts = [`svc-system-${version}.tgz`, `svc-tenant-${version}.tgz`];
  for (const name of ['svc-linux-x64', 'svc-image.oci.tar', ...charts])
    await writeFile(path.join(dir, name), name);
  const sums = await exec('bash', [
    'scripts/release/checksums.sh',
    dir,
    'svc-linux-x64',
    ...charts,
  ]);
  assert.equal(sums.code, 0, sums.stderr);
  const args = ['scripts/release/publish.sh', '--dir', dir, '--registry', 'registry.example.test'];
  // No credentials in the environment: a dry run must not need them.
  const env = { PATH: process.env.PATH ?? '', HOME: work };
  const result = await exec('bash', [...args, '--owner', 'Acme-Corp', '--dry-run'], env);
  assert.equal(result.code, 0, result.stderr);
  const notes =
    `Image: registry.example.test/acme-corp/svc:${version}. Charts: ` +
    `oci://registry.example.test/acme-corp/charts/svc-system and svc-tenant, version ${version}. ` +
    'Verify downloads with: sha256sum -c --ignore-missing SHA256SUMS';
  const quoted = (await exec('bash', ['-c', 'printf %q "$1"', '_', notes])).stdout;
  assert.deepEqual(result.stdout.trim().split('\n'), [
    `skopeo copy --all oci-archive:${dir}/svc-image.oci.tar:${version} docker://registry.example.test/acme-corp/svc:${version}`,
    `helm push ${dir}/${charts[0]} oci://registry.example.test/acme-corp/charts`,
    `helm push ${dir}/${charts[1]} oci://registry.example.test/acme-corp/charts`,
    `gh release create v${version} --verify-tag --title svc\\ ${version} --notes ${quoted} ` +
      `${dir}/svc-linux-x64 ${dir}/${charts[0]} ${dir}/${charts[1]} ${dir}/SHA256SUMS`,
  ]);
  // PUSH=0 is the same dry run.
  const push0 = await exec('bash', [...args, '--owner', 'Acme-Corp'], { ...env, PUSH: '0' });
  assert.equal(push0.stdout, result.stdout);

  // A file that no longer matches SHA256SUMS, or a missing one, stops it before any push.
  await appendFile(path.join(dir, `svc-tenant-${version}.tgz`), 'x');
  const altered = await exec('bash', [...args, '--owner', 'acme', '--dry-run'], env);
  assert.equal(altered.code, 1);
  assert.equal(altered.stdout, '');
  assert.match(altered.stderr, /SHA256SUMS does not verify/);
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
