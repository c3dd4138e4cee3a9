// Software bills of materials for a release (issue 32, docs/packaging.md "Verify"), as
// CycloneDX 1.6 JSON, generated from what the release is built from — no network, no new
// dependency:
//
//   tsx scripts/release/sbom.ts npm   [--lock package-lock.json] --out dist/release/sbom-npm.cdx.json
//   tsx scripts/release/sbom.ts image --image dist/release/svc-image.oci.tar
//                                     [--lock package-lock.json] --out dist/release/sbom-image.cdx.json
//
// npm: svc's production dependency tree from package-lock.json (what `npm ci --omit=dev`
// installs on linux-x64 with glibc, the platform of the binary and the image), each with its
// exact version, purl, the lock's SHA-512 and licence, plus the resolved dependency graph.
// image: the image archive's Debian packages (its `org.debian.packages` label, written by
// scripts/build-image.sh from the exact versions it unpacked; the architecture from its .deb
// cache), the pinned helm, and the same npm
// components (the binary carries them), described as the image by its manifest digest.
// Output is deterministic (SOURCE_DATE_EPOCH, else the commit time), so rebuilding a release
// yields the same file.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

export class SbomError extends Error {}

/** The target the production tree is resolved for: the binary's and the image's platform. */
const TARGET = { os: 'linux', cpu: 'x64', libc: 'glibc' };

interface LockPackage {
  name?: string;
  version?: string;
  resolved?: string;
  integrity?: string;
  license?: string;
  dev?: boolean;
  optional?: boolean;
  devOptional?: boolean;
  link?: boolean;
  os?: string[];
  cpu?: string[];
  libc?: string[];
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

interface Lock {
  name?: string;
  version?: string;
  lockfileVersion?: number;
  packages?: Record<string, LockPackage>;
}

export interface Component {
  type: string;
  'bom-ref': string;
  name: string;
  group?: string;
  version: string;
  scope?: 'required' | 'optional';
  purl?: string;
  hashes?: { alg: string; content: string }[];
  licenses?: { expression: string }[];
  properties?: { name: string; value: string }[];
}

export interface Bom {
  bomFormat: 'CycloneDX';
  specVersion: '1.6';
  serialNumber: string;
  version: 1;
  metadata: {
    timestamp: string;
    tools: { components: { type: 'application'; name: string; version: string }[] };
    component: Component;
  };
  components: Component[];
  dependencies: { ref: string; dependsOn: string[] }[];
}

/** `pkg:npm/%40scope/name@1.2.3` (purl-spec: the `@` of a scope is percent-encoded). */
export function npmPurl(name: string, version: string): string {
  const encoded = name.startsWith('@') ? `%40${name.slice(1)}` : name;
  return `pkg:npm/${encoded}@${encodeURIComponent(version)}`;
}

/** `pkg:deb/debian/libc6@2.36-9%2Bdeb12u13?arch=amd64&distro=debian-12`. */
export function debPurl(name: string, version: string, arch?: string): string {
  const qualifiers = [...(arch ? [`arch=${arch}`] : []), 'distro=debian-12'].join('&');
  return `pkg:deb/debian/${name}@${encodeURIComponent(version)}?${qualifiers}`;
}

function matches(allowed: string[] | undefined, value: string): boolean {
  if (!allowed || allowed.length === 0) return true;
  const denied = allowed.filter((a) => a.startsWith('!')).map((a) => a.slice(1));
  if (denied.includes(value)) return false;
  const wanted = allowed.filter((a) => !a.startsWith('!'));
  return wanted.length === 0 || wanted.includes(value);
}

function installsOnTarget(pkg: LockPackage): boolean {
  return (
    matches(pkg.os, TARGET.os) && matches(pkg.cpu, TARGET.cpu) && matches(pkg.libc, TARGET.libc)
  );
}

/** Where Node finds `dep` from the package at `from` (a lock key): its own node_modules, then up. */
function resolve(
  packages: Record<string, LockPackage>,
  from: string,
  dep: string,
): string | undefined {
  let dir = from;
  for (;;) {
    const candidate = dir ? `${dir}/node_modules/${dep}` : `node_modules/${dep}`;
    if (packages[candidate]) return candidate;
    if (!dir) return undefined;
    const at = dir.lastIndexOf('/node_modules/');
    dir = at < 0 ? '' : dir.slice(0, at);
  }
}

function sha512Hex(integrity: string | undefined): { alg: string; content: string }[] | undefined {
  const sha512 = integrity?.split(/\s+/).find((i) => i.startsWith('sha512-'));
  if (!sha512) return undefined;
  return [{ alg: 'SHA-512', content: Buffer.from(sha512.slice(7), 'base64').toString('hex') }];
}

function nameOf(key: string, pkg: LockPackage): string {
  return pkg.name ?? key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
}

export interface NpmTree {
  root: { name: string; version: string };
  components: Component[];
  dependencies: { ref: string; dependsOn: string[] }[];
  /** bom-refs of the root's direct dependencies. */
  direct: string[];
}

/**
 * svc's production tree from a package-lock.json (lockfile v2/v3): everything reachable from the
 * root's dependencies and optional dependencies (and non-optional peers), skipping optional
 * packages that do not install on linux-x64/glibc, as npm would skip them.
 */
export function npmTree(lockText: string, source = 'package-lock.json'): NpmTree {
  let lock: Lock;
  try {
    lock = JSON.parse(lockText) as Lock;
  } catch (error) {
    throw new SbomError(`${source} is not JSON: ${(error as Error).message}`);
  }
  if (typeof lock !== 'object' || lock === null || typeof lock.packages !== 'object') {
    throw new SbomError(`${source} has no "packages" (lockfileVersion 2 or 3 is required)`);
  }
  if (lock.lockfileVersion !== 2 && lock.lockfileVersion !== 3) {
    throw new SbomError(
      `${source} has lockfileVersion ${String(lock.lockfileVersion)}; 2 or 3 is required`,
    );
  }
  const packages = lock.packages;
  const rootPkg = packages[''];
  if (!rootPkg?.name || !rootPkg.version) {
    throw new SbomError(`${source} has no root package with a name and version`);
  }
  const refs = new Map<string, string>(); // lock key -> bom-ref
  const components = new Map<string, Component>();
  const graph = new Map<string, Set<string>>();

  const edges = (pkg: LockPackage): [string, boolean][] => [
    ...Object.keys(pkg.dependencies ?? {}).map((d): [string, boolean] => [d, false]),
    ...Object.keys(pkg.optionalDependencies ?? {}).map((d): [string, boolean] => [d, true]),
    ...Object.keys(pkg.peerDependencies ?? {})
      .filter((d) => !pkg.peerDependenciesMeta?.[d]?.optional)
      .map((d): [string, boolean] => [d, false]),
  ];

  const visit = (key: string): string | undefined => {
    const known = refs.get(key);
    if (known) return known;
    let pkg = packages[key];
    if (!pkg) return undefined;
    if (pkg.link && pkg.resolved) {
      pkg = { ...packages[pkg.resolved], ...pkg };
    }
    if (!installsOnTarget(pkg)) return undefined;
    const name = nameOf(key, pkg);
    if (!pkg.version) throw new SbomError(`${source}: ${key} has no version`);
    if (pkg.dev)
      throw new SbomError(`${source}: ${key} is marked dev but a production package needs it`);
    const ref = npmPurl(name, pkg.version);
    refs.set(key, ref);
    if (!components.has(ref)) {
      const slash = name.startsWith('@') ? name.indexOf('/') : -1;
      const hashes = sha512Hex(pkg.integrity);
      components.set(ref, {
        type: 'library',
        'bom-ref': ref,
        ...(slash > 0 ? { group: name.slice(0, slash), name: name.slice(slash + 1) } : { name }),
        version: pkg.version,
        scope: pkg.optional ? 'optional' : 'required',
        purl: ref,
        ...(hashes ? { hashes } : {}),
        ...(pkg.license ? { licenses: [{ expression: pkg.license }] } : {}),
      });
      graph.set(ref, new Set());
    }
    for (const [dep, optional] of edges(pkg)) {
      const target = resolve(packages, key, dep);
      if (!target) {
        if (optional) continue;
        throw new SbomError(`${source}: ${key} needs ${dep}, which the lock does not contain`);
      }
      const depRef = visit(target);
      if (depRef) graph.get(ref)?.add(depRef);
    }
    return ref;
  };

  const direct: string[] = [];
  for (const [dep, optional] of edges(rootPkg)) {
    const target = resolve(packages, '', dep);
    if (!target) {
      if (optional) continue;
      throw new SbomError(`${source}: svc depends on ${dep}, which the lock does not contain`);
    }
    const ref = visit(target);
    if (ref) direct.push(ref);
  }
  const sorted = [...components.values()].sort((a, b) =>
    a['bom-ref'] < b['bom-ref'] ? -1 : a['bom-ref'] > b['bom-ref'] ? 1 : 0,
  );
  return {
    root: { name: rootPkg.name, version: rootPkg.version },
    components: sorted,
    dependencies: sorted.map((c) => ({
      ref: c['bom-ref'],
      dependsOn: [...(graph.get(c['bom-ref']) ?? [])].sort(),
    })),
    direct: direct.sort(),
  };
}

/** A UUID derived from the content, so the same inputs give the same document. */
function serialOf(content: unknown): string {
  const h = createHash('sha256').update(JSON.stringify(content)).digest('hex');
  const variant = ((Number.parseInt(h[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  return `urn:uuid:${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

async function timestamp(): Promise<string> {
  const epoch = process.env.SOURCE_DATE_EPOCH;
  if (epoch) {
    if (!/^[0-9]+$/.test(epoch)) throw new SbomError(`SOURCE_DATE_EPOCH=${epoch} is not a number`);
    return new Date(Number(epoch) * 1000).toISOString().replace(/\.000Z$/, 'Z');
  }
  try {
    const { stdout } = await run('git', ['log', '-1', '--format=%ct'], { cwd: ROOT });
    return new Date(Number(stdout.trim()) * 1000).toISOString().replace(/\.000Z$/, 'Z');
  } catch {
    return new Date().toISOString().replace(/\.[0-9]{3}Z$/, 'Z');
  }
}

function bom(
  component: Component,
  components: Component[],
  dependencies: { ref: string; dependsOn: string[] }[],
  time: string,
): Bom {
  const body = { component, components, dependencies };
  return {
    bomFormat: 'CycloneDX',
    specVersion: '1.6',
    serialNumber: serialOf(body),
    version: 1,
    metadata: {
      timestamp: time,
      tools: {
        components: [{ type: 'application', name: 'svc scripts/release/sbom.ts', version: '1' }],
      },
      component,
    },
    components,
    dependencies,
  };
}

export async function npmSbom(lockPath: string): Promise<Bom> {
  const text = await readFile(lockPath, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new SbomError(`cannot read ${lockPath}: ${error.code ?? error.message}`);
  });
  const tree = npmTree(text, path.basename(lockPath));
  const rootRef = npmPurl(tree.root.name, tree.root.version);
  const root: Component = {
    type: 'application',
    'bom-ref': rootRef,
    name: tree.root.name,
    version: tree.root.version,
    purl: rootRef,
  };
  return bom(
    root,
    tree.components,
    [{ ref: rootRef, dependsOn: tree.direct }, ...tree.dependencies],
    await timestamp(),
  );
}

/** One member of a tar archive (the OCI layout is written with or without a leading `./`). */
async function member(archive: string, name: string): Promise<Buffer> {
  for (const candidate of [`./${name}`, name]) {
    try {
      const { stdout } = await run('tar', ['-xOf', archive, candidate], {
        encoding: 'buffer',
        maxBuffer: 16 * 2 ** 20,
      });
      return stdout;
    } catch {
      // try the other spelling
    }
  }
  throw new SbomError(`${archive} has no ${name}: not an OCI image archive`);
}

async function blobJson(archive: string, digest: string): Promise<unknown> {
  const m = /^sha256:([0-9a-f]{64})$/.exec(digest);
  if (!m) throw new SbomError(`${archive}: unsupported digest ${digest}`);
  const data = await member(archive, `blobs/sha256/${m[1]}`);
  if (createHash('sha256').update(data).digest('hex') !== m[1]) {
    throw new SbomError(`${archive}: blob ${digest} does not match its digest`);
  }
  return JSON.parse(data.toString('utf8'));
}

/**
 * Debian's architecture of each exact package version, from the file names of the .debs
 * scripts/build-image.sh downloaded (`<name>_<version>_<arch>.deb`, `:` as `%3a`); a package
 * not in that cache gets no arch qualifier rather than a guess.
 */
async function debArchs(): Promise<Map<string, string>> {
  const dir = path.join(
    process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache'),
    'svc',
    'image-debs',
  );
  const archs = new Map<string, string>();
  for (const file of await readdir(dir).catch(() => [] as string[])) {
    const m = /^([^_]+)_([^_]+)_([^_]+)\.deb$/.exec(file);
    if (m) archs.set(`${m[1]}=${decodeURIComponent(m[2] as string)}`, m[3] as string);
  }
  return archs;
}

export interface ImageFacts {
  digest: string;
  version: string;
  debian: { name: string; version: string }[];
}

/** The image's manifest digest, version label and Debian packages, read from the OCI archive. */
export async function imageFacts(archive: string): Promise<ImageFacts> {
  const index = JSON.parse((await member(archive, 'index.json')).toString('utf8')) as {
    manifests?: { digest: string; annotations?: Record<string, string> }[];
  };
  const digests = [...new Set((index.manifests ?? []).map((m) => m.digest))];
  if (digests.length !== 1) {
    throw new SbomError(`${archive}: expected one image manifest, found ${digests.length}`);
  }
  const digest = digests[0] as string;
  const manifest = (await blobJson(archive, digest)) as { config?: { digest: string } };
  if (!manifest.config?.digest) throw new SbomError(`${archive}: the manifest has no config`);
  const config = (await blobJson(archive, manifest.config.digest)) as {
    config?: { Labels?: Record<string, string> };
  };
  const labels = config.config?.Labels ?? {};
  const list = labels['org.debian.packages'];
  if (!list) {
    throw new SbomError(
      `${archive}: no org.debian.packages label (build the image with scripts/build-image.sh)`,
    );
  }
  const debian = list.split(',').map((entry) => {
    const at = entry.indexOf('=');
    if (at <= 0 || at === entry.length - 1) {
      throw new SbomError(`${archive}: malformed org.debian.packages entry "${entry}"`);
    }
    return { name: entry.slice(0, at), version: entry.slice(at + 1) };
  });
  return { digest, version: labels['org.opencontainers.image.version'] ?? 'unknown', debian };
}

export async function imageSbom(archive: string, lockPath: string): Promise<Bom> {
  const facts = await imageFacts(archive);
  const npm = await npmSbom(lockPath);
  const env = await readFile(path.join(ROOT, 'testcluster', 'versions.env'), 'utf8');
  const helmVersion = /^HELM_VERSION=(\S+)$/m.exec(env)?.[1];
  const imageRef = `pkg:oci/svc@${encodeURIComponent(facts.digest)}?tag=${encodeURIComponent(facts.version)}`;
  const image: Component = {
    type: 'container',
    'bom-ref': imageRef,
    name: 'svc',
    version: facts.version,
    purl: imageRef,
    hashes: [{ alg: 'SHA-256', content: facts.digest.slice('sha256:'.length) }],
  };
  const archs = await debArchs();
  const debs: Component[] = [];
  for (const { name, version } of facts.debian) {
    const ref = debPurl(name, version, archs.get(`${name}=${version}`));
    debs.push({ type: 'library', 'bom-ref': ref, name, version, purl: ref });
  }
  const extra: Component[] = helmVersion
    ? [
        {
          type: 'application',
          'bom-ref': `pkg:golang/helm.sh/helm/v4@${helmVersion}`,
          name: 'helm',
          version: helmVersion,
          purl: `pkg:golang/helm.sh/helm/v4@${helmVersion}`,
          properties: [{ name: 'svc:path', value: '/usr/local/bin/helm' }],
        },
      ]
    : [];
  const app = {
    ...npm.metadata.component,
    properties: [{ name: 'svc:path', value: '/usr/local/bin/svc' }],
  };
  return bom(
    image,
    [app, ...debs, ...extra, ...npm.components],
    [
      {
        ref: imageRef,
        dependsOn: [
          app['bom-ref'],
          ...debs.map((d) => d['bom-ref']),
          ...extra.map((e) => e['bom-ref']),
        ],
      },
      ...npm.dependencies,
    ],
    npm.metadata.timestamp,
  );
}

async function write(out: string, doc: Bom): Promise<void> {
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(`${out}.partial`, `${JSON.stringify(doc, null, 2)}\n`);
  await rename(`${out}.partial`, out);
}

const USAGE =
  'usage: sbom.ts npm [--lock FILE] --out FILE | sbom.ts image --image ARCHIVE [--lock FILE] --out FILE';

export async function main(argv: string[]): Promise<void> {
  const [kind, ...rest] = argv;
  const opts: Record<string, string> = {};
  for (let i = 0; i < rest.length; i += 2) {
    const flag = rest[i] as string;
    const value = rest[i + 1];
    if (!['--lock', '--out', '--image'].includes(flag) || value === undefined) {
      throw new SbomError(`unknown or incomplete argument ${flag}\n${USAGE}`);
    }
    opts[flag.slice(2)] = value;
  }
  const lock = opts.lock ?? path.join(ROOT, 'package-lock.json');
  if (!opts.out) throw new SbomError(`--out is required\n${USAGE}`);
  if (kind === 'npm') {
    if (opts.image) throw new SbomError(`--image belongs to "image"\n${USAGE}`);
    await write(opts.out, await npmSbom(lock));
  } else if (kind === 'image') {
    if (!opts.image) throw new SbomError(`--image is required\n${USAGE}`);
    await write(opts.out, await imageSbom(opts.image, lock));
  } else {
    throw new SbomError(USAGE);
  }
  console.log(opts.out);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(`sbom: ${error instanceof SbomError ? error.message : String(error)}`);
    process.exit(error instanceof SbomError ? 2 : 1);
  });
}
