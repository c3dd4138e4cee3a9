import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ApiException, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { runBuildScript } from './build-script.ts';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));

export const components = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kwok',
] as const;
export type Component = (typeof components)[number];

/** A process of a cluster, with what identifies it again after a PID could have been reused. */
export interface ClusterProcess {
  readonly component: Component;
  readonly pid: number;
  readonly binary: string;
}

/** What the namespace and ServiceAccount helpers need; both Cluster and test handles have it. */
export interface ClusterAccess {
  readonly kubeconfigPath: string;
}

export interface Cluster extends ClusterAccess {
  readonly server: string;
  readonly dir: string;
  readonly binDir: string;
  readonly pids: Readonly<Record<Component, number>>;
  readonly processes: readonly ClusterProcess[];
  /** Every loopback port the cluster listens on. */
  readonly ports: readonly number[];
  stop(): Promise<void>;
}

export interface StartClusterOptions {
  /** Where certificates, data and logs go; a fresh temporary directory by default. */
  readonly dir?: string;
  /** Let the processes outlive this Node process (for `cluster:up`). */
  readonly detached?: boolean;
  readonly nodes?: number;
  readonly timeoutMs?: number;
}

export interface Binaries {
  readonly binDir: string;
  readonly stageDir: string;
}

const serviceClusterIpRange = '10.96.0.0/16';
const serviceAccountIssuer = 'https://kubernetes.default.svc.cluster.local';
const kwokNodeAnnotation = 'kwok.x-k8s.io/node';

/**
 * Builds the binaries when the cache misses (minutes when cold) and returns where they are.
 * Throws a one-line error naming Go when it is missing, so cluster tests fail loudly.
 */
export async function ensureBinaries(): Promise<Binaries> {
  const binDir = await runBuildScript(join(here, 'build.sh'), 'BIN_DIR');
  return { binDir, stageDir: join(dirname(binDir), 'stage') };
}

export async function startCluster(opts: StartClusterOptions = {}): Promise<Cluster> {
  const { binDir, stageDir } = await ensureBinaries();
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'svc-testcluster-')));
  const detached = opts.detached ?? false;
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  await mkdir(join(dir, 'logs'), { recursive: true });
  const launched: Launched[] = [];
  const launch = (component: Component, args: string[], env?: NodeJS.ProcessEnv): Launched => {
    const proc = launchProcess({ dir, binDir, detached, component, args, env });
    launched.push(proc);
    return proc;
  };

  try {
    const pki = await createPki(join(dir, 'pki'));
    const ports = await freePorts([
      'etcd',
      'etcdPeer',
      'apiserver',
      'controllerManager',
      'scheduler',
    ]);
    const server = `https://127.0.0.1:${ports.apiserver}`;
    const kubeconfigs = await writeKubeconfigs(dir, server, pki);

    launch('etcd', etcdArgs(dir, ports.etcd, ports.etcdPeer));
    const apiserver = launch(
      'kube-apiserver',
      apiserverArgs(dir, pki, ports.apiserver, ports.etcd),
    );
    await waitFor('kube-apiserver /readyz', apiserver, launched, deadline, () =>
      isReady(server, pki),
    );

    const controllerManager = launch(
      'kube-controller-manager',
      controllerManagerArgs(dir, pki, kubeconfigs, ports.controllerManager),
    );
    launch('kube-scheduler', schedulerArgs(kubeconfigs.scheduler, ports.scheduler));
    // kwok loads ~/.kwok/kwok.yaml when present; a private HOME keeps a developer's own out.
    const kwok = launch('kwok', kwokArgs(kubeconfigs.admin, stageDir), {
      ...process.env,
      HOME: dir,
    });

    const core = adminKubeConfig(kubeconfigs.admin).makeApiClient(CoreV1Api);
    const nodeNames = Array.from({ length: opts.nodes ?? 1 }, (_, i) => `kwok-node-${i}`);
    await Promise.all(nodeNames.map((name) => createFakeNode(core, name)));
    await waitFor('a Ready kwok node', kwok, launched, deadline, () =>
      allNodesReady(core, nodeNames),
    );
    await waitFor('the default ServiceAccount', controllerManager, launched, deadline, () =>
      serviceAccountExists(core, 'default', 'default'),
    );

    const processes = launched.map(({ component, pid, binary }) => ({ component, pid, binary }));
    const cluster: Cluster = {
      kubeconfigPath: kubeconfigs.admin,
      server,
      dir,
      binDir,
      processes,
      pids: Object.fromEntries(processes.map((p) => [p.component, p.pid])) as Record<
        Component,
        number
      >,
      ports: Object.values(ports),
      stop: async () => {
        await stopCluster(processes, dir);
        // Children of this process are only gone from the PID table once Node has reaped them.
        await Promise.all(launched.map(reaped));
      },
    };
    if (!detached) {
      attached.set(dir, processes);
    }
    return cluster;
  } catch (error) {
    await stopProcesses(launched);
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Stops the processes by PID (SIGTERM, then SIGKILL) and removes the cluster's directory. */
export async function stopCluster(processes: readonly ClusterProcess[], dir: string) {
  await stopProcesses(processes);
  await rm(dir, { recursive: true, force: true });
  attached.delete(dir);
}

/**
 * Stops in reverse start order, each with SIGTERM then SIGKILL: the API server shuts down in
 * about a second once its clients are gone, but hangs in shutdown when etcd dies under it.
 */
export async function stopProcesses(processes: readonly ClusterProcess[]): Promise<void> {
  for (const proc of [...processes].reverse()) {
    for (const [signal, graceMs] of [
      ['SIGTERM', 10_000],
      ['SIGKILL', 5_000],
    ] as const) {
      if (!isRunning(proc)) {
        break;
      }
      try {
        process.kill(proc.pid, signal);
      } catch {
        // Exited between the check and the signal.
      }
      await exited(proc, graceMs);
    }
    if (isRunning(proc)) {
      throw new Error(`testcluster: ${proc.component} (${proc.pid}) still runs after SIGKILL`);
    }
  }
}

/** True while the PID still belongs to the recorded binary; a reused PID reads as exited. */
export function isRunning(proc: Pick<ClusterProcess, 'pid' | 'binary'>): boolean {
  try {
    const stat = readFileSync(`/proc/${proc.pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) {
      return false;
    }
    return readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8').split('\0')[0] === proc.binary;
  } catch {
    return false;
  }
}

/** Creates a uniquely named namespace and waits until Pods can be created in it. */
export async function createTestNamespace(access: ClusterAccess, prefix: string): Promise<string> {
  const core = adminKubeConfig(access.kubeconfigPath).makeApiClient(CoreV1Api);
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({
    body: { metadata: { name, labels: { 'svc.test/namespace': 'true' } } },
  });
  // The ServiceAccount admission plugin rejects Pods until the controller made `default`.
  await poll(`ServiceAccount ${name}/default`, 30_000, () =>
    serviceAccountExists(core, name, 'default'),
  );
  return name;
}

/**
 * Mints a token for the ServiceAccount (creating the account if needed) with the TokenRequest
 * API and writes a kubeconfig that acts as it. Returns the kubeconfig's path.
 */
export async function serviceAccountKubeconfig(
  access: ClusterAccess,
  namespace: string,
  name: string,
): Promise<string> {
  const admin = adminKubeConfig(access.kubeconfigPath);
  const core = admin.makeApiClient(CoreV1Api);
  try {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 409)) {
      throw error;
    }
  }
  const tokenRequest = await core.createNamespacedServiceAccountToken({
    namespace,
    name,
    body: { spec: { audiences: [serviceAccountIssuer], expirationSeconds: 3600 } },
  });
  const token = tokenRequest.status?.token;
  const cluster = admin.getCurrentCluster();
  if (!token || !cluster?.caData) {
    throw new Error(`testcluster: no token for ServiceAccount ${namespace}/${name}`);
  }
  const user = `system:serviceaccount:${namespace}:${name}`;
  const path = join(dirname(access.kubeconfigPath), `sa-${namespace}-${name}.kubeconfig`);
  await writeFile(path, kubeconfigText(cluster.server, cluster.caData, user, { token }), {
    mode: 0o600,
  });
  return path;
}

// Clusters of this process that are not detached die with it, even when a caller forgot stop().
const attached = new Map<string, readonly ClusterProcess[]>();
process.on('exit', () => {
  for (const [dir, processes] of attached) {
    for (const proc of processes.filter(isRunning)) {
      process.kill(proc.pid, 'SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

interface Launched extends ClusterProcess {
  readonly child: ChildProcess;
  readonly logPath: string;
  exit?: string;
}

function launchProcess(spec: {
  dir: string;
  binDir: string;
  detached: boolean;
  component: Component;
  args: string[];
  env: NodeJS.ProcessEnv | undefined;
}): Launched {
  const binary = join(spec.binDir, spec.component);
  const logPath = join(spec.dir, 'logs', `${spec.component}.log`);
  const log = openSync(logPath, 'a');
  const child = spawn(binary, spec.args, {
    cwd: spec.dir,
    detached: spec.detached,
    env: spec.env ?? process.env,
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  if (spec.detached) {
    child.unref();
  }
  if (child.pid === undefined) {
    throw new Error(`testcluster: could not start ${binary}`);
  }
  const launched: Launched = { component: spec.component, pid: child.pid, binary, child, logPath };
  child.on('exit', (code, signal) => {
    launched.exit = signal ? `signal ${signal}` : `code ${code}`;
  });
  return launched;
}

function reaped(proc: Launched): Promise<unknown> {
  return proc.exit !== undefined || proc.child.exitCode !== null || proc.child.signalCode !== null
    ? Promise.resolve()
    : once(proc.child, 'exit');
}

/** Polls until check() is true; fails early, with the log tail, if any process has exited. */
async function waitFor(
  what: string,
  blame: Launched,
  launched: readonly Launched[],
  deadline: number,
  check: () => Promise<boolean>,
): Promise<void> {
  for (;;) {
    const dead = launched.find((p) => p.exit !== undefined);
    if (dead) {
      throw new Error(
        `testcluster: ${dead.component} exited (${dead.exit}) while waiting for ${what}\n` +
          (await logTail(dead.logPath)),
      );
    }
    if (await check().catch(() => false)) {
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `testcluster: timed out waiting for ${what}\n${await logTail(blame.logPath)}`,
      );
    }
    await sleep(200);
  }
}

async function poll(what: string, timeoutMs: number, check: () => Promise<boolean>) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) {
      throw new Error(`testcluster: timed out waiting for ${what}`);
    }
    await sleep(100);
  }
}

async function logTail(path: string, lines = 30): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return `--- last ${lines} lines of ${path} ---\n${text.trimEnd().split('\n').slice(-lines).join('\n')}`;
}

async function exited(proc: ClusterProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (isRunning(proc) && Date.now() < deadline) {
    await sleep(20);
  }
}

/** Distinct free loopback ports, one per name; the OS picks them, then the listeners close. */
async function freePorts<const Name extends string>(
  names: readonly Name[],
): Promise<Record<Name, number>> {
  const servers = await Promise.all(
    names.map(
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => {
    const address = server.address();
    if (address === null || typeof address === 'string') {
      throw new Error('testcluster: no port from the loopback listener');
    }
    return address.port;
  });
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return Object.fromEntries(names.map((name, i) => [name, ports[i]])) as Record<Name, number>;
}

interface Pki {
  readonly dir: string;
  readonly caCert: string;
  readonly caKey: string;
  readonly adminCert: string;
  readonly adminKey: string;
}

/** A fresh CA, serving and client certificates and ServiceAccount signing key for each run. */
async function createPki(dir: string): Promise<Pki> {
  await mkdir(dir, { recursive: true });
  const ca = join(dir, 'ca');
  const newCert = 'req -x509 -days 7 -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1';
  const files = (name: string) => [
    '-keyout',
    join(dir, `${name}.key`),
    '-out',
    join(dir, `${name}.crt`),
  ];
  await run('openssl', [...newCert.split(' '), ...files('ca'), '-subj', '/CN=svc-testcluster-ca']);
  const issue = (name: string, subject: string, ...extensions: string[]) => {
    const leaf = ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature'];
    const addext = [...leaf, ...extensions].flatMap((extension) => ['-addext', extension]);
    const signer = ['-CA', `${ca}.crt`, '-CAkey', `${ca}.key`];
    return run('openssl', [
      ...newCert.split(' '),
      ...signer,
      ...files(name),
      '-subj',
      subject,
      ...addext,
    ]);
  };
  await Promise.all([
    issue(
      'apiserver',
      '/CN=kube-apiserver',
      'extendedKeyUsage=serverAuth',
      'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes.default.svc',
    ),
    issue('admin', '/O=system:masters/CN=svc-testcluster-admin', 'extendedKeyUsage=clientAuth'),
    issue(
      'controller-manager',
      '/CN=system:kube-controller-manager',
      'extendedKeyUsage=clientAuth',
    ),
    issue('scheduler', '/CN=system:kube-scheduler', 'extendedKeyUsage=clientAuth'),
  ]);
  const serviceAccount = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  await writeFile(
    join(dir, 'sa.key'),
    serviceAccount.privateKey.export({ type: 'pkcs8', format: 'pem' }),
    { mode: 0o600 },
  );
  await writeFile(
    join(dir, 'sa.pub'),
    serviceAccount.publicKey.export({ type: 'spki', format: 'pem' }),
  );
  return {
    dir,
    caCert: `${ca}.crt`,
    caKey: `${ca}.key`,
    adminCert: join(dir, 'admin.crt'),
    adminKey: join(dir, 'admin.key'),
  };
}

interface Kubeconfigs {
  readonly admin: string;
  readonly controllerManager: string;
  readonly scheduler: string;
}

async function writeKubeconfigs(dir: string, server: string, pki: Pki): Promise<Kubeconfigs> {
  const ca = (await readFile(pki.caCert)).toString('base64');
  const write = async (file: string, user: string, certName: string) => {
    const [cert, key] = await Promise.all([
      readFile(join(pki.dir, `${certName}.crt`)),
      readFile(join(pki.dir, `${certName}.key`)),
    ]);
    const path = join(dir, file);
    const credentials = {
      'client-certificate-data': cert.toString('base64'),
      'client-key-data': key.toString('base64'),
    };
    await writeFile(path, kubeconfigText(server, ca, user, credentials), { mode: 0o600 });
    return path;
  };
  const [admin, controllerManager, scheduler] = await Promise.all([
    write('admin.kubeconfig', 'svc-testcluster-admin', 'admin'),
    write('controller-manager.kubeconfig', 'system:kube-controller-manager', 'controller-manager'),
    write('scheduler.kubeconfig', 'system:kube-scheduler', 'scheduler'),
  ]);
  return { admin, controllerManager, scheduler };
}

/** JSON is valid YAML, and every kubeconfig reader (client-go, client-node, helm) accepts it. */
function kubeconfigText(
  server: string,
  caData: string,
  user: string,
  credentials: Record<string, string>,
): string {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'svc-testcluster', cluster: { server, 'certificate-authority-data': caData } },
    ],
    users: [{ name: user, user: credentials }],
    contexts: [{ name: 'svc-testcluster', context: { cluster: 'svc-testcluster', user } }],
    'current-context': 'svc-testcluster',
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

function adminKubeConfig(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

function etcdArgs(dir: string, port: number, peerPort: number): string[] {
  const peer = `http://127.0.0.1:${peerPort}`;
  return [
    '--name=svc-testcluster',
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=http://127.0.0.1:${port}`,
    `--advertise-client-urls=http://127.0.0.1:${port}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=svc-testcluster=${peer}`,
    // Throwaway data: skipping fsync makes API writes several times faster on slow disks.
    '--unsafe-no-fsync',
    '--log-level=warn',
  ];
}

function apiserverArgs(dir: string, pki: Pki, port: number, etcdPort: number): string[] {
  return [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${port}`,
    `--cert-dir=${join(dir, 'apiserver')}`,
    `--tls-cert-file=${join(pki.dir, 'apiserver.crt')}`,
    `--tls-private-key-file=${join(pki.dir, 'apiserver.key')}`,
    `--client-ca-file=${pki.caCert}`,
    // Real nodes' kubelets (testcluster/node) trust the cluster CA: logs, exec, port-forward.
    `--kubelet-client-certificate=${pki.adminCert}`,
    `--kubelet-client-key=${pki.adminKey}`,
    '--anonymous-auth=false',
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction,ValidatingAdmissionPolicy',
    `--service-account-issuer=${serviceAccountIssuer}`,
    `--service-account-key-file=${join(pki.dir, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(pki.dir, 'sa.key')}`,
    `--service-cluster-ip-range=${serviceClusterIpRange}`,
    // Endpoints may not point at loopback, and nothing in-cluster dials the API server here.
    '--endpoint-reconciler-type=none',
    '--allow-privileged=true',
    '--profiling=false',
  ];
}

function controllerManagerArgs(dir: string, pki: Pki, kubeconfigs: Kubeconfigs, port: number) {
  const kubeconfig = kubeconfigs.controllerManager;
  return [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${port}`,
    `--cert-dir=${join(dir, 'controller-manager')}`,
    '--controllers=*',
    '--use-service-account-credentials=true',
    `--service-account-private-key-file=${join(pki.dir, 'sa.key')}`,
    `--root-ca-file=${pki.caCert}`,
    `--cluster-signing-cert-file=${pki.caCert}`,
    `--cluster-signing-key-file=${pki.caKey}`,
    `--service-cluster-ip-range=${serviceClusterIpRange}`,
    // One instance per cluster: leader election would only delay the start by a lease period.
    '--leader-elect=false',
    '--profiling=false',
  ];
}

function schedulerArgs(kubeconfig: string, port: number): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${port}`,
    '--leader-elect=false',
    '--profiling=false',
  ];
}

function kwokArgs(kubeconfig: string, stageDir: string): string[] {
  const stages = [
    'node-initialize',
    'node-heartbeat-with-lease',
    'pod-ready',
    'pod-complete',
    'pod-delete',
  ];
  return [
    `--kubeconfig=${kubeconfig}`,
    ...stages.map((stage) => `--config=${join(stageDir, `${stage}.yaml`)}`),
    '--manage-all-nodes=false',
    `--manage-nodes-with-annotation-selector=${kwokNodeAnnotation}=fake`,
    '--node-ip=127.0.0.1',
    // Without a lease duration kwok never renews the node's Lease: every ~55 s the
    // controller-manager marks the node NotReady, its pods Ready=False, and kwok never makes a
    // running pod ready again, so readiness waits fail at random.
    '--node-lease-duration-seconds=40',
  ];
}

async function createFakeNode(core: CoreV1Api, name: string): Promise<void> {
  await core.createNode({
    body: {
      metadata: {
        name,
        annotations: { [kwokNodeAnnotation]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
        labels: {
          'kubernetes.io/arch': 'amd64',
          'kubernetes.io/hostname': name,
          'kubernetes.io/os': 'linux',
          type: 'kwok',
        },
      },
    },
  });
}

async function allNodesReady(core: CoreV1Api, names: readonly string[]): Promise<boolean> {
  const nodes = await Promise.all(names.map((name) => core.readNode({ name })));
  return nodes.every((node) =>
    node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
}

async function serviceAccountExists(core: CoreV1Api, namespace: string, name: string) {
  await core.readNamespacedServiceAccount({ namespace, name });
  return true;
}

function isReady(server: string, pki: Pki): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      `${server}/readyz`,
      {
        ca: readFileSync(pki.caCert),
        cert: readFileSync(pki.adminCert),
        key: readFileSync(pki.adminKey),
        timeout: 2_000,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}
