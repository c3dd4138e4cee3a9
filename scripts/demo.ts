import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { SvcClient } from '../contracts/index.ts';
import { namespaceOf } from '../src/orchestrator/render.ts';
import { ensureBinaries, isRunning, startCluster } from '../testcluster/harness.ts';
import { createInstallIdentity, type InstallIdentity } from '../testcluster/install-identity.ts';
import { runAdapterPod } from '../testcluster/kubelet/adapter-pod.ts';
import {
  type ClusterTenantIndexer,
  startClusterTenantIndexer,
} from '../testcluster/opensearch/tenant-indexer.ts';
import { type LlmStandIn, startLlmStandIn } from '../testcluster/stand-ins/llm.ts';
import { loopbackCertificate } from '../testcluster/stand-ins/loopback-tls.ts';
import { startVolumeProvisioner, testStorageClass } from '../testcluster/volumes.ts';
import { type AlertSink, demoTriageAnswer, startTrickle, TRICKLE } from './demo/alerts.ts';
import { type DemoNode, demoNodeEnv, startDemoNode } from './demo/real-node.ts';
import { startSvcServe } from './demo/svc-process.ts';
import {
  type Credentials,
  createCustomer,
  createDemoTenant,
  DEMO_TENANTS,
  type DemoLlm,
  type DemoTenantSpec,
  demoPassword,
  signIn,
  waitForTenantState,
} from './demo/tenants.ts';

/**
 * `npm run demo`: a local control plane (testcluster/), svc against it as the system chart's
 * ServiceAccount, two tenants created through the API and made active by their real adapters,
 * and a trickle of Wazuh alerts into each tenant's real indexer (docs/demo.md). Everything
 * it starts is recorded in `<dir>/state.json` and stopped by PID on Ctrl-C or SIGTERM.
 */

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const USAGE =
  'usage: npm run demo -- [--port 8080] [--dir .svc/demo] [--headless-for <seconds>] [--keep-data] [--real-node] [--tenants 2]';
const STEPS = 8;
const INSTALL_NAMESPACE = 'svc-system';
const SERVICE_ACCOUNT = 'svc';

interface Options {
  port: number;
  dir: string;
  headlessForMs: number | undefined;
  keepData: boolean;
  /** Adapters and indexers as real Pods on a real kubelet node (scripts/demo/real-node.ts). */
  realNode: boolean;
  /** The first n demo tenants (acme, then globex): one halves the start-up work on the node. */
  tenants: readonly DemoTenantSpec[];
}

function readOptions(): Options {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '8080' },
      dir: { type: 'string', default: path.join(ROOT, '.svc', 'demo') },
      'headless-for': { type: 'string' },
      'keep-data': { type: 'boolean', default: false },
      'real-node': { type: 'boolean', default: false },
      tenants: { type: 'string', default: String(DEMO_TENANTS.length) },
    },
    strict: true,
  });
  const port = Number(values.port);
  const headless = values['headless-for'];
  const seconds = headless === undefined ? undefined : Number(headless);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new UsageError('--port: expected a port number 1-65535');
  }
  if (seconds !== undefined && !(seconds > 0)) {
    throw new UsageError('--headless-for: expected a positive number of seconds');
  }
  const tenants = Number(values.tenants);
  if (!/^\d+$/.test(values.tenants) || tenants < 1 || tenants > DEMO_TENANTS.length) {
    throw new UsageError(`--tenants: expected a number of tenants 1-${DEMO_TENANTS.length}`);
  }
  return {
    port,
    dir: path.resolve(values.dir),
    headlessForMs: seconds === undefined ? undefined : seconds * 1000,
    keepData: values['keep-data'],
    realNode: values['real-node'],
    tenants: DEMO_TENANTS.slice(0, tenants),
  };
}

/** A bad command line: one line saying what is wrong, then the usage; exit 2. */
class UsageError extends Error {}

/** A process the demo started, as `/proc` names it, so a reused PID is never signalled. */
interface Recorded {
  readonly name: string;
  readonly pid: number;
  readonly binary: string;
}

/** What the demo started, written to `<dir>/state.json` as it goes (the demo tests read it). */
const state = {
  demoPid: process.pid,
  processes: [] as Recorded[],
  ports: [] as number[],
  /** The cluster's admin kubeconfig (under the demo's directory, gone after the stop). */
  kubeconfigPath: undefined as string | undefined,
  /** With --real-node: the node, its network namespace and its directory (mounts live there). */
  realNode: undefined as { name: string; netnsName: string; dir: string } | undefined,
};

function record(name: string, pid: number | undefined): void {
  if (pid === undefined) return;
  const binary = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
  state.processes.push({ name, pid, binary });
}

function step(n: number, text: string): void {
  console.log(`[${n}/${STEPS}] ${text}`);
}

/** Cleanups in start order; shutdown runs them in reverse. */
const cleanups: { what: string; run: () => Promise<unknown> }[] = [];

async function main(options: Options): Promise<void> {
  await prepareDir(options);
  const plane = await startControlPlane(options.dir, options.realNode);
  const llm = await demoLlm(options.dir, 4);
  const { mssp, staff, apiUrl } = await startSvc(options, plane, llm.caFile);
  const realNode = await plane.realNode;
  if (realNode) await exposeSvc(realNode, options);

  step(6, `Tenants ${options.tenants.map((t) => t.slug).join(', ')} through the MSSP API`);
  const ids = new Map<string, string>();
  for (const spec of options.tenants) {
    await realNode?.prepareTenant(namespaceOf(spec.slug), testStorageClass);
    ids.set(spec.slug, await createDemoTenant(mssp, spec, llm.settings));
  }
  const indexers = realNode
    ? await activateOnNode(plane.admin, realNode, mssp, ids)
    : await activate(plane.admin, mssp, ids, apiUrl);
  await saveState(options.dir);
  const customers = await customersOf(mssp, options.tenants, ids, options.port);

  step(8, `Alerts: ${TRICKLE.perTick} per tenant every ${TRICKLE.everyMs / 1000} s`);
  const trickle = startTrickle(indexers);
  cleanups.push({ what: 'alerts', run: async () => trickle.stop() });
  printReady(options, staff, customers, llm.standIn !== undefined);
  if (options.headlessForMs !== undefined) {
    setTimeout(() => void shutdown('--headless-for elapsed'), options.headlessForMs);
  }
}

let saving = Promise.resolve();

/** One write at a time: the real node records itself while svc starts. */
function saveState(dir: string): Promise<void> {
  saving = saving
    .catch(() => undefined)
    .then(() => writeFile(path.join(dir, 'state.json'), `${JSON.stringify(state, null, 2)}\n`));
  return saving;
}

/** A fresh directory for this run (the previous run's cluster is gone, so is its meaning). */
async function prepareDir(options: Options): Promise<void> {
  await refuseSecondDemo(path.join(options.dir, 'state.json'));
  await assertPortFree(options.port);
  await removeDemoFiles(options.dir);
  await mkdir(path.join(options.dir, 'logs'), { recursive: true });
  if (!options.keepData) cleanups.push({ what: 'files', run: () => removeDemoFiles(options.dir) });
}

interface ControlPlane {
  binDir: string;
  admin: KubeConfig;
  identity: InstallIdentity;
  /** Still starting while svc starts (steps 3-5 need nothing of it); awaited before step 6. */
  realNode: Promise<DemoNode> | undefined;
}

/** Steps 1-3: binaries, the cluster with its volume provisioner, svc's install identity. */
async function startControlPlane(dir: string, withRealNode: boolean): Promise<ControlPlane> {
  step(1, 'Kubernetes binaries (built from Go sources on the first run: minutes, progress below)');
  const { binDir } = await ensureBinaries();

  step(2, 'Local control plane: etcd, kube-apiserver, controller-manager, scheduler, kwok node');
  const cluster = await startCluster({ dir: path.join(dir, 'cluster') });
  cleanups.push({ what: 'cluster', run: () => cluster.stop() });
  for (const { component, pid, binary } of cluster.processes) {
    state.processes.push({ name: component, pid, binary });
  }
  state.ports.push(...cluster.ports);
  state.kubeconfigPath = cluster.kubeconfigPath;
  await saveState(dir);
  const admin = new KubeConfig();
  admin.loadFromFile(cluster.kubeconfigPath);
  const provisioner = await startVolumeProvisioner(admin);
  cleanups.push({ what: 'volume provisioner', run: () => provisioner.stop() });
  const realNode = withRealNode ? startNode(cluster.kubeconfigPath, dir) : undefined;

  step(
    3,
    `Install namespace ${INSTALL_NAMESPACE}: the system chart's ServiceAccount, RBAC, policies`,
  );
  const identity = await createInstallIdentity(cluster.kubeconfigPath, {
    namespace: INSTALL_NAMESPACE,
    serviceAccount: SERVICE_ACCOUNT,
    msspId: randomUUID(),
    installId: randomUUID(),
    helm: path.join(binDir, 'helm'),
  });
  return { binDir, admin, identity, realNode };
}

/**
 * Step 2 with --real-node: a real kubelet node beside kwok, with svc's and the indexer's images.
 * It starts in the background (a minute or more); a shutdown meanwhile waits for it, then stops it.
 */
function startNode(kubeconfigPath: string, dir: string): Promise<DemoNode> {
  step(
    2,
    'Real node: containerd, kubelet, kube-proxy, CoreDNS; svc and indexer images (minutes on the first run, in the background)',
  );
  const starting = startDemoNode(kubeconfigPath).then(async (node) => {
    for (const pid of node.pids()) record('real node', pid);
    state.realNode = { name: node.node.name, netnsName: node.node.netnsName, dir: node.node.dir };
    await saveState(dir);
    console.log(`demo: real node ${node.node.name} ready`);
    return node;
  });
  // A failed start has stopped itself; its error surfaces where main awaits the node.
  cleanups.push({
    what: 'real node',
    run: () =>
      starting.then(
        (node) => node.stop(),
        () => undefined,
      ),
  });
  starting.catch(() => undefined);
  return starting;
}

/** svc's port reachable from the Pods; its forwarders are recorded like every other process. */
async function exposeSvc(node: DemoNode, options: Options): Promise<void> {
  const known = new Set(node.pids());
  await node.exposeSvc(options.port);
  for (const pid of node.pids()) if (!known.has(pid)) record('svc forwarder', pid);
  await saveState(options.dir);
}

/** Step 5: `svc serve`, its first admin signed in with a password the demo prints. */
async function startSvc(
  options: Options,
  plane: ControlPlane,
  caFile: string | undefined,
): Promise<{ mssp: SvcClient; staff: Credentials; apiUrl: string }> {
  step(5, `svc serve on port ${options.port} (embedded PostgreSQL in ${shown(options.dir)}/svc)`);
  const svc = await startSvcServe({
    port: options.port,
    dataDir: path.join(options.dir, 'svc'),
    logFile: path.join(options.dir, 'logs', 'svc.log'),
    env: {
      ...svcEnv(plane.identity, plane.binDir, caFile),
      ...(plane.realNode ? await demoNodeEnv(options.port) : {}),
    },
    onSpawn: (spawned) => {
      cleanups.push({ what: 'svc', run: () => spawned.stop() });
      record('svc serve', spawned.pid);
    },
  });
  const database = await svc.database();
  record('postgres', database.pid);
  state.ports.push(options.port, database.port);
  await saveState(options.dir);
  const staff: Credentials = { email: svc.firstAdmin.email, password: demoPassword() };
  const initial = svc.firstAdmin.password;
  const mssp = await signIn(consoleUrl(options.port), staff.email, initial, staff.password);
  return { mssp, staff, apiUrl: svc.url };
}

/**
 * Step 7 with --real-node: the kubelet runs each tenant's adapter and indexer Pods; the demo only
 * waits for the adapters' heartbeats to make the tenants active, then writes alerts into the
 * indexer Pods through a forwarder, as the manager's Filebeat would.
 */
async function activateOnNode(
  admin: KubeConfig,
  node: DemoNode,
  mssp: SvcClient,
  ids: ReadonlyMap<string, string>,
): Promise<Map<string, AlertSink>> {
  step(7, `Provisioning; adapter and indexer Pods run on the real node ${node.node.name}`);
  const core = admin.makeApiClient(CoreV1Api);
  const sinks = await Promise.all(
    [...ids].map(async ([slug, id]) => {
      await waitForTenantState(mssp, id, 'active', 600_000);
      const sink = await node.alertSink(core, namespaceOf(slug), (error) =>
        console.error(`demo: alerts for ${slug} not written: ${error}`),
      );
      cleanups.push({ what: `alerts into ${slug}`, run: () => sink.close() });
      return [slug, sink] as const;
    }),
  );
  return new Map(sinks);
}

/**
 * Step 7: once a tenant's package is installed, plays the kubelet for its adapter Pod (the
 * real `svc adapter` against a real indexer: OpenSearch with the security plugin, svc's PKI and
 * users for that tenant, testcluster/opensearch/tenant-indexer.ts); its heartbeat makes the
 * tenant active. Returns each tenant's indexer, for the alerts.
 */
async function activate(
  admin: KubeConfig,
  mssp: SvcClient,
  ids: ReadonlyMap<string, string>,
  apiUrl: string,
): Promise<Map<string, ClusterTenantIndexer>> {
  step(7, 'Provisioning; each adapter Pod runs as a local `svc adapter` process');
  const core = admin.makeApiClient(CoreV1Api);
  const apps = admin.makeApiClient(AppsV1Api);
  const pods = await Promise.all(
    [...ids].map(async ([slug, id]) => {
      await waitForTenantState(mssp, id, 'provisioning', 180_000);
      const pod = await runAdapterPod({ core, apps, apiUrl }, slug, {
        env: { SVC_POLL_SECONDS: '2', SVC_HEARTBEAT_SECONDS: '10' },
        indexer: async (_login, namespace) => {
          const indexer = await startClusterTenantIndexer(core, namespace, {
            onError: (error) => console.error(`demo: alerts for ${slug} not written: ${error}`),
          });
          record(`indexer ${slug}`, indexer.node.pid);
          state.ports.push(indexer.node.httpPort, indexer.node.transportPort);
          return { indexer, env: indexer.adapterEnv };
        },
      });
      cleanups.push({ what: `adapter ${slug}`, run: () => pod.stop() });
      record(`adapter ${slug}`, pod.adapter.child.pid);
      await waitForTenantState(mssp, id, 'active', 300_000);
      return [slug, pod.indexer] as const;
    }),
  );
  return new Map(pods);
}

async function customersOf(
  mssp: SvcClient,
  tenants: readonly DemoTenantSpec[],
  ids: ReadonlyMap<string, string>,
  port: number,
): Promise<Map<string, Credentials>> {
  const customers = new Map<string, Credentials>();
  for (const spec of tenants) {
    const id = ids.get(spec.slug) ?? '';
    customers.set(spec.slug, await createCustomer(mssp, id, spec, portalUrl(spec.slug, port)));
  }
  return customers;
}

/** A path as short as it reads well: relative below the working directory, else absolute. */
function shown(dir: string): string {
  const relative = path.relative(process.cwd(), dir);
  return relative === '' ? '.' : relative.startsWith('..') ? dir : relative;
}

function consoleUrl(port: number): string {
  return `http://localhost:${port}`;
}

function portalUrl(slug: string, port: number): string {
  return `http://${slug}.localhost:${port}`;
}

/**
 * The LLM the tenants triage with: one the operator names (SVC_DEMO_LLM_BASE_URL, _MODEL,
 * _API_KEY, _PROVIDER), else the stand-in over HTTPS on loopback, trusted by svc through
 * SVC_OUTBOUND_CA_FILE (tenant LLM URLs are https:// only).
 */
async function demoLlm(
  dir: string,
  n: number,
): Promise<{ settings: DemoLlm; caFile: string | undefined; standIn: LlmStandIn | undefined }> {
  const baseUrl = process.env.SVC_DEMO_LLM_BASE_URL;
  if (baseUrl) {
    step(n, `LLM: ${baseUrl} (SVC_DEMO_LLM_BASE_URL)`);
    const settings: DemoLlm = {
      provider: process.env.SVC_DEMO_LLM_PROVIDER ?? 'openai',
      base_url: baseUrl,
      model: process.env.SVC_DEMO_LLM_MODEL ?? 'gpt-4o-mini',
      ...(process.env.SVC_DEMO_LLM_API_KEY ? { api_key: process.env.SVC_DEMO_LLM_API_KEY } : {}),
    };
    return { settings, caFile: undefined, standIn: undefined };
  }
  const tls = await loopbackCertificate();
  const caFile = path.join(dir, 'llm-ca.pem');
  await writeFile(caFile, tls.cert);
  const apiKey = `sk-demo-${randomBytes(12).toString('hex')}`;
  const standIn = await startLlmStandIn({ tls, apiKey, latencyMs: 400 });
  standIn.respond(demoTriageAnswer);
  cleanups.push({ what: 'LLM stand-in', run: () => standIn.close() });
  step(n, `LLM: stand-in (OpenAI protocol) at ${standIn.openaiBaseUrl}`);
  return {
    settings: {
      provider: 'openai',
      base_url: standIn.openaiBaseUrl,
      model: 'demo-triage',
      api_key: apiKey,
    },
    caFile,
    standIn,
  };
}

/** svc's settings: this cluster and identity, the test storage class, demo-short timings. */
function svcEnv(
  identity: { kubeconfigPath: string; namespace: string; msspId: string; installId: string },
  binDir: string,
  caFile: string | undefined,
): Record<string, string> {
  return {
    PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ''}`,
    KUBECONFIG: identity.kubeconfigPath,
    SVC_LOG_LEVEL: 'info',
    SVC_INSTALL_NAMESPACE: identity.namespace,
    SVC_SERVICE_ACCOUNT: SERVICE_ACCOUNT,
    SVC_MSSP_ID: identity.msspId,
    SVC_INSTALL_ID: identity.installId,
    SVC_MSSP_NAME: 'Demo MSSP',
    SVC_INSTALL_LABEL: 'demo',
    SVC_HELM_BIN: path.join(binDir, 'helm'),
    SVC_ADAPTER_IMAGE: 'localhost/svc-adapter:demo',
    SVC_TENANT_STORAGE_CLASS: testStorageClass,
    SVC_ORCHESTRATOR_POLL: '1s',
    SVC_TRIAGE_DELAY: '5s',
    // The stand-ins listen on loopback, which svc's outbound policy refuses by default.
    SVC_OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8',
    ...(caFile ? { SVC_OUTBOUND_CA_FILE: caFile } : {}),
  };
}

function printReady(
  options: Options,
  staff: Credentials,
  customers: ReadonlyMap<string, Credentials>,
  standInLlm: boolean,
): void {
  const rows = [
    [
      'console',
      `${consoleUrl(options.port)}/`,
      `${staff.email} / ${staff.password}`,
      'MSSP staff, platform_admin',
    ],
    ...options.tenants.map((spec) => {
      const c = customers.get(spec.slug);
      return [
        'portal',
        `${portalUrl(spec.slug, options.port)}/`,
        `${c?.email} / ${c?.password}`,
        spec.branding.app_name,
      ];
    }),
  ];
  const width = Math.max(...rows.map((r) => (r[1] ?? '').length));
  const relative = shown(options.dir);
  const llm = standInLlm ? 'the stand-in LLM' : 'the configured LLM';
  console.log('\nsvc demo is running. Open in a browser and sign in:\n');
  for (const [kind, url, login, label] of rows) {
    console.log(`  ${(kind ?? '').padEnd(8)}${(url ?? '').padEnd(width + 2)}${login}   (${label})`);
  }
  const into = options.tenants.length === 1 ? 'the tenant' : 'each tenant';
  console.log(`\n  Alerts flow into ${into} (real indexers: OpenSearch); triage by ${llm}.`);
  console.log(
    `  Logs: ${relative}/logs/svc.log, ${relative}/cluster/logs; processes: ${relative}/state.json`,
  );
  console.log('  Ctrl-C stops everything (a second Ctrl-C kills at once).\n');
  console.log('demo: ready');
}

/**
 * The demo's directory, and the embedded database's cluster when svc had to place it outside
 * (a checkout the `postgres` user cannot traverse, README "Quick start"): left there, it would make
 * the next run's initdb fail on a non-empty directory.
 */
async function removeDemoFiles(dir: string): Promise<void> {
  const embedded = await readFile(path.join(dir, 'svc', 'embedded.json'), 'utf8').then(
    (text) => JSON.parse(text) as { pgDir?: string },
    () => undefined,
  );
  if (embedded?.pgDir) await rm(embedded.pgDir, { recursive: true, force: true });
  await rm(dir, { recursive: true, force: true });
}

/** A demo running from this directory keeps it: starting over would pull it from under it. */
async function refuseSecondDemo(statePath: string): Promise<void> {
  const previous = await readFile(statePath, 'utf8').then(
    (text) => JSON.parse(text) as { demoPid?: number },
    () => undefined,
  );
  const pid = previous?.demoPid;
  if (pid === undefined || pid === process.pid) return;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  if (cmdline.includes('demo.ts')) {
    throw new Error(`a demo is already running (pid ${pid}); stop it first or pass --dir`);
  }
}

async function assertPortFree(port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const server = createServer();
    server.once('error', () =>
      reject(new Error(`port ${port} is in use; pass --port <free port>`)),
    );
    server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
  });
}

let stopping: Promise<void> | undefined;

/** Runs the cleanups in reverse start order; each failure is reported and the rest still run. */
function shutdown(reason: string, code = 0): Promise<void> {
  stopping ??= (async () => {
    console.log(`demo: stopping (${reason})`);
    for (const cleanup of cleanups.reverse()) {
      const started = Date.now();
      await cleanup.run().then(
        () =>
          console.log(
            `  stopped ${cleanup.what} (${((Date.now() - started) / 1000).toFixed(1)} s)`,
          ),
        (error: unknown) => {
          console.error(
            `demo: stopping ${cleanup.what}: ${error instanceof Error ? error.message : error}`,
          );
          code = 1;
        },
      );
    }
    const left = state.processes.filter((p) => isRunning(p));
    if (left.length > 0) {
      console.error(`demo: still running: ${left.map((p) => `${p.name} (${p.pid})`).join(', ')}`);
      code = 1;
    } else {
      console.log('demo: stopped; nothing it started is running');
    }
    process.exit(code);
  })();
  return stopping;
}

/** The second Ctrl-C: every recorded process gets SIGKILL now, newest first. */
function force(): void {
  console.log('demo: killing everything it started');
  for (const proc of [...state.processes].reverse()) {
    if (isRunning(proc)) process.kill(proc.pid, 'SIGKILL');
  }
  process.exit(130);
}

// A terminal's Ctrl-C reaches this process twice under `npm run demo`: from the terminal (the
// whole process group) and relayed by the tsx parent. Only a signal a moment later is a
// second Ctrl-C.
let firstSignalAt = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (!stopping) {
      firstSignalAt = Date.now();
      void shutdown(signal);
    } else if (Date.now() - firstSignalAt > 1_000) {
      force();
    }
  });
}

try {
  await main(readOptions());
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  if (
    error instanceof UsageError ||
    (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
  ) {
    console.error(`${message.split('\n')[0]}\n${USAGE}`);
    process.exit(2);
  }
  console.error(`demo: ${message}`);
  await shutdown('start-up failed', 1);
}
