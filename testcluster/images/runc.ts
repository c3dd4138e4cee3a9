import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs a test image (testcluster/images/build.sh) with runc alone, without containerd or a
 * kubelet: `umoci unpack` makes an OCI runtime bundle, the bundle's config is changed the way
 * the charts run the container (uid, read-only root, volumes, no capabilities), and runc runs it
 * in its own new network, PID, mount, IPC and UTS namespaces. Only loopback exists in that
 * network namespace, so nothing the container does reaches any network of the machine.
 * docs/test-images.md says what this machine needs for it (runc, umoci, cgroup v1).
 */

export interface RuncMount {
  /** Path inside the container. */
  readonly destination: string;
  /** A host directory or file to bind; absent for a tmpfs. */
  readonly source?: string;
  readonly readOnly?: boolean;
}

export interface RuncOptions {
  readonly archive: string;
  /** The tag inside the archive's layout (the ref's tag, e.g. "18"). */
  readonly tag: string;
  /** Replaces the image's entrypoint + cmd when given. */
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** Defaults to the image's user. */
  readonly user?: { readonly uid: number; readonly gid: number };
  /** Supplementary groups (the charts' fsGroup). */
  readonly additionalGids?: readonly number[];
  readonly mounts?: readonly RuncMount[];
  /** Default true, as the charts' readOnlyRootFilesystem. */
  readonly readOnlyRoot?: boolean;
}

export interface ExecResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RuncContainer {
  readonly id: string;
  /** The container's first process, seen from the host. */
  readonly pid: number;
  /** /proc/<pid>/ns/net: `nsenter --net=<this>` reaches the container's loopback. */
  readonly netns: string;
  /** Runs a command inside the running container (`runc exec`). */
  exec(
    args: readonly string[],
    options?: { env?: Record<string, string>; timeoutMs?: number },
  ): Promise<ExecResult>;
  /** The container's stdout and stderr so far. */
  logs(): Promise<string>;
  /** `running`, `stopped`, ... as runc reports it. */
  status(): Promise<string>;
  /** Sends a signal and waits until the container has stopped; answers how long it took. */
  stop(signal: string, timeoutMs: number): Promise<number>;
  /** Deletes the container (killing it if needed) and its bundle; checks nothing is left. */
  remove(): Promise<void>;
}

const run = (file: string, args: readonly string[], timeoutMs = 60_000) =>
  new Promise<ExecResult>((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      if (error && code === -1)
        reject(new Error(`${file} ${args.join(' ')}: ${error.message}\n${stderr}`));
      else resolve({ code, stdout, stderr });
    });
  });

const must = async (file: string, args: readonly string[]) => {
  const result = await run(file, args);
  if (result.code !== 0)
    throw new Error(`${file} ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return result.stdout;
};

interface RuntimeSpec {
  process: {
    terminal?: boolean;
    user: { uid: number; gid: number; additionalGids?: number[] };
    args: string[];
    env: string[];
    noNewPrivileges?: boolean;
    capabilities?: Record<string, string[]>;
  };
  root: { path: string; readonly?: boolean };
  mounts: { destination: string; type: string; source: string; options: string[] }[];
  linux: { namespaces: { type: string; path?: string }[]; cgroupsPath?: string };
}

export async function runImage(options: RuncOptions): Promise<RuncContainer> {
  const work = await mkdtemp(join(tmpdir(), 'svc-runc-'));
  const id = `svc-test-${work.slice(-6).toLowerCase()}`;
  const state = join(work, 'state');
  const bundle = join(work, 'bundle');
  const layout = join(work, 'layout');
  const logPath = join(work, 'container.log');
  let created = false;

  const runc = (args: readonly string[], timeoutMs?: number) =>
    run('runc', ['--root', state, ...args], timeoutMs);
  const remove = async () => {
    if (created) {
      await runc(['delete', '--force', id]);
      const left = await runc(['state', id]);
      if (left.code === 0) throw new Error(`runc container ${id} still exists after delete`);
    }
    await rm(work, { recursive: true, force: true });
    // runc made the container's cgroups (one per v1 hierarchy) and removes them on delete, but
    // on a loaded machine its rmdir can lose the race with the last exiting threads and leave
    // them empty: remove what is left once no task remains, and fail if that is not possible.
    const leftCgroups = async () =>
      (await must('sh', ['-c', `ls -d /sys/fs/cgroup/*/${id} 2>/dev/null || true`]))
        .trim()
        .split('\n')
        .filter(Boolean);
    await waitFor(`cgroups of ${id} removed`, 30_000, async () => {
      for (const dir of await leftCgroups()) {
        await rmdir(dir).catch(() => {});
      }
      return (await leftCgroups()).length === 0;
    });
    const mounts = await readFile('/proc/self/mountinfo', 'utf8');
    if (mounts.includes(work)) throw new Error(`mounts left under ${work}`);
  };

  try {
    await mkdir(layout);
    await must('tar', ['-C', layout, '-xf', options.archive]);
    await must('umoci', ['unpack', '--image', `${layout}:${options.tag}`, bundle]);
    const specPath = join(bundle, 'config.json');
    const spec = JSON.parse(await readFile(specPath, 'utf8')) as RuntimeSpec;
    // The bundle must ask for a new network namespace: a path would join an existing one.
    const net = spec.linux.namespaces.find((ns) => ns.type === 'network');
    if (!net || net.path) throw new Error('the bundle does not ask for a new network namespace');
    spec.process.terminal = false;
    if (options.args) spec.process.args = [...options.args];
    if (options.user) spec.process.user = { uid: options.user.uid, gid: options.user.gid };
    if (options.additionalGids) spec.process.user.additionalGids = [...options.additionalGids];
    const env = new Map(spec.process.env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv] as const));
    for (const [key, value] of Object.entries(options.env ?? {})) env.set(key, `${key}=${value}`);
    spec.process.env = [...env.values()];
    // As the charts: allowPrivilegeEscalation false, capabilities drop ALL.
    spec.process.noNewPrivileges = true;
    spec.process.capabilities = {
      bounding: [],
      effective: [],
      inheritable: [],
      permitted: [],
      ambient: [],
    };
    spec.root.readonly = options.readOnlyRoot ?? true;
    for (const m of options.mounts ?? []) {
      spec.mounts.push(
        m.source === undefined
          ? {
              destination: m.destination,
              type: 'tmpfs',
              source: 'tmpfs',
              options: ['nosuid', 'nodev', 'mode=1777'],
            }
          : {
              destination: m.destination,
              type: 'bind',
              source: m.source,
              options: ['rbind', m.readOnly ? 'ro' : 'rw', 'nosuid', 'nodev'],
            },
      );
    }
    // One cgroup directory per hierarchy, named so remove() can check it is gone.
    spec.linux.cgroupsPath = `/${id}`;
    await writeFile(specPath, JSON.stringify(spec));
    await mkdir(state);

    // create, then bring loopback up, then start: the order a CNI loopback plugin gives a pod.
    const log = openSync(logPath, 'a');
    try {
      const code = await new Promise<number | null>((resolve, reject) => {
        const child = spawn('runc', ['--root', state, 'create', '--bundle', bundle, id], {
          stdio: ['ignore', log, log],
        });
        child.on('error', reject);
        child.on('close', resolve);
      });
      if (code !== 0)
        throw new Error(`runc create exited ${code}: ${await readFile(logPath, 'utf8')}`);
    } finally {
      closeSync(log);
    }
    created = true;
    const info = JSON.parse(await must('runc', ['--root', state, 'state', id])) as { pid: number };
    const netns = `/proc/${info.pid}/ns/net`;
    await must('nsenter', [`--net=${netns}`, 'ip', 'link', 'set', 'lo', 'up']);
    await must('runc', ['--root', state, 'start', id]);

    const status = async () => {
      const result = await runc(['state', id]);
      return result.code === 0 ? (JSON.parse(result.stdout) as { status: string }).status : 'gone';
    };
    return {
      id,
      pid: info.pid,
      netns,
      exec: async (args, execOptions = {}) => {
        const envArgs = Object.entries(execOptions.env ?? {}).flatMap(([k, v]) => [
          '--env',
          `${k}=${v}`,
        ]);
        return runc(['exec', ...envArgs, id, ...args], execOptions.timeoutMs ?? 60_000);
      },
      logs: async () => (existsSync(logPath) ? readFile(logPath, 'utf8') : ''),
      status,
      stop: async (signal, timeoutMs) => {
        const started = Date.now();
        await must('runc', ['--root', state, 'kill', id, signal]);
        while ((await status()) !== 'stopped') {
          if (Date.now() - started > timeoutMs)
            throw new Error(`${id} did not stop within ${timeoutMs} ms of ${signal}`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        return Date.now() - started;
      },
      remove,
    };
  } catch (error) {
    await remove().catch(() => {});
    throw error;
  }
}

/** Polls `check` until it answers true; throws `what` with the last error after the deadline. */
export async function waitFor(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
): Promise<number> {
  const started = Date.now();
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return Date.now() - started;
    } catch (error) {
      last = error;
    }
    if (Date.now() - started > timeoutMs) {
      throw new Error(`${what}: not within ${timeoutMs} ms${last ? ` (${String(last)})` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
