// NetworkPolicy enforcement for a real node: kube-router's policy controller alone (no routing,
// no service proxy; kube-proxy does Services), inside the node's network namespace. It writes
// iptables chains and ipsets there only, so they vanish with the namespace. Why kube-router and
// not Calico: docs/test-cluster-network.md.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { ensureBinaries } from '../harness.ts';
import { apiserverPortInNode } from './configs.ts';
import { createOrIgnore } from './dns.ts';

const run = promisify(execFile);

const namespace = 'kube-system';
const serviceAccount = 'kube-router';
const clusterRole = 'svc-test:kube-router';
/** The cluster's --service-cluster-ip-range (harness.ts). */
const serviceClusterIpRange = '10.96.0.0/16';
const serviceAccountAudience = 'https://kubernetes.default.svc.cluster.local';

// Enforcers of this process die with it, even when a caller forgot stop().
const live = new Set<number>();
process.on('exit', () => {
  for (const pid of live) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
});

export interface PolicyEnforcer {
  readonly pid: number;
  readonly logPath: string;
  /** Milliseconds from the call to the first full sync of its chains. */
  readonly readyAfterMs: number;
  stop(): Promise<void>;
}

export interface StartPolicyEnforcerOptions {
  /** The cluster's admin kubeconfig (host side): RBAC and the enforcer's token come from it. */
  readonly kubeconfigPath: string;
  readonly netnsPath: string;
  readonly nodeName: string;
  /** Logs and the enforcer's kubeconfig go here (the node's directory). */
  readonly dir: string;
  /** The API server as seen from inside the namespace (the node's forwarder). */
  readonly serverInNode?: string;
  readonly timeoutMs?: number;
}

/**
 * Starts kube-router (`--run-firewall` only) in the node's namespace as ServiceAccount
 * kube-system/kube-router, and resolves once its first full sync has written its chains.
 */
export async function startPolicyEnforcer(
  opts: StartPolicyEnforcerOptions,
): Promise<PolicyEnforcer> {
  const started = performance.now();
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  const { binDir } = await ensureBinaries();
  const binary = join(binDir, 'kube-router');
  const kc = new KubeConfig();
  kc.loadFromFile(opts.kubeconfigPath);
  await ensureRbac(kc);
  const kubeconfig = join(opts.dir, 'kube-router.kubeconfig');
  await writeFile(
    kubeconfig,
    await tokenKubeconfig(kc, opts.serverInNode ?? `https://127.0.0.1:${apiserverPortInNode}`),
    { mode: 0o600 },
  );

  await mkdir(join(opts.dir, 'logs'), { recursive: true });
  const logPath = join(opts.dir, 'logs', 'kube-router.log');
  const log = openSync(logPath, 'a');
  // nsenter execs kube-router (no fork), so the PID is kube-router's own.
  const child: ChildProcess = spawn(
    'nsenter',
    [
      `--net=${opts.netnsPath}`,
      binary,
      `--kubeconfig=${kubeconfig}`,
      `--hostname-override=${opts.nodeName}`,
      '--run-firewall=true',
      '--run-router=false',
      '--run-service-proxy=false',
      `--service-cluster-ip-range=${serviceClusterIpRange}`,
      // No listeners: the host cannot reach the namespace's ports anyway.
      '--health-port=0',
      '--metrics-port=0',
      '--v=1',
    ],
    { cwd: opts.dir, stdio: ['ignore', log, log] },
  );
  closeSync(log);
  if (child.pid === undefined) {
    throw new Error(`netpol: could not start ${binary}`);
  }
  const pid = child.pid;
  let exit: string | undefined;
  child.on('exit', (code, signal) => {
    exit = signal ? `signal ${signal}` : `code ${code}`;
  });
  // The child is ours until its exit event, so its PID cannot have been reused before then.
  const stop = async () => {
    for (const [signal, graceMs] of [
      ['SIGTERM', 10_000],
      ['SIGKILL', 5_000],
    ] as const) {
      if (exit !== undefined) break;
      try {
        process.kill(pid, signal);
      } catch {
        // Exited between the check and the signal.
      }
      const until = Date.now() + graceMs;
      while (exit === undefined && Date.now() < until) await sleep(50);
    }
    live.delete(pid);
    if (exit === undefined) {
      throw new Error(`netpol: kube-router (${pid}) still runs after SIGKILL`);
    }
  };
  live.add(pid);

  try {
    // The explicit-accept rule is written at the end of the first full sync.
    for (;;) {
      if (exit !== undefined) {
        throw new Error(
          `netpol: kube-router exited (${exit}) during start\n${await logTail(logPath)}`,
        );
      }
      const synced = await run('nsenter', [
        `--net=${opts.netnsPath}`,
        'iptables',
        '-S',
        'KUBE-ROUTER-FORWARD',
      ]).then(
        ({ stdout }) => stdout.includes('explicitly ACCEPT traffic'),
        () => false,
      );
      if (synced) break;
      if (Date.now() > deadline) {
        throw new Error(`netpol: kube-router did not sync in time\n${await logTail(logPath)}`);
      }
      await sleep(200);
    }
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
  return { pid, logPath, readyAfterMs: Math.round(performance.now() - started), stop };
}

/** Upstream kube-router's ClusterRole, cut to what the policy controller reads. */
async function ensureRbac(kc: KubeConfig): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await createOrIgnore(() =>
    core.createNamespacedServiceAccount({
      namespace,
      body: { metadata: { name: serviceAccount } },
    }),
  );
  await createOrIgnore(() =>
    rbac.createClusterRole({
      body: {
        metadata: { name: clusterRole },
        rules: [
          {
            apiGroups: [''],
            resources: ['namespaces', 'pods', 'services', 'nodes', 'endpoints'],
            verbs: ['get', 'list', 'watch'],
          },
          {
            apiGroups: ['networking.k8s.io'],
            resources: ['networkpolicies'],
            verbs: ['get', 'list', 'watch'],
          },
          {
            apiGroups: ['discovery.k8s.io'],
            resources: ['endpointslices'],
            verbs: ['get', 'list', 'watch'],
          },
        ],
      },
    }),
  );
  await createOrIgnore(() =>
    rbac.createClusterRoleBinding({
      body: {
        metadata: { name: clusterRole },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
        subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
      },
    }),
  );
}

/** A kubeconfig for the ServiceAccount with a day-long token, pointing at `server`. */
async function tokenKubeconfig(kc: KubeConfig, server: string): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const request = await core.createNamespacedServiceAccountToken({
    namespace,
    name: serviceAccount,
    body: { spec: { audiences: [serviceAccountAudience], expirationSeconds: 86_400 } },
  });
  const token = request.status?.token;
  const caData = kc.getCurrentCluster()?.caData;
  if (!token || !caData) {
    throw new Error('netpol: no token or CA for the kube-router ServiceAccount');
  }
  const user = `system:serviceaccount:${namespace}:${serviceAccount}`;
  return `${JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'svc', cluster: { server, 'certificate-authority-data': caData } }],
      users: [{ name: user, user: { token } }],
      contexts: [{ name: 'svc', context: { cluster: 'svc', user } }],
      'current-context': 'svc',
    },
    null,
    2,
  )}\n`;
}

async function logTail(path: string, lines = 30): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return `--- last ${lines} lines of ${path} ---\n${text.trimEnd().split('\n').slice(-lines).join('\n')}`;
}
