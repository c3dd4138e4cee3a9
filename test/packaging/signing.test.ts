// Issue 32, "Signed, with an SBOM": scripts/release/sign.sh signs svc's image in a real OCI
// registry by digest and attaches the image's CycloneDX SBOM as a signed attestation, and signs
// the chart archives as blobs; cosign (built by .ci/install-cosign) verifies them with the
// release's public key — anonymously, as an MSSP would — and refuses another key, a tampered
// chart and a push of signatures without credentials. docs/packaging.md "Verify".
import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Bom } from '../../scripts/release/sbom.ts';
import { ensureBinaries } from '../../testcluster/harness.ts';
import { type Registry, startRegistry } from '../../testcluster/registry/registry.ts';
import { builtImage } from './artifacts.ts';
import { exec, ROOT, type Run } from './exec.ts';

async function ok(bin: string, args: string[], env?: NodeJS.ProcessEnv): Promise<Run> {
  const result = await exec(bin, args, env);
  assert.equal(result.code, 0, `${bin} ${args.join(' ')}:\n${result.stdout}${result.stderr}`);
  return result;
}

const version = (
  JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }
).version;

let work: string;
let registry: Registry;
let cosign: string;
/** What the MSSP has: no registry credentials, only the registry's CA and the public key. */
let anonymous: NodeJS.ProcessEnv;
/** The release job: the private key's password and the registry's push account. */
let releaser: NodeJS.ProcessEnv;
let archive: string;
let ref: string;
let charts: string[];
let sbomFile: string;
const keys = { release: '', other: '' };

before(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'svc-signing-'));
  const [installed, image, binaries, started] = await Promise.all([
    ok('bash', ['.ci/install-cosign']),
    builtImage(),
    ensureBinaries(),
    startRegistry({ dir: work }),
  ]);
  cosign = installed.stdout.trim().split('\n').at(-1) ?? '';
  archive = image;
  registry = started;
  const empty = path.join(work, 'docker-anonymous');
  await mkdir(empty);
  // A private DOCKER_CONFIG: neither side may use a developer's own registry logins, and
  // cosign keeps its TUF cache out of $HOME.
  const { REGISTRY_USER: _user, REGISTRY_PASSWORD: _password, ...inherited } = process.env;
  const base = { ...inherited, DOCKER_CONFIG: empty, TUF_ROOT: path.join(work, 'tuf') };
  anonymous = base;
  releaser = {
    ...base,
    COSIGN_PASSWORD: 'release-key-password',
    REGISTRY_USER: registry.user,
    REGISTRY_PASSWORD: registry.password,
    SVC_COSIGN_BIN: cosign,
  };

  for (const name of ['release', 'other'] as const) {
    await ok(cosign, ['generate-key-pair', '--output-key-prefix', path.join(work, name)], releaser);
    keys[name] = path.join(work, name);
  }

  // The image in the registry, as publish.sh pushes it.
  const digestFile = path.join(work, 'image.digest');
  await ok('skopeo', [
    'copy',
    '--dest-cert-dir',
    registry.certDir,
    '--dest-creds',
    `${registry.user}:${registry.password}`,
    '--digestfile',
    digestFile,
    `oci-archive:${archive}:${version}`,
    `docker://${registry.host}/svc-test/svc:${version}`,
  ]);
  const digest = (await readFile(digestFile, 'utf8')).trim();
  assert.match(digest, /^sha256:[0-9a-f]{64}$/);
  ref = `${registry.host}/svc-test/svc@${digest}`;

  sbomFile = path.join(work, 'sbom-image.cdx.json');
  await ok(process.execPath, [
    '--import',
    'tsx',
    'scripts/release/sbom.ts',
    'image',
    '--image',
    archive,
    '--out',
    sbomFile,
  ]);
  const packaged = await ok(
    'bash',
    ['scripts/release/package-charts.sh', '--out', path.join(work, 'charts')],
    { ...process.env, SVC_HELM_BIN: path.join(binaries.binDir, 'helm') },
  );
  charts = packaged.stdout.trim().split('\n');
  assert.equal(charts.length, 2, packaged.stdout);

  // The release: the image by digest with its SBOM attested, the charts as blobs.
  await ok(
    'bash',
    [
      'scripts/release/sign.sh',
      '--key',
      `${keys.release}.key`,
      '--public-key-out',
      path.join(work, 'cosign.pub'),
      '--ca-file',
      registry.caFile,
      '--image',
      ref,
      '--sbom',
      sbomFile,
      ...charts,
    ],
    releaser,
  );
});

after(async () => {
  await registry?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

const tls = () => ['--registry-cacert', registry.caFile];

function verifyImage(key: string): Promise<Run> {
  return exec(
    cosign,
    ['verify', '--key', key, '--insecure-ignore-tlog=true', ...tls(), '--output', 'json', ref],
    anonymous,
  );
}

test('issue 32: the signed image verifies anonymously with the release key, not with another', async () => {
  assert.equal(
    await readFile(path.join(work, 'cosign.pub'), 'utf8'),
    await readFile(`${keys.release}.pub`, 'utf8'),
    'sign.sh wrote the public half of the key it signed with',
  );
  const good = await verifyImage(`${keys.release}.pub`);
  assert.equal(good.code, 0, good.stderr);
  assert.match(good.stderr, /signatures were verified against the specified public key/);
  // The signed payload names the digest that was pushed.
  assert.ok(good.stdout.includes(ref.split('@')[1] as string), good.stdout);

  const wrong = await verifyImage(`${keys.other}.pub`);
  assert.notEqual(wrong.code, 0, 'another key does not verify');
  assert.match(wrong.stderr, /accepted signatures do not match threshold, Found: 0, Expected 1/);
});

test('issue 32: the image SBOM is attested: it verifies and lists Debian packages and svc dependencies with versions', async () => {
  const result = await exec(
    cosign,
    [
      'verify-attestation',
      '--key',
      `${keys.release}.pub`,
      '--type',
      'cyclonedx',
      '--insecure-ignore-tlog=true',
      ...tls(),
      ref,
    ],
    anonymous,
  );
  assert.equal(result.code, 0, result.stderr);
  const envelope = JSON.parse(result.stdout.trim().split('\n')[0] as string) as { payload: string };
  const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as {
    predicateType: string;
    subject: { digest: { sha256: string } }[];
    predicate: Bom;
  };
  assert.equal(statement.predicateType, 'https://cyclonedx.org/bom');
  assert.equal(`sha256:${statement.subject[0]?.digest.sha256}`, ref.split('@')[1]);
  const sbom = statement.predicate;
  assert.deepEqual(
    sbom,
    JSON.parse(await readFile(sbomFile, 'utf8')),
    'the attested SBOM is the file',
  );
  // It describes the pushed image: skopeo kept the archive's manifest, so the digests agree.
  assert.equal(`sha256:${sbom.metadata.component.hashes?.[0]?.content}`, ref.split('@')[1]);

  // The Debian packages the image's label records, each with its version.
  const { stdout: index } = await ok('tar', ['-xOf', archive, './index.json']);
  const manifestDigest = (JSON.parse(index) as { manifests: { digest: string }[] }).manifests[0]
    ?.digest;
  assert.equal(manifestDigest, ref.split('@')[1]);
  const debs = new Map(
    sbom.components.filter((c) => c.purl?.startsWith('pkg:deb/')).map((c) => [c.name, c.version]),
  );
  for (const name of ['libc6', 'libstdc++6', 'ca-certificates', 'tzdata', 'dash'])
    assert.match(debs.get(name) ?? '', /^[0-9]/, `${name} is listed with a version`);
  const libc = sbom.components.find((c) => c.name === 'libc6');
  assert.match(libc?.purl ?? '', /^pkg:deb\/debian\/libc6@[^?]+\?arch=amd64&distro=debian-12$/);

  // svc's own production dependencies at the versions package.json pins.
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  for (const name of ['hono', 'pg', 'jose', 'graphile-worker']) {
    const listed = sbom.components.find(
      (c) => c.purl === `pkg:npm/${name}@${pkg.dependencies[name]}`,
    );
    assert.ok(listed, `${name}@${pkg.dependencies[name]} is in the image SBOM`);
  }
  assert.ok(sbom.components.some((c) => c.name === 'svc' && c.version === version));
});

test('issue 32: each chart verifies with its bundle; a tampered chart or another key fails', async () => {
  // As an MSSP checks a download: anonymously, offline, against the bundle beside the chart.
  const verifyBlob = (key: string, bundleOf: string, file: string) =>
    exec(
      cosign,
      [
        'verify-blob',
        '--insecure-ignore-tlog=true',
        '--key',
        key,
        '--bundle',
        `${bundleOf}.bundle`,
        file,
      ],
      anonymous,
    );
  const invalid = /invalid signature when validating ASN\.1 encoded signature/;
  for (const chart of charts) {
    const good = await verifyBlob(`${keys.release}.pub`, chart, chart);
    assert.equal(good.code, 0, `${chart}: ${good.stderr}`);
    assert.match(good.stderr, /Verified OK/);

    const other = await verifyBlob(`${keys.other}.pub`, chart, chart);
    assert.notEqual(other.code, 0, `${chart} does not verify with another key`);
    assert.match(other.stderr, invalid);
  }
  // One byte changed in the archive, as a compromised mirror might serve it.
  const chart = charts[0] as string;
  const tampered = path.join(work, `tampered-${path.basename(chart)}`);
  await copyFile(chart, tampered);
  const bytes = await readFile(tampered);
  bytes[bytes.length - 100] = (bytes[bytes.length - 100] ?? 0) ^ 0xff;
  await writeFile(tampered, bytes);
  const bad = await verifyBlob(`${keys.release}.pub`, chart, tampered);
  assert.notEqual(bad.code, 0, 'the tampered chart fails');
  assert.match(bad.stderr, invalid);
});

test('issue 32: sign.sh refuses bad input clearly, and nobody signs in the registry without credentials', async () => {
  const sign = (args: string[], env: NodeJS.ProcessEnv) =>
    exec('bash', ['scripts/release/sign.sh', ...args], env);
  const blob = path.join(work, 'blob.txt');
  await writeFile(blob, 'svc\n');
  const refused = async (args: string[], env: NodeJS.ProcessEnv, message: RegExp) => {
    const result = await sign(args, env);
    assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, message);
  };
  const key = `${keys.release}.key`;
  await refused(
    ['--key', key, '--image', `${registry.host}/svc-test/svc:${version}`],
    releaser,
    /by digest, never a tag/,
  );
  await refused(['--key', path.join(work, 'missing.key'), blob], releaser, /no such file/);
  await refused(['--key', 'env://SVC_NO_SUCH_KEY', blob], releaser, /\$SVC_NO_SUCH_KEY is empty/);
  const { COSIGN_PASSWORD: _, ...noPassword } = releaser;
  await refused(['--key', key, blob], noPassword, /COSIGN_PASSWORD must be set/);
  await refused(['--key', key, '--sbom', sbomFile, blob], releaser, /--sbom attests an image/);
  await refused(
    ['--key', key, path.join(work, 'missing.tgz')],
    releaser,
    /missing\.tgz: no such file/,
  );
  await refused(['--key', key], releaser, /nothing to sign/);
  await refused(['--bogus'], releaser, /unknown argument --bogus/);
  const refusedBlob = await sign(['--key', key, blob], { ...releaser, COSIGN_PASSWORD: 'wrong' });
  assert.notEqual(refusedBlob.code, 0, 'a wrong key password signs nothing');
  await assert.rejects(readFile(`${blob}.bundle`), 'no bundle written');

  // A dry run (publish.sh --dry-run) needs no key, password or credentials: it prints the commands.
  const { COSIGN_PASSWORD: _pw, REGISTRY_USER: _ru, ...nothing } = releaser;
  const dry = await sign(
    ['--dry-run', '--key', 'env://COSIGN_KEY', '--image', ref, '--sbom', sbomFile, blob],
    nothing,
  );
  assert.equal(dry.code, 0, dry.stderr);
  const lines = dry.stdout.trim().split('\n');
  assert.equal(lines.length, 3, dry.stdout);
  const offline = '--key env://COSIGN_KEY --tlog-upload=false --use-signing-config=false --yes';
  assert.ok(lines[0]?.endsWith(`sign-blob ${offline} --bundle ${blob}.bundle ${blob}`), lines[0]);
  assert.ok(lines[1]?.endsWith(`sign ${offline} ${ref}`), lines[1]);
  assert.ok(
    lines[2]?.endsWith(`attest ${offline} --type cyclonedx --predicate ${sbomFile} ${ref}`),
    lines[2],
  );

  // The attacker's side: a valid key but no registry credentials cannot store a signature, so
  // the image still has exactly the release's signature (verified with the other key: none).
  const { REGISTRY_USER: _u, REGISTRY_PASSWORD: _p, ...noCredentials } = releaser;
  const pushed = await sign(
    ['--key', `${keys.other}.key`, '--ca-file', registry.caFile, '--image', ref],
    noCredentials,
  );
  assert.notEqual(pushed.code, 0, 'signing without credentials is refused');
  assert.match(pushed.stderr, /UNAUTHORIZED|401|denied|unauthorized/i);
  const stillOther = await verifyImage(`${keys.other}.pub`);
  assert.notEqual(stillOther.code, 0, 'no signature by the other key reached the registry');
});
