// Spec §9.1 / issue 32: each chart has its own version, and a released version is frozen — a chart
// changed under a version recorded in charts/released.yaml fails here, so it fails CI.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  ChartVersionError,
  chartDigest,
  chartState,
  parseReleased,
  RELEASE_CHARTS,
  RELEASED_FILE,
  systemVersionProblem,
  versionProblems,
} from '../../scripts/charts-release.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

test('§9.1 the charts in the tree do not change under a released version, and svc-system is package.json’s version', async () => {
  const released = parseReleased(await readFile(RELEASED_FILE, 'utf8'));
  for (const chart of RELEASE_CHARTS) {
    const state = await chartState(path.join(ROOT, 'charts', chart));
    assert.equal(state.chart, chart);
    assert.deepEqual(versionProblems(state, released), [], `${chart}`);
  }
  assert.equal(await systemVersionProblem(), undefined);
});

let work: string;
let chart: string;
before(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'svc-chart-versions-'));
  chart = path.join(work, 'svc-tenant');
  await cp(path.join(ROOT, 'charts', 'svc-tenant'), chart, { recursive: true });
});
after(() => rm(work, { recursive: true, force: true }));

test('§9.1 a template changed under a released version is refused; a bump makes it fine again', async () => {
  const original = await chartState(chart);
  const released = [{ chart: 'svc-tenant', version: original.version, digest: original.digest }];
  assert.deepEqual(versionProblems(original, released), []);

  const template = path.join(chart, 'templates', 'adapter.yaml');
  const body = await readFile(template, 'utf8');
  await writeFile(template, `${body}\n# one more line\n`);
  const changed = await chartState(chart);
  assert.notEqual(changed.digest, original.digest);
  const problems = versionProblems(changed, released);
  assert.equal(problems.length, 1);
  assert.match(problems[0] ?? '', /svc-tenant 0\.1\.0 was released with different content/);

  // The fix: a new version in Chart.yaml (which itself changes the digest; it is not recorded yet).
  const chartYaml = path.join(chart, 'Chart.yaml');
  await writeFile(
    chartYaml,
    (await readFile(chartYaml, 'utf8')).replace(/^version: .*$/m, 'version: 0.2.0'),
  );
  const bumped = await chartState(chart);
  assert.equal(bumped.version, '0.2.0');
  assert.deepEqual(versionProblems(bumped, released), []);
  // ...but a release of it must record it first.
  assert.match(versionProblems(bumped, released, true)[0] ?? '', /0\.2\.0 is not recorded/);
  assert.deepEqual(versionProblems(bumped, [...released, { ...bumped }], true), []);

  // Going back below a released version is refused too.
  const older = versionProblems({ ...bumped, version: '0.0.9' }, released);
  assert.match(older[0] ?? '', /0\.0\.9 is older than released 0\.1\.0/);
  // Another chart's releases do not bind this one.
  assert.deepEqual(
    versionProblems(changed, [{ chart: 'svc-system', version: '0.1.0', digest: original.digest }]),
    [],
  );
});

test('§9.1 the digest is of what helm packages: .helmignore’d files do not count, symlinked files do', async () => {
  const dir = path.join(work, 'linked');
  await cp(path.join(ROOT, 'charts', 'svc-tenant'), dir, { recursive: true });
  const before = await chartDigest(dir);
  await writeFile(path.join(dir, 'templates', 'scratch.yaml.bak'), 'ignored');
  await writeFile(path.join(dir, 'charts', 'monitor-4.9.2.tgz'), 'ignored: charts/*.tgz');
  assert.equal(await chartDigest(dir), before);

  const outside = path.join(work, 'policies');
  await cp(path.join(ROOT, 'policies'), outside, { recursive: true });
  await symlink(outside, path.join(dir, 'templates', 'admission'));
  const linked = await chartDigest(dir);
  assert.notEqual(linked, before);
  const names = (await readdir(outside)).sort();
  const target = path.join(outside, names.find((n) => n.endsWith('.yaml')) ?? names[0] ?? '');
  await writeFile(target, `${await readFile(target, 'utf8')}\n# edited through the link\n`);
  assert.notEqual(await chartDigest(dir), linked);
});

test('§9.1 charts/released.yaml is checked: bad digests and duplicate versions are errors', () => {
  assert.deepEqual(parseReleased(''), []);
  assert.deepEqual(parseReleased('[]'), []);
  const digest = `sha256:${'a'.repeat(64)}`;
  assert.throws(
    () => parseReleased('- { chart: svc-tenant, version: 0.1.0, digest: md5:abc }'),
    ChartVersionError,
  );
  assert.throws(
    () => parseReleased(`- { chart: svc-tenant, version: one, digest: "${digest}" }`),
    ChartVersionError,
  );
  assert.throws(
    () =>
      parseReleased(
        `- { chart: svc-tenant, version: 0.1.0, digest: "${digest}" }\n- { chart: svc-tenant, version: 0.1.0, digest: "${digest}" }`,
      ),
    /svc-tenant@0\.1\.0 recorded twice/,
  );
});

test('§9.1 the script: `check` passes on the tree, `check --release` refuses unrecorded versions, bad arguments exit 2', async () => {
  const node = process.execPath;
  const script = path.join(ROOT, 'scripts', 'charts-release.ts');
  const ok = await run(node, ['--import', 'tsx', script, 'check'], { cwd: ROOT });
  assert.equal(ok.stderr, '');

  const released = parseReleased(await readFile(RELEASED_FILE, 'utf8'));
  const unrecorded = [];
  for (const c of RELEASE_CHARTS) {
    const s = await chartState(path.join(ROOT, 'charts', c));
    if (!released.some((r) => r.chart === s.chart && r.version === s.version)) unrecorded.push(s);
  }
  const release = await run(node, ['--import', 'tsx', script, 'check', '--release'], {
    cwd: ROOT,
  }).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => e,
  );
  if (unrecorded.length === 0) {
    assert.equal(release.code, 0, release.stderr);
  } else {
    assert.equal(release.code, 1);
    for (const s of unrecorded) {
      assert.match(
        release.stderr,
        new RegExp(`${s.chart} ${s.version.replaceAll('.', '\\.')} is not recorded`),
      );
    }
  }

  const bad = await run(node, ['--import', 'tsx', script, 'check', '--everything'], {
    cwd: ROOT,
  }).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => e,
  );
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /unknown argument --everything/);
});
