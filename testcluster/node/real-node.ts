// A real kubelet node beside the kwok nodes: containerd, runc, the CNI bridge, the kubelet and
// kube-proxy run inside a network namespace this code creates, so no Pod address ever exists in
// the machine's own namespace. The API server stays on the host's loopback; the node reaches it
// through socat forwarders over unix sockets (docs/test-cluster.md "The real node").
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  rmdir,
  stat,
  writeFile,
} from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  ApiException,
  CoreV1Api,
  DiscoveryV1Api,
  KubeConfig,
  type V1Node,
} from '@kubernetes/client-node';
import { type ClusterAccess, ensureBinaries, isRunning } from '../harness.ts';
import {
  apiserverPortInNode,
  cniConfig,
  containerdConfig,
  kubeconfigText,
  kubeletConfig,
  kubeProxyConfig,
  nodeAddress,
  nodePaths,
  podNetwork,
  realNodeLabel,
} from './configs.ts';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));

export interface RealNode {
  readonly name: string;
  readonly netnsName: string;
  readonly netnsPath: string;
  readonly containerdSocket: string;
  readonly dir: string;
  /** The node's processes (socat forwarders, containerd, kubelet, kube-proxy) by PID. */
  readonly pids: readonly number[];
  /** Milliseconds from the call to a Ready Node. */
  readonly readyAfterMs: number;
  /** This node's Pod addresses (a /24 of 10.244.0.0/16, picked at random per node). */
  readonly podSubnet: string;
  /** The kubelet's port on the host's loopback (the API server's way in; admin cert works). */
  readonly kubeletPort: number;
  /**
   * Imports an OCI archive into the node's containerd; answers the image names it created. An
   * archive whose index names only tags (`npm run image`: `svc`, `<version>`) needs `baseName`
   * (e.g. `localhost/svc`): the CRI resolves a bare `import-…:svc` to docker.io and misses it.
   */
  importImage(archivePath: string, baseName?: string): Promise<string[]>;
  /** Runs a command inside the node's network namespace (e.g. to reach a Pod IP). */
  inNode(command: string, args: readonly string[]): Promise<{ stdout: string; stderr: string }>;
  /**
   * A listener on the host's 127.0.0.1 (a free port) relaying into the node's namespace to
   * host:port (a ClusterIP or Pod IP), through a unix socket as the API server's forwarders do:
   * no address is added to the host's namespace. Closed by close() and by stop().
   */
  forward(host: string, port: number): Promise<Forward>;
  /** The last lines of a component's log (containerd, kubelet, kube-proxy, forwarders). */
  logTail(component: string, lines?: number): Promise<string>;
  stop(): Promise<void>;
}

export interface Forward {
  /** The port on the host's 127.0.0.1. */
  readonly port: number;
  close(): Promise<void>;
}

export interface StartRealNodeOptions {
  readonly timeoutMs?: number;
  /** Images (OCI archives) imported before the node registers, e.g. the pause image. */
  readonly images?: readonly string[];
}

/** Kernel settings the kubelet changes machine-wide at start (pkg/kubelet/cm); restored at stop. */
const kubeletSysctls = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
];
const cgroupRoot = '/sys/fs/cgroup';
/** The cluster's Service range (testcluster/harness.ts --service-cluster-ip-range). */
const serviceRange = '10.96.0.0/16';
const serviceRangePrefix = '10.96.';
const sysctlState = '/run/svc-realnode';

interface Launched {
  readonly component: string;
  readonly pid: number;
  readonly binary: string;
  readonly child: ChildProcess;
  readonly logPath: string;
  exit?: string;
}

/**
 * Starts a real node in `cluster` (the admin kubeconfig beside the cluster's pki/ directory, as
 * harness.ts writes them) and resolves once the Node is Ready. Everything it starts or changes
 * is undone by stop(), and by itself when start-up fails.
 */
export async function startRealNode(
  cluster: ClusterAccess,
  opts: StartRealNodeOptions = {},
): Promise<RealNode> {
  const started = performance.now();
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  const swept = await sweepStaleRealNodes();
  if (swept.length > 0) console.error(`realnode: cleaned up after dead runs: ${swept.join(', ')}`);
  const { binDir } = await ensureBinaries();
  const clusterDir = dirname(cluster.kubeconfigPath);
  const pkiDir = join(clusterDir, 'pki');
  const adminConfig = new KubeConfig();
  adminConfig.loadFromFile(cluster.kubeconfigPath);
  const apiserverPort = Number(new URL(adminConfig.getCurrentCluster()?.server ?? '').port);
  const core = adminConfig.makeApiClient(CoreV1Api);

  const suffix = randomBytes(4).toString('hex');
  let kubeletPort = 0;
  const subnetIndex = await pickSubnetIndex();
  const name = `real-${suffix}`;
  const netnsName = `svcnode-${suffix}`;
  const netnsPath = `/run/netns/${netnsName}`;
  const dir = await mkdtemp(join(tmpdir(), 'svc-realnode-'));
  const paths = nodePaths(dir);
  const nodeCgroup = `/svc-realnode-${suffix}`;
  const launched: Launched[] = [];
  const state: TeardownState = {
    name,
    dir,
    netnsPath,
    netnsName,
    nodeCgroup,
    launched,
    containerdSocket: paths.containerdSocket,
    core,
    sysctls: await claimSysctls(netnsName, { pid: process.pid, dir, suffix, subnetIndex }),
    netnsCreated: false,
  };

  const launch = (component: string, binary: string, args: string[], inNetns = true) => {
    const logPath = join(dir, 'logs', `${component}.log`);
    const log = openSync(logPath, 'a');
    // nsenter execs the binary (no fork), so the PID is the component's own; a process group
    // of its own lets stop() reach socat's per-connection children too.
    const child = inNetns
      ? spawn('nsenter', [`--net=${netnsPath}`, binary, ...args], {
          cwd: dir,
          detached: true,
          stdio: ['ignore', log, log],
        })
      : spawn(binary, args, { cwd: dir, detached: true, stdio: ['ignore', log, log] });
    closeSync(log);
    if (child.pid === undefined) {
      throw new Error(`realnode: could not start ${component}`);
    }
    const proc: Launched = { component, pid: child.pid, binary, child, logPath };
    child.on('exit', (code, signal) => {
      proc.exit = signal ? `signal ${signal}` : `code ${code}`;
    });
    launched.push(proc);
    return proc;
  };
  const logTail = async (component: string, lines = 40) => {
    const path = join(dir, 'logs', `${component}.log`);
    const text = await readFile(path, 'utf8').catch(() => '');
    return `--- last ${lines} lines of ${path} ---\n${text.trimEnd().split('\n').slice(-lines).join('\n')}`;
  };
  const waitFor = async (what: string, blame: string, check: () => Promise<boolean>) => {
    for (;;) {
      const dead = launched.find((p) => p.exit !== undefined);
      if (dead) {
        throw new Error(
          `realnode: ${dead.component} exited (${dead.exit}) while waiting for ${what}\n${await logTail(dead.component)}`,
        );
      }
      if (await check().catch(() => false)) return;
      if (Date.now() > deadline) {
        throw new Error(`realnode: timed out waiting for ${what}\n${await logTail(blame)}`);
      }
      await sleep(200);
    }
  };
  const inNode = (command: string, args: readonly string[]) =>
    run('nsenter', [`--net=${netnsPath}`, command, ...args], { maxBuffer: 16 * 2 ** 20 });
  const ctr = (...args: string[]) =>
    run('ctr', ['--address', paths.containerdSocket, '--namespace', 'k8s.io', ...args], {
      maxBuffer: 16 * 2 ** 20,
    });
  const importImage = async (archive: string, baseName?: string) => {
    const named = baseName ? ['--base-name', baseName] : [];
    const { stdout } = await ctr('images', 'import', ...named, archive);
    // "unpacking <name> (sha256:…)...done" per image.
    return [...stdout.matchAll(/^unpacking (\S+) \(/gm)].map((m) => m[1] ?? '');
  };

  let forwards = 0;
  let serviceRouted = false;
  const forward = async (host: string, port: number): Promise<Forward> => {
    const id = `forward-${++forwards}`;
    if (host.startsWith(serviceRangePrefix) && !serviceRouted) {
      // The namespace routes only its Pod /24, and the kernel routes a connection before
      // kube-proxy's nat rules rewrite a ClusterIP: without a route the dial fails. Through
      // cni0, so the source is the bridge's address, which the Pods answer.
      await inNode('ip', ['route', 'replace', serviceRange, 'dev', 'cni0']);
      serviceRouted = true;
    }
    const socket = join(dir, `${id}.sock`);
    const hostPort = await freeLoopbackPort();
    const procs = [
      launch(`${id}-node`, '/usr/bin/socat', [
        `UNIX-LISTEN:${socket},fork,mode=600`,
        `TCP:${host}:${port}`,
      ]),
      launch(
        `${id}-host`,
        '/usr/bin/socat',
        [`TCP-LISTEN:${hostPort},bind=127.0.0.1,fork,reuseaddr`, `UNIX-CONNECT:${socket}`],
        false,
      ),
    ];
    const close = async () => {
      await stopAll(procs);
      await rm(socket, { force: true });
    };
    try {
      // Both ends listen: the socket exists and the host port is bound (a probe connection
      // would be relayed to the target, so look at the process's own listening sockets).
      const until = Date.now() + 10_000;
      for (;;) {
        const dead = procs.find((p) => p.exit !== undefined);
        if (dead) throw new Error(`realnode: ${dead.component} exited (${dead.exit})`);
        const bound = await stat(socket).then(
          () => listensOn(hostPort),
          () => false,
        );
        if (bound) break;
        if (Date.now() > until) throw new Error(`realnode: ${id} to ${host}:${port} not listening`);
        await sleep(50);
      }
    } catch (error) {
      await close().catch(() => undefined);
      throw error;
    }
    return { port: hostPort, close };
  };

  try {
    for (const sub of ['logs', 'pki', 'containerd', 'cni/net.d', 'cni/ipam', 'pod-logs']) {
      await mkdir(join(dir, sub), { recursive: true });
    }
    // The network namespace: lo with 127.0.0.1 and the node address, nothing routed outside.
    await run('ip', ['netns', 'add', netnsName]);
    state.netnsCreated = true;
    await inNode('ip', ['link', 'set', 'lo', 'up']);
    await inNode('ip', ['addr', 'add', `${nodeAddress}/32`, 'dev', 'lo']);
    // Per-namespace settings: bridged Pod traffic passes iptables (Service DNAT between two
    // Pods on cni0), and the node forwards between cni0 and its own addresses.
    for (const setting of ['net.bridge.bridge-nf-call-iptables=1', 'net.ipv4.ip_forward=1']) {
      await inNode('sysctl', ['-qw', setting]);
    }

    kubeletPort = await freeLoopbackPort();
    const certs = await issueNodeCerts(pkiDir, join(dir, 'pki'), name);
    const caData = (await readFile(join(pkiDir, 'ca.crt'))).toString('base64');
    const kubeletKubeconfig = join(dir, 'kubelet.kubeconfig');
    const proxyKubeconfig = join(dir, 'kube-proxy.kubeconfig');
    await writeFile(
      kubeletKubeconfig,
      kubeconfigText(caData, `system:node:${name}`, certs.kubelet.cert, certs.kubelet.key),
      { mode: 0o600 },
    );
    await writeFile(
      proxyKubeconfig,
      kubeconfigText(caData, 'system:kube-proxy', certs.proxy.cert, certs.proxy.key),
      { mode: 0o600 },
    );
    await writeFile(join(dir, 'containerd', 'config.toml'), containerdConfig(paths));
    await writeFile(
      join(paths.cniConfDir, '10-svc-realnode.conflist'),
      cniConfig(dir, subnetIndex),
    );
    // Pods with dnsPolicy Default get this; ClusterFirst Pods get clusterDNS instead.
    await writeFile(join(dir, 'resolv.conf'), `nameserver ${nodeAddress}\n`);
    await writeFile(
      join(dir, 'kubelet.json'),
      kubeletConfig({
        dir,
        name,
        port: kubeletPort,
        caFile: join(pkiDir, 'ca.crt'),
        cgroupRoot: nodeCgroup,
      }),
    );
    await writeFile(
      join(dir, 'kube-proxy.json'),
      kubeProxyConfig(proxyKubeconfig, name, subnetIndex),
    );
    await createCgroup(nodeCgroup);

    // API server: host unix socket → 127.0.0.1:<port>; in the node, any address :6443 → socket
    // (the kubelet uses 127.0.0.1, Pods the node address behind the `kubernetes` Service).
    const apiSocket = join(dir, 'apiserver.sock');
    launch(
      'forward-apiserver-host',
      '/usr/bin/socat',
      [`UNIX-LISTEN:${apiSocket},fork,mode=600`, `TCP:127.0.0.1:${apiserverPort}`],
      false,
    );
    launch('forward-apiserver-node', '/usr/bin/socat', [
      `TCP-LISTEN:${apiserverPortInNode},fork,reuseaddr`,
      `UNIX-CONNECT:${apiSocket}`,
    ]);
    // Kubelet: the API server dials the Node's InternalIP 127.0.0.1 at the kubelet's port on
    // the host; that listener forwards into the namespace (logs, exec, port-forward).
    const kubeletSocket = join(dir, 'kubelet.sock');
    launch('forward-kubelet-node', '/usr/bin/socat', [
      `UNIX-LISTEN:${kubeletSocket},fork,mode=600`,
      `TCP:127.0.0.1:${kubeletPort}`,
    ]);
    launch(
      'forward-kubelet-host',
      '/usr/bin/socat',
      [`TCP-LISTEN:${kubeletPort},bind=127.0.0.1,fork,reuseaddr`, `UNIX-CONNECT:${kubeletSocket}`],
      false,
    );

    launch('containerd', '/usr/bin/containerd', [
      '--config',
      join(dir, 'containerd', 'config.toml'),
    ]);
    await waitFor('containerd', 'containerd', async () => {
      await ctr('version');
      return true;
    });
    for (const image of [await pauseImageArchive(), ...(opts.images ?? [])]) {
      await importImage(image);
    }

    await ensureKubernetesEndpoints(adminConfig);
    launch('kubelet', join(binDir, 'kubelet'), [
      `--config=${join(dir, 'kubelet.json')}`,
      `--kubeconfig=${kubeletKubeconfig}`,
      `--root-dir=${join(dir, 'kubelet')}`,
      `--cert-dir=${join(dir, 'kubelet-pki')}`,
      `--hostname-override=${name}`,
      `--node-ip=${nodeAddress}`,
      // "external": the kubelet keeps the addresses set below instead of its own (a loopback
      // InternalIP, which it would refuse itself), so the API server reaches it via the host.
      '--cloud-provider=external',
      `--node-labels=${realNodeLabel}=true`,
      '--v=1',
    ]);
    await waitFor('the kubelet to register the Node', 'kubelet', async () => {
      await core.readNode({ name });
      return true;
    });
    await initializeNode(core, name);
    launch('kube-proxy', join(binDir, 'kube-proxy'), [
      `--config=${join(dir, 'kube-proxy.json')}`,
      '--v=1',
    ]);
    await waitFor('a Ready Node', 'kubelet', () => nodeReady(core, name));
    await waitFor('kube-proxy to sync its rules', 'kube-proxy', async () => {
      const { stdout } = await inNode('iptables', ['-t', 'nat', '-S', 'KUBE-SERVICES']);
      return stdout.includes('default/kubernetes');
    });
  } catch (error) {
    await teardown(state).catch((cleanup) => {
      console.error(`realnode: cleanup after a failed start failed too: ${cleanup}`);
    });
    throw error;
  }

  return {
    name,
    netnsName,
    netnsPath,
    containerdSocket: paths.containerdSocket,
    dir,
    pids: launched.map((p) => p.pid),
    podSubnet: podNetwork(subnetIndex).subnet,
    kubeletPort,
    readyAfterMs: Math.round(performance.now() - started),
    importImage,
    inNode,
    forward,
    logTail,
    stop: () => teardown(state),
  };
}

interface TeardownState {
  readonly name: string;
  readonly dir: string;
  readonly netnsName: string;
  readonly netnsPath: string;
  readonly nodeCgroup: string;
  readonly launched: Launched[];
  readonly containerdSocket: string;
  readonly core: CoreV1Api;
  readonly sysctls: Map<string, string>;
  netnsCreated: boolean;
}

/**
 * Undoes everything in reverse: Pods first (while the kubelet still tears their sandboxes and
 * network namespaces down), then the node's processes, leftover shims, mounts, cgroups, the
 * network namespace, the Node object, the kernel settings and the directory. Collects every
 * failure and throws them together, after trying every step.
 */
async function teardown(state: TeardownState): Promise<void> {
  const failures: string[] = [];
  const attempt = async (step: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (error) {
      failures.push(`${step}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  const ctr = (...args: string[]) =>
    run('ctr', ['--address', state.containerdSocket, '--namespace', 'k8s.io', ...args]);
  const kubelet = state.launched.find((p) => p.component === 'kubelet');
  const containerd = state.launched.find((p) => p.component === 'containerd');
  const sandboxNetns = containerd?.exit === undefined ? await sandboxNetnsPaths(ctr) : [];

  if (kubelet && kubelet.exit === undefined) {
    await attempt('deleting the Pods on the node', async () => {
      const pods = await state.core.listPodForAllNamespaces({
        fieldSelector: `spec.nodeName=${state.name}`,
      });
      await Promise.all(
        pods.items.map((pod) =>
          state.core
            .deleteNamespacedPod({
              name: pod.metadata?.name ?? '',
              namespace: pod.metadata?.namespace ?? '',
              gracePeriodSeconds: 0,
            })
            .catch(ignoreNotFound),
        ),
      );
      // The kubelet stops each sandbox (its network namespace goes with it) after the delete.
      const until = Date.now() + 30_000;
      while (Date.now() < until && (await runningTasks(ctr)).length > 0) await sleep(250);
    });
  }
  const byComponent = (component: string) =>
    state.launched.filter((p) => p.component === component);
  for (const component of ['kube-proxy', 'kubelet']) {
    await attempt(`stopping ${component}`, () => stopAll(byComponent(component)));
  }
  if (containerd && containerd.exit === undefined) {
    await attempt('stopping the remaining containers', async () => {
      for (const id of await runningTasks(ctr)) {
        await ctr('tasks', 'kill', '--signal', 'SIGKILL', id).catch(() => undefined);
      }
      const until = Date.now() + 10_000;
      while (Date.now() < until && (await runningTasks(ctr)).length > 0) await sleep(200);
      const { stdout } = await ctr('tasks', 'ls', '--quiet');
      for (const id of stdout.split('\n').filter(Boolean)) {
        await ctr('tasks', 'delete', '--force', id).catch(() => undefined);
      }
    });
  }
  await attempt('stopping containerd', () => stopAll(byComponent('containerd')));
  await attempt('stopping containerd shims', () => killShims(state.containerdSocket));
  await attempt('stopping the forwarders', () =>
    stopAll(state.launched.filter((p) => p.component.startsWith('forward-'))),
  );
  await attempt("removing the Pods' network namespaces", async () => {
    for (const path of sandboxNetns) {
      await run('umount', [path]).catch(() => undefined);
      await rm(path, { force: true });
    }
  });
  // What others started in the node's namespace and left running (a policy agent whose owner
  // failed before it could stop it): it would outlive the node in a namespace nobody can name
  // any more and, as a child, keep its test process from ever exiting.
  await attempt('stopping what still runs in the namespace', () =>
    killInNamespace(state.netnsPath),
  );
  await attempt('unmounting under the node directory', () => unmountUnder(state.dir));
  await attempt('removing the node cgroups', () => removeCgroup(state.nodeCgroup));
  if (state.netnsCreated) {
    await attempt('deleting the network namespace', () =>
      run('ip', ['netns', 'delete', state.netnsName]),
    );
  }
  await attempt('deleting the Node', () =>
    state.core.deleteNode({ name: state.name }).catch(ignoreNotFound),
  );
  await attempt('restoring kernel settings', () => releaseSysctls(state.netnsName, state.sysctls));
  await attempt('removing the node directory', async () => {
    if ((await mountsUnder(state.dir)).length === 0) {
      await rm(state.dir, { recursive: true, force: true });
    } else {
      throw new Error(`mounts remain under ${state.dir}`);
    }
  });
  if (failures.length > 0) {
    throw new Error(`realnode: teardown of ${state.name} incomplete:\n${failures.join('\n')}`);
  }
}

/** SIGTERM, then SIGKILL, to each process group; waits until every leader has exited. */
async function stopAll(procs: readonly Launched[]): Promise<void> {
  for (const [signal, graceMs] of [
    ['SIGTERM', 10_000],
    ['SIGKILL', 5_000],
  ] as const) {
    const alive = procs.filter((p) => p.exit === undefined && isRunning(p));
    if (alive.length === 0) break;
    for (const proc of alive) {
      try {
        process.kill(-proc.pid, signal);
      } catch {
        // Exited between the check and the signal.
      }
    }
    const until = Date.now() + graceMs;
    while (Date.now() < until && alive.some((p) => p.exit === undefined && isRunning(p))) {
      await sleep(50);
    }
  }
  // socat's per-connection children share the group; a final SIGKILL to the group ends them.
  for (const proc of procs) {
    try {
      process.kill(-proc.pid, 'SIGKILL');
    } catch {
      // The whole group is gone.
    }
  }
  const stuck = procs.filter((p) => p.exit === undefined && isRunning(p));
  if (stuck.length > 0) {
    throw new Error(`still running: ${stuck.map((p) => `${p.component} (${p.pid})`).join(', ')}`);
  }
}

/** Shims outlive containerd by design; ours name our socket on their command line. */
async function killShims(containerdSocket: string): Promise<void> {
  const pids = await processesWithArg(containerdSocket);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  const until = Date.now() + 5_000;
  while (Date.now() < until && (await processesWithArg(containerdSocket)).length > 0) {
    await sleep(50);
  }
}

/** PIDs whose command line has `arg` as one of its words (not zombies). */
export async function processesWithArg(arg: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.split('\0').some((word) => word === arg || word.includes(arg))) {
        const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
        if (!stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) found.push(Number(entry));
      }
    } catch {
      // Exited while reading.
    }
  }
  return found;
}

async function runningTasks(
  ctr: (...args: string[]) => Promise<{ stdout: string }>,
): Promise<string[]> {
  const { stdout } = await ctr('tasks', 'ls');
  return stdout
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((words) => words.length >= 3 && words[2] === 'RUNNING')
    .map((words) => words[0] ?? '');
}

/** The network namespaces the CRI plugin bind-mounted under /run/netns for our sandboxes. */
async function sandboxNetnsPaths(
  ctr: (...args: string[]) => Promise<{ stdout: string }>,
): Promise<string[]> {
  const paths: string[] = [];
  try {
    const { stdout } = await ctr('containers', 'ls', '--quiet');
    for (const id of stdout.split('\n').filter(Boolean)) {
      const info = JSON.parse((await ctr('containers', 'info', id)).stdout) as {
        Spec?: { linux?: { namespaces?: { type: string; path?: string }[] } };
      };
      for (const ns of info.Spec?.linux?.namespaces ?? []) {
        if (ns.type === 'network' && ns.path?.startsWith('/var/run/netns/cni-')) {
          paths.push(ns.path.replace(/^\/var\/run/, '/run'));
        }
      }
    }
  } catch {
    // containerd is not answering; nothing more to learn from it.
  }
  return [...new Set(paths)];
}

/** Mount points at or under `dir`, deepest first, from this process's mount table. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const table = await readFile('/proc/self/mountinfo', 'utf8');
  const points = table
    .split('\n')
    .filter(Boolean)
    .map((line) => (line.split(' ')[4] ?? '').replace(/\\040/g, ' '))
    .filter((point) => point === dir || point.startsWith(`${dir}/`));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

async function unmountUnder(dir: string): Promise<void> {
  // A mount may be stacked several times (the kubelet bind-mounts its root onto itself).
  for (let round = 0; round < 10; round++) {
    const points = await mountsUnder(dir);
    if (points.length === 0) return;
    for (const point of points) {
      await run('umount', [point]).catch(() => run('umount', ['-l', point]).catch(() => undefined));
    }
  }
  const left = await mountsUnder(dir);
  if (left.length > 0) throw new Error(`still mounted: ${left.join(', ')}`);
}

async function cgroupHierarchies(): Promise<string[]> {
  const entries = await readdir(cgroupRoot, { withFileTypes: true });
  return entries.filter((e) => e.isDirectory()).map((e) => join(cgroupRoot, e.name));
}

/** The node's own cgroup in every v1 hierarchy; cpuset needs its cpus and mems copied down. */
async function createCgroup(cgroup: string): Promise<void> {
  for (const hierarchy of await cgroupHierarchies()) {
    const path = join(hierarchy, cgroup);
    await mkdir(path, { recursive: true });
    if (hierarchy.endsWith('/cpuset')) {
      for (const file of ['cpuset.cpus', 'cpuset.mems']) {
        await writeFile(join(path, file), await readFile(join(hierarchy, file), 'utf8'));
      }
    }
  }
}

/** Removes the node's cgroup trees, deepest first (rmdir is the only way to delete one). */
async function removeCgroup(cgroup: string): Promise<void> {
  const removeTree = async (path: string): Promise<void> => {
    const entries = await readdir(path, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (entry.isDirectory()) await removeTree(join(path, entry.name));
    }
    for (let i = 0; ; i++) {
      try {
        await rmdir(path);
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        // EBUSY while the last processes of the cgroup are exiting.
        if (i >= 50) throw error;
        await sleep(100);
      }
    }
  };
  for (const hierarchy of await cgroupHierarchies()) {
    await removeTree(join(hierarchy, cgroup));
  }
}

/** Who owns a running node, so a later start can clean up after a killed test process. */
interface Registration {
  readonly pid: number;
  readonly dir: string;
  readonly suffix: string;
  readonly subnetIndex: number;
}

/** A Pod /24 (10.244.<1-250>.0) that no registered node uses, picked at random. */
async function pickSubnetIndex(): Promise<number> {
  const dir = join(sysctlState, 'nodes');
  const used = new Set<number>();
  for (const entry of await readdir(dir).catch(() => [] as string[])) {
    const text = await readFile(join(dir, entry), 'utf8').catch(() => '{}');
    used.add((JSON.parse(text) as Partial<Registration>).subnetIndex ?? 0);
  }
  const free = Array.from({ length: 250 }, (_, i) => i + 1).filter((i) => !used.has(i));
  return free[randomBytes(2).readUInt16BE(0) % free.length] ?? 1;
}

/**
 * Cleans up real nodes whose owning process died without stop() (a killed test run): their
 * containers (found by the node's cgroup), their daemons and shims (found by the node directory
 * on their command line), mounts, cgroups, network namespace and directory. The Node objects
 * went with their cluster. Pod network namespaces under /run/netns cannot be attributed once
 * containerd is gone and stay (empty bind mounts).
 */
export async function sweepStaleRealNodes(): Promise<string[]> {
  const swept: string[] = [];
  const dir = join(sysctlState, 'nodes');
  for (const netnsName of await readdir(dir).catch(() => [] as string[])) {
    let registration: Registration;
    try {
      registration = JSON.parse(await readFile(join(dir, netnsName), 'utf8')) as Registration;
    } catch {
      continue;
    }
    const valid =
      typeof registration?.pid === 'number' &&
      typeof registration.dir === 'string' &&
      registration.dir.startsWith(join(tmpdir(), 'svc-realnode-')) &&
      typeof registration.suffix === 'string';
    if (!valid || (await stat(`/proc/${registration.pid}`).catch(() => undefined))) continue;
    const cgroup = `/svc-realnode-${registration.suffix}`;
    for (let round = 0; round < 5; round++) {
      const pids = [
        ...(await cgroupProcs(cgroup)),
        ...(await processesWithArg(registration.dir)),
      ].filter((pid) => pid !== process.pid);
      if (pids.length === 0) break;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
      await sleep(200);
    }
    await unmountUnder(registration.dir).catch(() => undefined);
    await removeCgroup(cgroup).catch(() => undefined);
    await run('ip', ['netns', 'delete', netnsName]).catch(() => undefined);
    if ((await mountsUnder(registration.dir)).length === 0) {
      await rm(registration.dir, { recursive: true, force: true });
    }
    const originals = await readFile(join(sysctlState, 'sysctls.json'), 'utf8')
      .then((text) => new Map(Object.entries(JSON.parse(text) as Record<string, string>)))
      .catch(() => new Map<string, string>());
    await releaseSysctls(netnsName, originals);
    swept.push(netnsName);
  }
  return swept;
}

/** Every process in the node's cgroup tree (the pids hierarchy has them all). */
async function cgroupProcs(cgroup: string): Promise<number[]> {
  const pids: number[] = [];
  const walk = async (path: string): Promise<void> => {
    const text = await readFile(join(path, 'cgroup.procs'), 'utf8').catch(() => '');
    pids.push(...text.split('\n').filter(Boolean).map(Number));
    for (const entry of await readdir(path, { withFileTypes: true }).catch(() => [])) {
      if (entry.isDirectory()) await walk(join(path, entry.name));
    }
  };
  await walk(join(cgroupRoot, 'pids', cgroup));
  return pids;
}

/**
 * The machine's own values of the kubelet's settings. Nodes may run side by side in several
 * processes, and a node started while another's kubelet runs would read that kubelet's values:
 * so the first node records the originals in /run (gone at reboot, as the settings are), every
 * node registers itself there, and the last one to stop restores them. The record is written
 * with an exclusive create, and removed only after the values are restored, so a node starting
 * meanwhile reads either the record or the restored values.
 */
async function claimSysctls(
  netnsName: string,
  registration: Registration,
): Promise<Map<string, string>> {
  await mkdir(join(sysctlState, 'nodes'), { recursive: true });
  await writeFile(join(sysctlState, 'nodes', netnsName), JSON.stringify(registration));
  const current = new Map<string, string>();
  for (const key of kubeletSysctls) {
    current.set(key, (await readFile(`/proc/sys/${key}`, 'utf8')).trim());
  }
  const record = join(sysctlState, 'sysctls.json');
  try {
    await writeFile(record, JSON.stringify(Object.fromEntries(current)), { flag: 'wx' });
    return current;
  } catch {
    return new Map(Object.entries(JSON.parse(await readFile(record, 'utf8'))));
  }
}

async function releaseSysctls(netnsName: string, originals: Map<string, string>): Promise<void> {
  await rm(join(sysctlState, 'nodes', netnsName), { force: true });
  // A registration whose network namespace is gone is a crashed run's leftover.
  const others = [];
  for (const other of await readdir(join(sysctlState, 'nodes')).catch(() => [])) {
    if (await stat(`/run/netns/${other}`).catch(() => undefined)) others.push(other);
    else await rm(join(sysctlState, 'nodes', other), { force: true });
  }
  if (others.length > 0) return;
  for (const [key, value] of originals) {
    const path = `/proc/sys/${key}`;
    if ((await readFile(path, 'utf8')).trim() !== value) await writeFile(path, value);
  }
  await rm(join(sysctlState, 'sysctls.json'), { force: true });
  // rmdir, not rm -r: a node registering meanwhile keeps its directory.
  await rmdir(join(sysctlState, 'nodes')).catch(() => undefined);
  await rmdir(sysctlState).catch(() => undefined);
}

/** Client certificates for the kubelet (system:node:<name>) and kube-proxy, from the cluster CA. */
async function issueNodeCerts(clusterPki: string, dir: string, name: string) {
  const issue = async (file: string, subject: string) => {
    await run('openssl', [
      ...'req -x509 -days 7 -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1'.split(' '),
      '-CA',
      join(clusterPki, 'ca.crt'),
      '-CAkey',
      join(clusterPki, 'ca.key'),
      '-keyout',
      join(dir, `${file}.key`),
      '-out',
      join(dir, `${file}.crt`),
      '-subj',
      subject,
      '-addext',
      'basicConstraints=critical,CA:FALSE',
      '-addext',
      'keyUsage=critical,digitalSignature',
      '-addext',
      'extendedKeyUsage=clientAuth',
    ]);
    const [cert, key] = await Promise.all([
      readFile(join(dir, `${file}.crt`)),
      readFile(join(dir, `${file}.key`)),
    ]);
    return { cert, key };
  };
  return {
    kubelet: await issue('kubelet', `/O=system:nodes/CN=system:node:${name}`),
    proxy: await issue('kube-proxy', '/CN=system:kube-proxy'),
  };
}

/**
 * The API server runs with --endpoint-reconciler-type=none (harness.ts), so the `kubernetes`
 * Service has no endpoints; Pods on a real node reach it at the node address, where the
 * forwarder listens. Every real node uses the same address, so one slice serves them all.
 */
async function ensureKubernetesEndpoints(kc: KubeConfig): Promise<void> {
  const discovery = kc.makeApiClient(DiscoveryV1Api);
  try {
    await discovery.createNamespacedEndpointSlice({
      namespace: 'default',
      body: {
        metadata: {
          name: 'kubernetes-real-node',
          labels: {
            'kubernetes.io/service-name': 'kubernetes',
            'endpointslice.kubernetes.io/managed-by': 'real-node.svc.test',
          },
        },
        addressType: 'IPv4',
        endpoints: [{ addresses: [nodeAddress], conditions: { ready: true } }],
        ports: [{ name: 'https', port: apiserverPortInNode, protocol: 'TCP' }],
      },
    });
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 409)) throw error;
  }
}

/**
 * Plays the external cloud provider's one part: the Node's only address is the host's loopback
 * (where the kubelet forwarder listens), and the uninitialized taint goes.
 */
async function initializeNode(core: CoreV1Api, name: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      const node = await core.readNode({ name });
      const status = node.status ?? {};
      status.addresses = [{ type: 'InternalIP', address: '127.0.0.1' }];
      await core.replaceNodeStatus({ name, body: { ...node, status } });
      const fresh = await core.readNode({ name });
      const taints = (fresh.spec?.taints ?? []).filter(
        (t) => t.key !== 'node.cloudprovider.kubernetes.io/uninitialized',
      );
      await core.replaceNode({ name, body: { ...fresh, spec: { ...fresh.spec, taints } } });
      return;
    } catch (error) {
      // The kubelet updates the Node every few seconds: a conflict means "read again".
      if (!(error instanceof ApiException && error.code === 409) || attempt > 20) throw error;
    }
  }
}

async function nodeReady(core: CoreV1Api, name: string): Promise<boolean> {
  const node: V1Node = await core.readNode({ name });
  const ready = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  const addressed = node.status?.addresses?.every((a) => a.address === '127.0.0.1') ?? false;
  const untainted = !(node.spec?.taints ?? []).some(
    (t) => t.key === 'node.cloudprovider.kubernetes.io/uninitialized',
  );
  return Boolean(ready && addressed && untainted);
}

function ignoreNotFound(error: unknown): void {
  if (!(error instanceof ApiException && error.code === 404)) throw error;
}

/** The sandbox image (testcluster/images), built once per machine and cached. */
async function pauseImageArchive(): Promise<string> {
  const script = join(dirname(here), 'images', 'build.sh');
  const { stdout } = await run('bash', [script, 'pause'], { maxBuffer: 16 * 2 ** 20 });
  const archive = /^ARCHIVE=(.+)$/m.exec(stdout)?.[1];
  if (!archive) throw new Error(`realnode: ${script} pause printed no ARCHIVE=`);
  return archive;
}

/** SIGKILLs every process (but this one) whose network namespace is the one at `netnsPath`. */
async function killInNamespace(netnsPath: string): Promise<void> {
  const target = await stat(netnsPath).catch(() => undefined);
  if (!target) return;
  const inode = `net:[${target.ino}]`;
  for (const entry of await readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const link = await readlink(`/proc/${pid}/ns/net`).catch(() => '');
    if (link !== inode) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}

/** True when a socket in the host's namespace listens on 127.0.0.1:<port> (TCP, IPv4). */
async function listensOn(port: number): Promise<boolean> {
  const table = await readFile('/proc/net/tcp', 'utf8');
  // local_address 0100007F:<port hex>, state 0A = LISTEN.
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return table.split('\n').some((line) => {
    const words = line.trim().split(/\s+/);
    return words[1] === local && words[3] === '0A';
  });
}

async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('realnode: no port');
  return address.port;
}
