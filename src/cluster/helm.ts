import { spawn } from 'node:child_process';

/** One release as helm reports it; `status` is helm's own string (deployed, failed, pending-install, …). */
export interface HelmRelease {
  name: string;
  namespace: string;
  revision: number;
  status: string;
  chart: string;
  chartVersion: string;
  appVersion?: string;
  updated?: string;
}

export class HelmError extends Error {
  override name = 'HelmError';
  readonly operation: string;
  /** helm's stderr, trimmed and capped to its last few KiB (the error is at the end). */
  readonly stderr: string;
  /** null when helm did not exit by itself (killed, aborted, or could not start). */
  readonly exitCode: number | null;
  /** helm's own --timeout expired, or the runner killed it past the timeout plus a margin. */
  readonly timedOut: boolean;

  constructor(
    message: string,
    o: { operation: string; stderr: string; exitCode: number | null; timedOut: boolean },
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.operation = o.operation;
    this.stderr = o.stderr;
    this.exitCode = o.exitCode;
    this.timedOut = o.timedOut;
  }
}

export interface HelmApplyOptions {
  release: string;
  namespace: string;
  /** A chart directory, packaged chart or reference helm resolves itself. */
  chart: string;
  /** The complete values; passed on stdin as JSON, never on the command line. */
  values: unknown;
  timeoutMs: number;
  /** Wait (helm's `watcher` strategy) until every resource is ready, up to timeoutMs. */
  wait: boolean;
}

/**
 * The `helm` CLI, typed. install refuses an existing release: the caller decides between
 * install and upgrade by `status()` (undefined → install; otherwise upgrade, which also repairs
 * a `failed` release). A release left `pending-*` (helm killed mid-operation) blocks both until
 * it is rolled back or uninstalled.
 */
export interface HelmRunner {
  install(o: HelmApplyOptions): Promise<HelmRelease>;
  /** Values are reset to the chart's defaults plus exactly `values` (no reuse of old values). */
  upgrade(o: HelmApplyOptions): Promise<HelmRelease>;
  rollback(o: {
    release: string;
    namespace: string;
    revision: number;
    timeoutMs: number;
    wait: boolean;
  }): Promise<void>;
  /** Succeeds when there is no such release. PVCs made from volumeClaimTemplates stay. */
  uninstall(o: {
    release: string;
    namespace: string;
    timeoutMs: number;
    wait: boolean;
  }): Promise<void>;
  /** undefined when there is no such release. */
  status(o: { release: string; namespace: string }): Promise<HelmRelease | undefined>;
  /** The user-supplied values (`helm get values -o json`); `{}` when there were none. */
  values(o: { release: string; namespace: string }): Promise<unknown>;
  manifest(o: { release: string; namespace: string }): Promise<string>;
}

export interface HelmRunnerOptions {
  /** Default 'helm', looked up on PATH. */
  binary?: string;
  /** Omitted in-cluster: helm then uses the pod's ServiceAccount by itself. */
  kubeconfigPath?: string;
  /** The child's whole environment; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Aborting kills every running helm child (SIGTERM, then SIGKILL) and rejects its call. */
  signal?: AbortSignal;
}

/** Past helm's own --timeout, how long before the runner kills it (helm's deadline should win). */
const killMarginMs = 15_000;
/** SIGTERM lets helm mark the release failed instead of leaving it pending-*; then SIGKILL. */
const termGraceMs = 5_000;
/** Reads (status, values, manifest) have no --timeout of their own. */
const readTimeoutMs = 60_000;
const stderrCapBytes = 8 * 1024;

interface Invocation {
  operation: string;
  args: string[];
  /** Written to helm's stdin (values for `-f -`). */
  input?: string;
  timeoutMs: number;
  /** Resolve with stdout and stderr together (helm pull reports the digest on either). */
  captureStderr?: boolean;
}

export function createHelmRunner(o: HelmRunnerOptions = {}): HelmRunner {
  const binary = o.binary ?? 'helm';
  const global = [
    '--color',
    'never',
    ...(o.kubeconfigPath ? ['--kubeconfig', o.kubeconfigPath] : []),
  ];
  const run = (inv: Invocation) =>
    runHelm(binary, { ...inv, args: [...inv.args, ...global] }, o.env ?? process.env, o.signal);

  async function apply(operation: 'install' | 'upgrade', a: HelmApplyOptions) {
    const args = [operation, a.release, a.chart, '--namespace', a.namespace, '--values', '-'];
    args.push('--output', 'json', ...timing(a));
    if (operation === 'upgrade') args.push('--reset-values');
    const stdout = await run({
      operation,
      args,
      input: JSON.stringify(a.values ?? {}),
      timeoutMs: a.timeoutMs,
    }).catch((error: unknown) => {
      throw operation === 'install' ? explainExisting(error, a) : error;
    });
    return releaseFromOutput(operation, stdout);
  }

  return {
    install: (a) => apply('install', a),
    upgrade: (a) => apply('upgrade', a),
    async rollback(a) {
      await run({
        operation: 'rollback',
        args: ['rollback', a.release, String(a.revision), '--namespace', a.namespace, ...timing(a)],
        timeoutMs: a.timeoutMs,
      });
    },
    async uninstall(a) {
      // Foreground cascade with --wait returns only once dependents (ReplicaSets, Pods) are gone.
      const cascade = a.wait ? ['--cascade', 'foreground'] : [];
      await run({
        operation: 'uninstall',
        args: [
          'uninstall',
          a.release,
          '--namespace',
          a.namespace,
          '--ignore-not-found',
          ...cascade,
          ...timing(a, 'legacy'),
        ],
        timeoutMs: a.timeoutMs,
      });
    },
    async status(a) {
      try {
        const stdout = await run({
          operation: 'status',
          args: ['get', 'metadata', a.release, '--namespace', a.namespace, '--output', 'json'],
          timeoutMs: readTimeoutMs,
        });
        return releaseFromMetadata(stdout);
      } catch (error) {
        if (isReleaseNotFound(error)) return undefined;
        throw error;
      }
    },
    async values(a) {
      const stdout = await run({
        operation: 'values',
        args: ['get', 'values', a.release, '--namespace', a.namespace, '--output', 'json'],
        timeoutMs: readTimeoutMs,
      });
      return parseJson('values', stdout) ?? {};
    },
    manifest: (a) =>
      run({
        operation: 'manifest',
        args: ['get', 'manifest', a.release, '--namespace', a.namespace],
        timeoutMs: readTimeoutMs,
      }),
  };
}

export interface HelmPullOptions {
  binary: string;
  /** `oci://<host>/<path>@sha256:<hex>`: helm fetches that manifest and checks its bytes. */
  reference: string;
  /** The chart is unpacked to `<untarDir>/<chart name>`. */
  untarDir: string;
  /** PEM CA certificates for the registry besides the system roots. */
  caFile?: string | undefined;
  /** helm's registry credentials file; a file nobody logged into makes the pull anonymous. */
  registryConfig: string;
  /** The child's whole environment (helm's cache and config homes go here). */
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

/**
 * `helm pull <oci reference> --untar`. Resolves with the manifest digest helm reports having
 * pulled (`Digest: sha256:…`), undefined when it printed none.
 */
export async function helmPull(o: HelmPullOptions): Promise<string | undefined> {
  const args = ['pull', o.reference, '--untar', '--untardir', o.untarDir];
  args.push('--registry-config', o.registryConfig, '--color', 'never');
  if (o.caFile) args.push('--ca-file', o.caFile);
  const output = await runHelm(
    o.binary,
    { operation: 'pull', args, timeoutMs: o.timeoutMs, captureStderr: true },
    o.env,
    o.signal,
  );
  return /^Digest: (sha256:[0-9a-f]{64})\s*$/m.exec(output)?.[1];
}

/**
 * `watcher` (kstatus) for install/upgrade/rollback. Uninstall waits with `legacy`: helm 4's
 * kstatus watcher intermittently reports a foreground-deleted resource as Terminating after it
 * is gone (helm/helm#31766; seen here as "still exists. status: Terminating" seconds into a
 * 90 s wait), which the legacy poller does not.
 */
function timing(o: { timeoutMs: number; wait: boolean }, strategy = 'watcher'): string[] {
  const timeout = ['--timeout', `${Math.max(1, Math.ceil(o.timeoutMs))}ms`];
  return o.wait ? [`--wait=${strategy}`, ...timeout] : timeout;
}

function isReleaseNotFound(error: unknown): boolean {
  return error instanceof HelmError && /release: not found/.test(error.stderr);
}

function explainExisting(error: unknown, a: HelmApplyOptions): unknown {
  if (
    !(error instanceof HelmError && /cannot reuse a name that is still in use/.test(error.stderr))
  ) {
    return error;
  }
  return new HelmError(
    `helm install: release ${a.release} already exists in namespace ${a.namespace}; upgrade it instead`,
    error,
    { cause: error },
  );
}

/** Runs helm once; resolves with stdout on exit 0, rejects with a HelmError otherwise. */
function runHelm(
  binary: string,
  inv: Invocation,
  env: NodeJS.ProcessEnv,
  signal: AbortSignal | undefined,
): Promise<string> {
  const fail = (message: string, stderr: string, exitCode: number | null, timedOut: boolean) =>
    new HelmError(message, { operation: inv.operation, stderr, exitCode, timedOut });
  if (signal?.aborted) {
    return Promise.reject(fail(`helm ${inv.operation} aborted before it started`, '', null, false));
  }
  return new Promise((resolve, reject) => {
    const child = spawn(binary, inv.args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    let stderr = Buffer.alloc(0);
    let killedFor: 'timeout' | 'abort' | undefined;
    let killTimer: NodeJS.Timeout | undefined;

    const terminate = (why: 'timeout' | 'abort') => {
      if (killedFor || child.exitCode !== null || child.signalCode !== null) return;
      killedFor = why;
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), termGraceMs);
    };
    const deadline = setTimeout(() => terminate('timeout'), inv.timeoutMs + killMarginMs);
    const onAbort = () => terminate('abort');
    signal?.addEventListener('abort', onAbort, { once: true });
    const cleanup = () => {
      clearTimeout(deadline);
      clearTimeout(killTimer);
      signal?.removeEventListener('abort', onAbort);
    };

    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = Buffer.concat([stderr, chunk]);
      if (stderr.length > stderrCapBytes) stderr = stderr.subarray(stderr.length - stderrCapBytes);
    });
    // helm may exit before reading stdin (bad flags); the exit code tells the story then.
    child.stdin.on('error', () => {});
    child.stdin.end(inv.input ?? '');

    child.on('error', (error) => {
      cleanup();
      reject(
        fail(`helm ${inv.operation} could not run ${binary}: ${error.message}`, '', null, false),
      );
    });
    child.on('close', (code) => {
      cleanup();
      const text = stderr.toString('utf8').trim();
      if (code === 0 && !killedFor) {
        const out = Buffer.concat(stdout).toString('utf8');
        resolve(inv.captureStderr ? `${out}\n${text}` : out);
        return;
      }
      const ownTimeout = /context deadline exceeded|timed out waiting/i.test(text);
      const timedOut = killedFor === 'timeout' || ownTimeout;
      const how = killedFor
        ? killedFor === 'abort'
          ? 'aborted'
          : `killed after ${inv.timeoutMs + killMarginMs} ms`
        : `failed (exit ${code})`;
      reject(fail(`helm ${inv.operation} ${how}: ${lastLine(text)}`, text, code, timedOut));
    });
  });
}

function lastLine(text: string): string {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  return lines.at(-1)?.trim() ?? 'no output';
}

function parseJson(operation: string, stdout: string): unknown {
  try {
    return JSON.parse(stdout);
  } catch {
    throw new HelmError(`helm ${operation} printed no JSON`, {
      operation,
      stderr: stdout.slice(0, stderrCapBytes),
      exitCode: 0,
      timedOut: false,
    });
  }
}

type Json = Record<string, unknown>;

function obj(value: unknown): Json {
  return typeof value === 'object' && value !== null ? (value as Json) : {};
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function release(operation: string, fields: Partial<Record<keyof HelmRelease, unknown>>) {
  const { name, namespace, status, chart, chartVersion } = fields;
  const revision = Number(fields.revision);
  if (
    !str(name) ||
    !str(namespace) ||
    !str(status) ||
    !str(chart) ||
    !str(chartVersion) ||
    !Number.isInteger(revision)
  ) {
    throw new HelmError(`helm ${operation} printed a release without the expected fields`, {
      operation,
      stderr: JSON.stringify(fields).slice(0, stderrCapBytes),
      exitCode: 0,
      timedOut: false,
    });
  }
  const result: HelmRelease = {
    name: String(name),
    namespace: String(namespace),
    revision,
    status: String(status),
    chart: String(chart),
    chartVersion: String(chartVersion),
  };
  const appVersion = str(fields.appVersion);
  const updated = str(fields.updated);
  if (appVersion) result.appVersion = appVersion;
  if (updated) result.updated = updated;
  return result;
}

/** `helm install|upgrade -o json` prints the whole release object. */
function releaseFromOutput(operation: string, stdout: string): HelmRelease {
  const r = obj(parseJson(operation, stdout));
  const info = obj(r.info);
  const meta = obj(obj(r.chart).metadata);
  return release(operation, {
    name: r.name,
    namespace: r.namespace,
    revision: r.version,
    status: info.status,
    chart: meta.name,
    chartVersion: meta.version,
    appVersion: meta.appVersion,
    updated: info.last_deployed,
  });
}

/** `helm get metadata -o json` (status -o json lacks the chart; list joins name and version). */
function releaseFromMetadata(stdout: string): HelmRelease {
  const m = obj(parseJson('status', stdout));
  return release('status', {
    name: m.name,
    namespace: m.namespace,
    revision: m.revision,
    status: m.status,
    chart: m.chart,
    chartVersion: m.version,
    appVersion: m.appVersion,
    updated: m.deployedAt,
  });
}
