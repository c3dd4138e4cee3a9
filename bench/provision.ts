/**
 * How much of a tenant's provisioning time is svc's own, and how much is waiting on Helm and
 * the Kubernetes API server?
 *
 * One process holds svc (the real HTTP app and an orchestrator loop, as `svc serve` runs them)
 * and the load: a scratch PostgreSQL, the test cluster (kube-apiserver, scheduler, kwok) and the
 * real helm binary with the bundled tenant chart. An MSSP admin creates N tenants at once over
 * HTTP with a small component profile; a simulated adapter per tenant heartbeats once its tenant
 * is `provisioning`, as the real adapter does once its pod runs.
 *
 * The baseline, measured in the same run, is the time svc waits on others. Timing decorators
 * around the orchestrator's narrow dependencies (HelmRunner, NamespaceStore, SecretStore and the
 * KubeConfig the readiness report builds its clients from) attribute every helm call and API
 * request to its tenant by namespace (`tenant-<slug>`) or Secret name (`tenant-<id>-…`). Per
 * tenant, from the POST to the commit that made it `active`:
 *
 *   wait = helm ∪ API server ∪ readiness (provisioning → package_ready, kwok and the scheduler)
 *          ∪ adapter (package_ready → the heartbeat that activated it, if that came later)
 *   own  = total − wait        svc's own share = Σ own / Σ total   (target < 10%)
 *
 * Exits 0 whatever the verdict; non-zero only when the benchmark itself fails. It removes what
 * it made (namespaces, volumes, the database, the cluster if it started one), also on Ctrl-C.
 *
 *   npm run bench:provision -- --tenants 20 --heartbeat 1000 --readiness-poll 2000
 *   SVC_TEST_KUBECONFIG=… npm run bench:provision     # reuse a running test cluster
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import {
  type ApiConstructor,
  type ApiType,
  AppsV1Api,
  CoreV1Api,
  type Informer,
  KubeConfig,
  type KubernetesObject,
  makeInformer,
  type V1Deployment,
  type V1PersistentVolumeClaim,
  type V1StatefulSet,
} from '@kubernetes/client-node';
import pg from 'pg';
import { createSvcClient } from '../contracts/index.ts';
import type { TenantConfig } from '../contracts/tenant-config.ts';
import { composeCore } from '../src/app/compose.ts';
import { createHelmRunner, type HelmRunner } from '../src/cluster/helm.ts';
import { createNamespaceStore, type NamespaceStore } from '../src/cluster/namespaces.ts';
import { createSecretStore, type SecretStore } from '../src/cluster/secrets.ts';
import { loadConfig } from '../src/config/index.ts';
import type { AppDatabase } from '../src/db/pools.ts';
import { type ScratchDatabase, startScratchDatabase } from '../src/db/scratch.ts';
import { clientConfig } from '../src/db/target.ts';
import { createLogger } from '../src/log/index.ts';
import { DEFAULT_TIMING } from '../src/orchestrator/context.ts';
import { seedUser, startTestApi } from '../test/support/api.ts';
import type { TestDatabase } from '../test/support/database.ts';
import { startVolumeProvisioner, testStorageClass } from '../test/support/volumes.ts';
import { createTestNamespace, ensureBinaries, startCluster } from '../testcluster/harness.ts';
import { percentile } from './harness.ts';

const TARGET_SHARE = 0.1;
const PASSWORD = 'provision-bench-password';
/** How often the bench reads the tenants' states (to start adapters and to see failures). */
const MONITOR_MS = 200;
/** svc serve's pool (createAppDatabase's default), shared by the API and the orchestrator. */
const POOL_SIZE = 10;
const CLEANUP_WAIT_MS = 180_000;

interface Options {
  tenants: number;
  /** The simulated adapter's heartbeat interval. */
  heartbeatMs: number;
  readinessPollMs: number;
  concurrency: number;
  timeoutMs: number;
  /** Print every timed call per tenant. */
  trace: boolean;
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      tenants: { type: 'string' },
      heartbeat: { type: 'string' },
      'readiness-poll': { type: 'string' },
      concurrency: { type: 'string' },
      timeout: { type: 'string' },
      trace: { type: 'boolean' },
    },
  });
  const pick = (
    name: Exclude<keyof typeof values, 'trace'>,
    fallback: number,
    min: number,
    max: number,
  ) => {
    const raw = values[name] ?? process.env[`BENCH_${name.toUpperCase().replaceAll('-', '_')}`];
    const value = raw === undefined ? fallback : Number(raw.replaceAll('_', ''));
    if (!Number.isInteger(value) || value < min || value > max)
      throw new Error(`--${name} must be an integer ${min}-${max}, got ${JSON.stringify(raw)}`);
    return value;
  };
  const tenants = pick('tenants', 20, 1, 200);
  return {
    tenants,
    heartbeatMs: pick('heartbeat', 1_000, 50, 60_000),
    readinessPollMs: pick('readiness-poll', DEFAULT_TIMING.readinessPollMs, 50, 60_000),
    concurrency: pick('concurrency', Math.max(25, tenants), 1, 500),
    timeoutMs: pick('timeout', 600, 30, 3_600) * 1000,
    trace: values.trace ?? process.env.BENCH_TRACE === '1',
  };
}

// --- Attribution ------------------------------------------------------------------------

/** Epoch milliseconds with sub-millisecond resolution (comparable with PostgreSQL's now()). */
const clock = () => performance.timeOrigin + performance.now();

interface Interval {
  start: number;
  end: number;
}

type WaitKind = 'helm' | 'apiserver';

interface Wait extends Interval {
  kind: WaitKind;
  op: string;
}

/**
 * Everything the decorators saw, keyed by tenant: `slug:<slug>` from a namespace,
 * `id:<uuid>` from an install-namespace Secret name or a tenant-scoped transaction.
 */
interface Timeline {
  time<T>(kind: WaitKind, key: string | undefined, op: string, fn: () => Promise<T>): Promise<T>;
  transaction<T>(tenantId: string, fn: () => Promise<T>): Promise<T>;
  unscoped(): void;
  waits(key: string): Wait[];
  transactions(tenantId: string): Interval[];
  unscopedCount(): number;
}

function createTimeline(): Timeline {
  const waits = new Map<string, Wait[]>();
  const txs = new Map<string, Interval[]>();
  let unscoped = 0;
  const push = <V>(map: Map<string, V[]>, key: string, value: V) => {
    const list = map.get(key);
    if (list) list.push(value);
    else map.set(key, [value]);
  };
  return {
    async time(kind, key, op, fn) {
      const start = clock();
      try {
        return await fn();
      } finally {
        push(waits, key ?? 'other', { kind, op, start, end: clock() });
      }
    },
    async transaction(tenantId, fn) {
      const start = clock();
      try {
        return await fn();
      } finally {
        push(txs, tenantId, { start, end: clock() });
      }
    },
    unscoped: () => {
      unscoped++;
    },
    waits: (key) => waits.get(key) ?? [],
    transactions: (tenantId) => txs.get(tenantId) ?? [],
    unscopedCount: () => unscoped,
  };
}

function keyOfNamespace(namespace: string | undefined): string | undefined {
  return namespace?.startsWith('tenant-') ? `slug:${namespace.slice('tenant-'.length)}` : undefined;
}

const SECRET_NAME = /^tenant-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-/;
function keyOfSecret(name: string): string | undefined {
  const id = SECRET_NAME.exec(name)?.[1];
  return id ? `id:${id}` : undefined;
}

function timedHelm(inner: HelmRunner, t: Timeline): HelmRunner {
  const at = (op: string, namespace: string) => ({
    run: <T>(fn: () => Promise<T>) => t.time('helm', keyOfNamespace(namespace), op, fn),
  });
  return {
    install: (a) => at('install', a.namespace).run(() => inner.install(a)),
    upgrade: (a) => at('upgrade', a.namespace).run(() => inner.upgrade(a)),
    rollback: (a) => at('rollback', a.namespace).run(() => inner.rollback(a)),
    uninstall: (a) => at('uninstall', a.namespace).run(() => inner.uninstall(a)),
    status: (a) => at('status', a.namespace).run(() => inner.status(a)),
    values: (a) => at('values', a.namespace).run(() => inner.values(a)),
    manifest: (a) => at('manifest', a.namespace).run(() => inner.manifest(a)),
  };
}

function timedNamespaces(inner: NamespaceStore, t: Timeline): NamespaceStore {
  const api = <T>(op: string, namespace: string, fn: () => Promise<T>) =>
    t.time('apiserver', keyOfNamespace(namespace), op, fn);
  return {
    ensure: (name, labels) => api('namespace.ensure', name, () => inner.ensure(name, labels)),
    remove: (name, o) => api('namespace.remove', name, () => inner.remove(name, o)),
    exists: (name) => api('namespace.exists', name, () => inner.exists(name)),
    bindServiceIdentity: (namespace, identity) =>
      api('rolebinding.ensure', namespace, () => inner.bindServiceIdentity(namespace, identity)),
    putSecret: (namespace, name, data, labels) =>
      api('secret.put', namespace, () => inner.putSecret(namespace, name, data, labels)),
    readSecret: (namespace, name) =>
      api('secret.read', namespace, () => inner.readSecret(namespace, name)),
  };
}

function timedSecrets(inner: SecretStore, t: Timeline): SecretStore {
  const api = <T>(op: string, name: string, fn: () => Promise<T>) =>
    t.time('apiserver', keyOfSecret(name), op, fn);
  return {
    namespace: inner.namespace,
    create: (name, data, labels) =>
      api('install-secret.create', name, () => inner.create(name, data, labels)),
    replace: (name, data, labels) =>
      api('install-secret.replace', name, () => inner.replace(name, data, labels)),
    remove: (name, uid) => api('install-secret.remove', name, () => inner.remove(name, uid)),
    read: (name) => api('install-secret.read', name, () => inner.read(name)),
    list: (selector) => api('install-secret.list', selector, () => inner.list(selector)),
  };
}

/**
 * The readiness report (src/cluster/namespaces.ts readinessReport) builds its API clients from
 * the orchestrator's KubeConfig on every poll; every method of those clients is timed and
 * attributed by its `namespace` parameter.
 */
class TimedKubeConfig extends KubeConfig {
  constructor(
    kubeconfigPath: string,
    private readonly timeline: Timeline,
  ) {
    super();
    this.loadFromFile(kubeconfigPath);
  }

  override makeApiClient<T extends ApiType>(apiClientType: ApiConstructor<T>): T {
    const api = super.makeApiClient(apiClientType);
    const timeline = this.timeline;
    return new Proxy(api, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const namespace = (args[0] as { namespace?: string } | undefined)?.namespace;
          return timeline.time('apiserver', keyOfNamespace(namespace), String(property), () =>
            Promise.resolve(value.apply(target, args)),
          );
        };
      },
    });
  }
}

/** Counts transactions and times the tenant-scoped ones (to find a state change's commit). */
function timedDatabase(db: AppDatabase, t: Timeline): AppDatabase {
  return {
    ...db,
    withTenant: (tenantId, fn) => t.transaction(tenantId, () => db.withTenant(tenantId, fn)),
    withoutTenant: (fn) => {
      t.unscoped();
      return db.withoutTenant(fn);
    },
    withScope: (tenantId, fn) => {
      if (tenantId === null) {
        t.unscoped();
        return db.withScope(null, fn);
      }
      return t.transaction(tenantId, () => db.withScope(tenantId, fn));
    },
  };
}

/**
 * When each tenant namespace actually became Ready, seen from outside svc: cluster-wide
 * informers (one watch each) on Deployments, StatefulSets and PVCs, judged by the same rule as
 * the orchestrator's readiness check. The gap to svc's `package_ready` record is its polling lag.
 */
interface ReadinessWatch {
  readySince(namespace: string): number | undefined;
  stop(): Promise<void>;
}

async function watchReadiness(
  kc: KubeConfig,
  namespaces: ReadonlySet<string>,
): Promise<ReadinessWatch> {
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const deployments = makeInformer<V1Deployment>(kc, '/apis/apps/v1/deployments', () =>
    apps.listDeploymentForAllNamespaces(),
  );
  const statefulSets = makeInformer<V1StatefulSet>(kc, '/apis/apps/v1/statefulsets', () =>
    apps.listStatefulSetForAllNamespaces(),
  );
  const claims = makeInformer<V1PersistentVolumeClaim>(kc, '/api/v1/persistentvolumeclaims', () =>
    core.listPersistentVolumeClaimForAllNamespaces(),
  );
  const since = new Map<string, number>();
  const check = (object: KubernetesObject) => {
    const namespace = object.metadata?.namespace ?? '';
    if (!namespaces.has(namespace)) return;
    const workloads = [...deployments.list(namespace), ...statefulSets.list(namespace)];
    const ready =
      workloads.length > 0 &&
      workloads.every((w) => (w.status?.readyReplicas ?? 0) >= (w.spec?.replicas ?? 1)) &&
      claims.list(namespace).every((c) => c.status?.phase === 'Bound');
    if (!ready) since.delete(namespace);
    else if (!since.has(namespace)) since.set(namespace, clock());
  };
  let stopped = false;
  const follow = <T extends KubernetesObject>(informer: Informer<T>) => {
    informer.on('add', check);
    informer.on('update', check);
    informer.on('delete', check);
    // A failed watch ends the informer; start it again (it re-lists, so no event is lost).
    informer.on('error', () => {
      if (!stopped) setTimeout(() => void informer.start().catch(() => undefined), 500);
    });
    return informer;
  };
  const informers = [follow(deployments), follow(statefulSets), follow(claims)];
  await Promise.all(informers.map((i) => i.start()));
  return {
    readySince: (namespace) => since.get(namespace),
    stop: async () => {
      stopped = true;
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}

// --- Interval arithmetic ------------------------------------------------------------------

function merge(intervals: Interval[]): Interval[] {
  const sorted = intervals.filter((i) => i.end > i.start).sort((a, b) => a.start - b.start);
  const out: Interval[] = [];
  for (const i of sorted) {
    const last = out.at(-1);
    if (last && i.start <= last.end) last.end = Math.max(last.end, i.end);
    else out.push({ ...i });
  }
  return out;
}

function clip(intervals: Interval[], within: Interval): Interval[] {
  return intervals
    .map((i) => ({ start: Math.max(i.start, within.start), end: Math.min(i.end, within.end) }))
    .filter((i) => i.end > i.start);
}

const measure = (intervals: Interval[]) =>
  merge(intervals).reduce((sum, i) => sum + i.end - i.start, 0);

// --- The tenants --------------------------------------------------------------------------

const SMALL = {
  requests: { cpu: '50m', memory: '64Mi' },
  limits: { cpu: '100m', memory: '128Mi' },
};

/** A small package: the configurable components shrunk, the dashboard off. */
function smallTenant(slug: string): TenantConfig {
  return {
    slug,
    display_name: `Bench ${slug}`,
    components: {
      monitor_dashboard_enabled: false,
      monitor_indexer: SMALL,
      cases: SMALL,
      analysis: SMALL,
    },
  };
}

interface Created {
  slug: string;
  id: string;
  postAt: number;
  createdAt: number;
}

interface Beat {
  start: number;
  end: number;
  state: string;
}

interface TenantResult {
  slug: string;
  toProvisioning: number;
  toActive: number;
  helm: number;
  apiserver: number;
  readiness: number;
  /** Of `readiness`: from the moment the namespace was Ready to svc recording it. */
  pollLag: number;
  adapter: number;
  own: number;
  ownBeforeProvisioning: number;
  total: number;
  transactions: number;
  readinessPolls: number;
}

interface LifecycleRow {
  tenant_id: string;
  kind: string;
  step: string | null;
  to_state: string | null;
  at_ms: number;
}

/** The commit of the transaction that wrote an event: the first timed one around `at`. */
function commitOf(t: Timeline, tenantId: string, at: number): number {
  const tx = t
    .transactions(tenantId)
    .filter((i) => i.start <= at + 1 && i.end >= at)
    .sort((a, b) => a.end - b.end)[0];
  return tx?.end ?? at;
}

function analyse(
  t: Timeline,
  tenant: Created,
  events: LifecycleRow[],
  beats: Beat[],
  clusterReady: number | undefined,
): TenantResult {
  const at = (pick: (e: LifecycleRow) => boolean, what: string) => {
    const event = events.find(pick);
    if (!event) throw new Error(`tenant ${tenant.slug}: no ${what} recorded`);
    return commitOf(t, tenant.id, event.at_ms);
  };
  const provisioning = at((e) => e.to_state === 'provisioning', 'pending→provisioning');
  const ready = at((e) => e.step === 'package_ready', 'package_ready');
  const active = at((e) => e.to_state === 'active', 'provisioning→active');
  const span = { start: tenant.postAt, end: active };
  const waits = [...t.waits(`slug:${tenant.slug}`), ...t.waits(`id:${tenant.id}`)];
  const helm = clip(
    waits.filter((w) => w.kind === 'helm'),
    span,
  );
  const api = clip(
    waits.filter((w) => w.kind === 'apiserver'),
    span,
  );
  const readiness = [{ start: provisioning, end: ready }];
  const seenReady = Math.min(ready, Math.max(provisioning, clusterReady ?? ready));
  // Activated by a heartbeat that came after readiness: the wait for the adapter is not svc's.
  const activating = beats.filter((b) => b.start <= active).at(-1);
  const adapter =
    active - ready > 1 && activating && activating.start > ready
      ? [{ start: ready, end: activating.start }]
      : [];
  // Each kind counts only what the kinds before it did not already cover, so they add up.
  const r = measure(readiness);
  const rh = measure([...readiness, ...helm]);
  const rha = measure([...readiness, ...helm, ...api]);
  const all = [...readiness, ...helm, ...api, ...adapter];
  const wait = measure(all);
  const total = active - tenant.postAt;
  const beforeProvisioning = { start: tenant.postAt, end: provisioning };
  return {
    slug: tenant.slug,
    toProvisioning: provisioning - tenant.postAt,
    toActive: total,
    readiness: r,
    pollLag: ready - seenReady,
    helm: rh - r,
    apiserver: rha - rh,
    adapter: wait - rha,
    own: total - wait,
    ownBeforeProvisioning:
      provisioning - tenant.postAt - measure(clip([...helm, ...api], beforeProvisioning)),
    total,
    transactions: t.transactions(tenant.id).length,
    readinessPolls: waits.filter(
      (w) => w.op === 'listNamespacedDeployment' && w.start >= provisioning && w.start <= ready,
    ).length,
  };
}

// --- Output -------------------------------------------------------------------------------

/** Everything timed for one tenant, in start order, relative to its POST (`--trace`). */
function printTrace(t: Timeline, tenant: Created, beats: Beat[]): void {
  const items = [
    ...[...t.waits(`id:${tenant.id}`), ...t.waits(`slug:${tenant.slug}`)].map((w) => ({
      ...w,
      what: `${w.kind} ${w.op}`,
    })),
    ...t.transactions(tenant.id).map((i) => ({ ...i, what: 'db transaction' })),
    ...beats.map((b) => ({ ...b, what: `heartbeat → ${b.state}` })),
    { start: tenant.postAt, end: tenant.createdAt, what: 'POST /api/mssp/tenants' },
  ].sort((a, b) => a.start - b.start);
  console.log(`\ntrace ${tenant.slug} (${tenant.id}), ms from its POST:`);
  for (const i of items) {
    const from = (i.start - tenant.postAt).toFixed(0).padStart(7);
    const to = (i.end - tenant.postAt).toFixed(0).padStart(7);
    console.log(`  ${from} → ${to}  ${(i.end - i.start).toFixed(0).padStart(6)}  ${i.what}`);
  }
}

const s = (ms: number) => (ms / 1000).toFixed(2);
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

function printReport(results: TenantResult[], t: Timeline, wallMs: number, o: Options): void {
  const header = [
    'tenant',
    '→prov s',
    '→active s',
    'helm s',
    'api s',
    'ready s',
    'lag s',
    'adapter s',
    'own s',
    'own<prov s',
    'own %',
    'tx',
    'polls',
  ];
  const rows = results.map((r) => [
    r.slug,
    s(r.toProvisioning),
    s(r.toActive),
    s(r.helm),
    s(r.apiserver),
    s(r.readiness),
    s(r.pollLag),
    s(r.adapter),
    s(r.own),
    s(r.ownBeforeProvisioning),
    pct(r.own / r.total),
    String(r.transactions),
    String(r.readinessPolls),
  ]);
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ');
  console.log(`\n${line(header)}`);
  for (const row of rows) console.log(line(row));

  const dist = (name: string, pick: (r: TenantResult) => number, fmt = s) => {
    const values = results.map(pick);
    console.log(
      `  ${name.padEnd(26)} p50 ${fmt(percentile(values, 50)).padStart(7)}   p95 ${fmt(percentile(values, 95)).padStart(7)}   max ${fmt(Math.max(...values)).padStart(7)}`,
    );
  };
  console.log(`\nPer tenant (${results.length} tenants, seconds unless %):`);
  dist('time to provisioning', (r) => r.toProvisioning);
  dist('time to active', (r) => r.toActive);
  dist('svc own', (r) => r.own);
  dist('svc own before provisioning', (r) => r.ownBeforeProvisioning);
  dist('svc own share', (r) => r.own / r.total, pct);
  dist('readiness poll lag', (r) => r.pollLag);
  dist('tenant-scoped transactions', (r) => r.transactions, String);

  const sum = (pick: (r: TenantResult) => number) => results.reduce((a, r) => a + pick(r), 0);
  const total = sum((r) => r.total);
  const parts = [
    ['helm', sum((r) => r.helm)],
    ['API server', sum((r) => r.apiserver)],
    ['readiness: cluster', sum((r) => r.readiness - r.pollLag)],
    ['readiness: svc poll lag', sum((r) => r.pollLag)],
    ['adapter', sum((r) => r.adapter)],
    ['svc own', sum((r) => r.own)],
  ] as const;
  console.log('\nWhere the time went (sum over tenants):');
  for (const [name, ms] of parts)
    console.log(`  ${name.padEnd(28)} ${s(ms).padStart(8)} s  ${pct(ms / total).padStart(6)}`);
  const share = sum((r) => r.own) / total;
  console.log(
    `\nsvc own share = Σ own / Σ total = ${s(sum((r) => r.own))} / ${s(total)} s = ${pct(share)}` +
      `  (target < ${pct(TARGET_SHARE)}): ${share < TARGET_SHARE ? 'PASS' : 'FAIL'}`,
  );
  const strict = sum((r) => r.own + r.pollLag) / total;
  console.log(
    `counting the readiness poll lag as svc's own too: ${pct(strict)}` +
      ` (${strict < TARGET_SHARE ? 'would pass' : 'would fail'}; the lag is bounded by --readiness-poll)`,
  );
  console.log(
    `All ${results.length} active ${s(wallMs)} s after the first POST; ` +
      `${t.unscopedCount()} transactions without a tenant context in the whole run ` +
      `(orchestrator passes, tenant loads, sessions); readiness polled every ${o.readinessPollMs} ms, ` +
      `adapters beat every ${o.heartbeatMs} ms.`,
  );
}

// --- Run ----------------------------------------------------------------------------------

type Cleanup = () => Promise<unknown>;

async function benchmark(o: Options, cleanups: Cleanup[], signal: AbortSignal): Promise<void> {
  const defer = (name: string, fn: Cleanup) =>
    cleanups.push(() =>
      fn().catch((error: unknown) => console.error(`cleanup (${name}) failed:`, error)),
    );
  const started = clock();
  const { binDir } = await ensureBinaries();
  let kubeconfigPath = process.env.SVC_TEST_KUBECONFIG;
  if (kubeconfigPath) {
    console.log(`cluster: reusing ${kubeconfigPath}`);
  } else {
    console.log('cluster: starting a test cluster (1 kwok node)…');
    const cluster = await startCluster();
    defer('cluster', () => cluster.stop());
    kubeconfigPath = cluster.kubeconfigPath;
  }
  const timeline = createTimeline();
  const kubeConfig = new TimedKubeConfig(kubeconfigPath, timeline);
  const plainKube = new KubeConfig();
  plainKube.loadFromFile(kubeconfigPath);
  const core = plainKube.makeApiClient(CoreV1Api);
  const namespaces = new Set<string>();
  defer('namespaces', () => removeNamespaces(core, namespaces));
  const provisioner = await startVolumeProvisioner(plainKube);
  // Runs after the namespaces are gone, so it can delete their volumes first.
  cleanups.splice(cleanups.length - 1, 0, () => provisioner.stop());
  const installNamespace = await createTestNamespace({ kubeconfigPath }, 'bench-install');
  namespaces.add(installNamespace);

  const scratch: ScratchDatabase = await startScratchDatabase();
  defer('database', () => scratch.stop());
  const { target } = scratch;
  const base = await composeCore({
    config: loadConfig({}),
    logger: createLogger('silent'),
    target,
    poolSize: POOL_SIZE,
  });
  const db = timedDatabase(base.db, timeline);
  const mssp = new pg.Pool({ ...clientConfig(target, 'mssp'), max: 2 });
  mssp.on('error', () => undefined);
  const database: TestDatabase = {
    name: target.database,
    target,
    app: db,
    pools: {
      admin: new pg.Pool({ ...clientConfig(target, 'admin'), max: 1 }),
      app: new pg.Pool({ ...clientConfig(target, 'app'), max: 1 }),
      mssp,
    },
    superuser: { ...scratch.superuser, database: target.database },
    drop: async () => undefined,
  };
  defer('pools', async () => {
    await base.close();
    await Promise.all(Object.values(database.pools).map((p) => p.end()));
  });

  const secrets = timedSecrets(createSecretStore(plainKube, installNamespace), timeline);
  const api = await startTestApi(database, {
    env: {
      SVC_INSTALL_NAMESPACE: installNamespace,
      SVC_SERVICE_ACCOUNT: 'svc',
      SVC_ADAPTER_IMAGE: 'registry.test/svc-adapter:0.1.0',
      SVC_TENANT_STORAGE_CLASS: testStorageClass,
      SVC_MSSP_ID: randomUUID(),
      SVC_MSSP_NAME: 'Bench MSSP',
      SVC_INSTALL_ID: randomUUID(),
      SVC_INSTALL_LABEL: 'bench',
      SVC_ORCHESTRATOR_CONCURRENCY: String(o.concurrency),
      SVC_LOG_LEVEL: process.env.BENCH_LOG ?? 'silent',
    },
    orchestration: {
      kubeConfig,
      secrets,
      kubeconfigPath,
      timing: { readinessPollMs: o.readinessPollMs, readinessTimeoutMs: o.timeoutMs },
      run: true,
      // The cluster calls are timed; the orchestrator's own work is what remains.
      instrument: (deps) => ({
        ...deps,
        namespaces: timedNamespaces(createNamespaceStore(plainKube), timeline),
        helm: timedHelm(
          createHelmRunner({ binary: join(binDir, 'helm'), kubeconfigPath }),
          timeline,
        ),
      }),
    },
  });
  defer('api', () => api.close());

  const email = `bench-${randomBytes(4).toString('hex')}@mssp.test`;
  await seedUser(database, api.hasher, { email, role: 'mssp_admin', password: PASSWORD });
  const admin = createSvcClient({ baseUrl: api.url, headers: { origin: api.origin } });
  const login = await admin.auth.login({ body: { email, password: PASSWORD } });
  if (login.status !== 200) throw new Error(`login failed: ${login.status}`);
  console.log(`setup took ${s(clock() - started)} s; install namespace ${installNamespace}`);

  const run = randomBytes(3).toString('hex');
  const slugs = Array.from(
    { length: o.tenants },
    (_, i) => `pb-${run}-${String(i).padStart(2, '0')}`,
  );
  const tenantNamespaces = new Set(slugs.map((slug) => `tenant-${slug}`));
  for (const namespace of tenantNamespaces) namespaces.add(namespace);
  const watch = await watchReadiness(plainKube, tenantNamespaces);
  defer('readiness watch', () => watch.stop());
  console.log(`creating ${o.tenants} tenants at once (tenant-pb-${run}-NN)…`);
  const firstPost = clock();
  const created = await Promise.all(
    slugs.map(async (slug): Promise<Created> => {
      const postAt = clock();
      const res = await admin.mssp.createTenant({ body: smallTenant(slug) });
      if (res.status !== 201)
        throw new Error(`create ${slug}: ${res.status} ${JSON.stringify(res.body)}`);
      return { slug, id: res.body.tenant.id, postAt, createdAt: clock() };
    }),
  );

  const beats = new Map<string, Beat[]>(created.map((c) => [c.id, []]));
  const adapters = new Map<string, Promise<void>>();
  const stopAdapters = new AbortController();
  const adapter = async (tenant: Created) => {
    const secret = await core.readNamespacedSecret({
      name: 'svc-adapter-token',
      namespace: `tenant-${tenant.slug}`,
    });
    const token = Buffer.from(secret.data?.token ?? '', 'base64').toString('utf8');
    while (!stopAdapters.signal.aborted) {
      const start = clock();
      const res = await fetch(`${api.url}/api/internal/adapter/health`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ version: '0.1.0' }),
      });
      const body = (await res.json()) as { tenant_state?: string };
      if (res.status !== 200) throw new Error(`heartbeat ${tenant.slug}: ${res.status}`);
      beats.get(tenant.id)?.push({ start, end: clock(), state: body.tenant_state ?? '' });
      if (body.tenant_state === 'active') return;
      await sleep(o.heartbeatMs, undefined, { signal: stopAdapters.signal }).catch(() => {});
    }
  };

  // Watch the states: start each adapter once its tenant is provisioning, stop on failure.
  const byId = new Map(created.map((c) => [c.id, c]));
  const deadline = clock() + o.timeoutMs;
  let lastReport = clock();
  try {
    for (;;) {
      signal.throwIfAborted();
      const { rows } = await mssp.query<{
        id: string;
        state: string;
        error_details: unknown;
      }>('SELECT id, state, error_details FROM tenants WHERE id = ANY($1)', [[...byId.keys()]]);
      const failed = rows.find((r) => r.error_details !== null);
      if (failed)
        throw new Error(
          `tenant ${byId.get(failed.id)?.slug} failed: ${JSON.stringify(failed.error_details)}`,
        );
      for (const row of rows) {
        const tenant = byId.get(row.id);
        if (tenant && row.state !== 'pending' && !adapters.has(row.id))
          adapters.set(row.id, adapter(tenant));
      }
      const counts = new Map<string, number>();
      for (const row of rows) counts.set(row.state, (counts.get(row.state) ?? 0) + 1);
      if ((counts.get('active') ?? 0) === created.length) break;
      if (clock() - lastReport > 10_000) {
        lastReport = clock();
        console.log(
          `  ${s(clock() - firstPost)} s: ${[...counts].map(([k, v]) => `${v} ${k}`).join(', ')}`,
        );
      }
      if (clock() > deadline) throw new Error(`not all tenants active within ${o.timeoutMs} ms`);
      await sleep(MONITOR_MS, undefined, { signal });
    }
  } finally {
    stopAdapters.abort();
    await Promise.allSettled(adapters.values());
  }
  await Promise.all(adapters.values());
  await api.tenancy?.stop();

  const { rows: events } = await mssp.query<LifecycleRow>(
    `SELECT tenant_id, kind, step, to_state,
            (extract(epoch FROM occurred_at) * 1000)::float8 AS at_ms
       FROM tenant_lifecycle_events WHERE tenant_id = ANY($1) ORDER BY id`,
    [created.map((c) => c.id)],
  );
  const results = created.map((tenant) =>
    analyse(
      timeline,
      tenant,
      events.filter((e) => e.tenant_id === tenant.id),
      beats.get(tenant.id) ?? [],
      watch.readySince(`tenant-${tenant.slug}`),
    ),
  );
  const lastActive = Math.max(...results.map((r, i) => (created[i]?.postAt ?? 0) + r.toActive));
  if (o.trace)
    for (const tenant of created) printTrace(timeline, tenant, beats.get(tenant.id) ?? []);
  printReport(results, timeline, lastActive - firstPost, o);
}

/** Deletes the namespaces and waits until they, and the volumes their claims had, are gone. */
async function removeNamespaces(core: CoreV1Api, names: ReadonlySet<string>): Promise<void> {
  await Promise.all(
    [...names].map((name) => core.deleteNamespace({ name }).catch(() => undefined)),
  );
  const deadline = Date.now() + CLEANUP_WAIT_MS;
  for (;;) {
    const [list, volumes] = await Promise.all([core.listNamespace(), core.listPersistentVolume()]);
    const left =
      list.items.filter((ns) => names.has(ns.metadata?.name ?? '')).length +
      volumes.items.filter((pv) => names.has(pv.spec?.claimRef?.namespace ?? '')).length;
    if (left === 0) return;
    if (Date.now() > deadline) {
      console.error(`cleanup: ${left} namespaces or volumes still being deleted; giving up`);
      return;
    }
    await sleep(500);
  }
}

async function main(): Promise<void> {
  const options = parseOptions();
  const cleanups: Cleanup[] = [];
  const interrupt = new AbortController();
  const onSignal = () => {
    if (interrupt.signal.aborted) process.exit(130);
    console.error('\ninterrupted: cleaning up (again to quit now)');
    interrupt.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await benchmark(options, cleanups, interrupt.signal);
  } catch (error) {
    if (!interrupt.signal.aborted) throw error;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
