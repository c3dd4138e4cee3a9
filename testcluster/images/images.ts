import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The images testcluster/images/build.sh makes (docs/test-images.md). */
export type TestImageName = 'pause' | 'postgres' | 'haproxy' | 'opensearch' | 'pgbouncer';

export interface TestImage {
  /** The OCI archive, for `ctr -n k8s.io images import` or `umoci unpack`. */
  readonly archive: string;
  /** The image's name once imported, e.g. localhost/svc-test/pause:3.10. */
  readonly ref: string;
}

const script = join(dirname(fileURLToPath(import.meta.url)), 'build.sh');
const building = new Map<TestImageName, Promise<TestImage>>();

/**
 * The image's OCI archive, built once per machine into `${XDG_CACHE_HOME:-~/.cache}/svc/images`
 * (keyed by its inputs) and answered at once afterwards. The script holds a lock, so test files
 * in parallel processes build an image once; within one process the promise is shared.
 */
export function builtTestImage(name: TestImageName): Promise<TestImage> {
  let image = building.get(name);
  if (!image) {
    image = build(name);
    building.set(name, image);
    // A failed build is not remembered: the next caller gets a fresh attempt and its own error.
    image.catch(() => building.delete(name));
  }
  return image;
}

async function build(name: TestImageName): Promise<TestImage> {
  const child = spawn('bash', [script, name], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  const archive = /^ARCHIVE=(.+)$/m.exec(stdout)?.[1];
  const ref = /^REF=(.+)$/m.exec(stdout)?.[1];
  if (code !== 0 || archive === undefined || ref === undefined) {
    // The build's own log says why (a missing library, a failed download): keep its tail.
    const tail = stderr.trim().split('\n').slice(-15).join('\n');
    throw new Error(`building test image ${name} failed (exit ${code}):\n${tail}`);
  }
  return { archive, ref };
}
