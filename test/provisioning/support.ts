import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { cp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import type { TenantConfig } from '../../contracts/tenant-config.ts';
import { createSecretStore } from '../../src/cluster/secrets.ts';
import { BUNDLED_CHARTS_DIR } from '../../src/orchestrator/catalog.ts';
import {
  DEFAULT_TIMING,
  type OrchestratorDeps,
  type OrchestratorTiming,
} from '../../src/orchestrator/context.ts';
import type { Orchestrator } from '../../src/orchestrator/orchestrator.ts';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { getTestCluster, type TestCluster } from '../support/cluster.ts';
import { createTestDatabase, externalDatabaseEnv, type TestDatabase } from '../support/database.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';
import { testStorageClass } from '../support/volumes.ts';
import { type AdapterPod, type AdapterPodOptions, runAdapterPod } from './adapter-pod.ts';

export const PASSWORD = 'correct horse battery';

/** Timings short enough for tests; the readiness wait still leaves kwok room on 2 cores. */
export const FAST: OrchestratorTiming = {
  ...DEFAULT_TIMING,
  readinessTimeoutMs: 180_000,
  decommissionGraceMs: 1_000,
  retentionMs: 1_000,
  pollMs: 500,
  readinessPollMs: 250,
  helmTimeoutMs: 180_000,
  namespaceDeleteMs: 120_000,
};

export interface Orchestration {
  cluster: TestCluster;
  db: TestDatabase;
  api: TestApi;
  /** Signed in as an mssp_admin. */
  admin: SvcClient;
  deps: OrchestratorDeps;
  orchestrator: Orchestrator;
  installNamespace: string;
  core: CoreV1Api;
  apps: AppsV1Api;
  /**
   * Plays the kubelet for the tenant's adapter Pod (test/provisioning/adapter-pod.ts): the real
   * `svc adapter` process runs until its Pod is deleted, `stop()`, or close().
   */
  runAdapter(slug: string, options?: AdapterPodOptions): Promise<AdapterPod>;
  close(): Promise<void>;
}

export interface OrchestrationOptions {
  timing?: Partial<OrchestratorTiming>;
  chartsDir?: string;
  installVersion?: string;
  run?: boolean;
  /**
   * The identity svc acts as (orchestrator, its helm runner, readiness reads, the API's
   * SecretStore); default the admin. `core`/`apps` of the result stay the admin's.
   */
  kubeconfigPath?: string;
  /** An existing install namespace (deleted by close() all the same); default a fresh one. */
  installNamespace?: string;
  /** The organization row's ids (what the namespace labels and admission policies carry). */
  install?: { msspId: string; installId: string };
  /** svc's ServiceAccount in the install namespace (install facts); default `svc`. */
  serviceAccount?: string;
  /** More settings for svc (e.g. SVC_EDGE_PROXY=on), over the test install's. */
  env?: Record<string, string>;
}

/**
 * One orchestration for the test file: started before its tests, closed after them. Returns
 * the live orchestration (filled in by the `before` hook). `options` may be a function, for
 * options that need setting up first (a charts directory, an identity); `ready` runs once the
 * orchestration is up, in the same hook: top-level `before` hooks do not wait for each other.
 */
export function useOrchestration(
  options: OrchestrationOptions | (() => Promise<OrchestrationOptions>) = {},
  ready?: (o: Orchestration) => Promise<void>,
): Orchestration {
  const live = {} as Orchestration;
  before(async () => {
    const resolved = typeof options === 'function' ? await options() : options;
    Object.assign(live, await startOrchestration(resolved));
    await ready?.(live);
  });
  after(() => live.close?.());
  return live;
}

/**
 * The whole tenant lifecycle against real parts: a cloned database, the test cluster, the real
 * helm binary and the bundled charts, the HTTP API, and an orchestrator loop in this process.
 * The install namespace is a fresh test namespace standing in for svc-system.
 */
export async function startOrchestration(
  options: OrchestrationOptions = {},
): Promise<Orchestration> {
  const cluster = getTestCluster();
  const installNamespace =
    options.installNamespace ?? (await createTestNamespace(cluster, 'install'));
  let kubeConfig = cluster.kubeConfig;
  if (options.kubeconfigPath) {
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(options.kubeconfigPath);
  }
  const kubeconfigPath = options.kubeconfigPath ?? cluster.kubeconfigPath;
  const db = await createTestDatabase();
  const secrets = createSecretStore(kubeConfig, installNamespace);
  // The configuration of a test install: the test's namespace, identity and storage class.
  const api = await startTestApi(db, {
    hash: { params: TEST_HASH_PARAMS },
    env: {
      SVC_INSTALL_NAMESPACE: installNamespace,
      SVC_SERVICE_ACCOUNT: options.serviceAccount ?? 'svc',
      SVC_ADAPTER_IMAGE: 'registry.test/svc-adapter:0.1.0',
      SVC_TENANT_STORAGE_CLASS: testStorageClass,
      SVC_MSSP_ID: options.install?.msspId ?? randomUUID(),
      SVC_MSSP_NAME: 'Test MSSP',
      SVC_INSTALL_ID: options.install?.installId ?? randomUUID(),
      SVC_INSTALL_LABEL: 'test',
      SVC_ORCHESTRATOR_CONCURRENCY: '10',
      ...(options.chartsDir ? { SVC_TENANT_CHARTS_DIR: options.chartsDir } : {}),
      ...(options.installVersion ? { SVC_TENANT_CHART_VERSION: options.installVersion } : {}),
      ...(process.env.SVC_TEST_LOG === '1' ? { SVC_LOG_LEVEL: 'debug' } : {}),
      ...options.env,
    },
    orchestration: {
      kubeConfig,
      secrets,
      kubeconfigPath,
      timing: { ...FAST, ...options.timing },
      run: options.run ?? true,
    },
  });
  const tenancy = api.tenancy;
  if (!tenancy) throw new Error('startTestApi built no orchestration');
  const { orchestrator, deps } = tenancy;
  const installId = deps.install.installId;
  const email = `ops-${randomBytes(4).toString('hex')}@mssp.test`;
  await seedUser(db, api.hasher, { email, role: 'mssp_admin', password: PASSWORD });
  const admin = createSvcClient({ baseUrl: api.url, headers: { origin: api.origin } });
  assert.equal((await admin.auth.login({ body: { email, password: PASSWORD } })).status, 200);
  const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
  const adapters = new Set<AdapterPod>();
  return {
    cluster,
    db,
    api,
    admin,
    deps,
    orchestrator,
    installNamespace,
    core,
    apps,
    async runAdapter(slug, adapterOptions) {
      const pod = await runAdapterPod({ core, apps, apiUrl: api.url }, slug, adapterOptions);
      adapters.add(pod);
      return pod;
    },
    async close() {
      // The adapters first: they talk to the API closed below.
      await Promise.all([...adapters].map((pod) => pod.stop()));
      // Every tenant namespace this install made (the cluster is shared by the whole run).
      const mine = await core.listNamespace({ labelSelector: `install-id=${installId}` });
      await Promise.all(
        mine.items.map((ns) =>
          core.deleteNamespace({ name: ns.metadata?.name ?? '' }).catch(() => undefined),
        ),
      );
      await api.close();
      await db.drop();
      await core.deleteNamespace({ name: installNamespace }).catch(() => undefined);
    },
  };
}

/** A slug no other test file (sharing the cluster) can pick. */
export function uniqueSlug(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

export function tenantConfig(slug: string, extra: Partial<TenantConfig> = {}): TenantConfig {
  return {
    slug,
    display_name: `Customer ${slug}`,
    branding: { app_name: 'Acme SOC', primary_color: '#112233', secondary_color: '#abcdef' },
    llm: {
      provider: 'openai',
      base_url: 'https://llm.example.test/v1',
      model: 'gpt-x',
      api_key: `sk-${randomBytes(12).toString('hex')}`,
    },
    ...extra,
  };
}

export async function createTenantVia(o: Orchestration, config: TenantConfig): Promise<string> {
  const res = await o.admin.mssp.createTenant({ body: config });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  if (res.status !== 201) throw new Error('unreachable');
  return res.body.tenant.id;
}

export interface TenantSnapshot {
  state: string;
  error_details: Record<string, unknown> | null;
  chart_version: string | null;
  deleted_at: Date | null;
  edge_port_pair: number | null;
}

export async function tenantRow(o: Orchestration, id: string): Promise<TenantSnapshot | undefined> {
  const { rows } = await o.db.pools.mssp.query<TenantSnapshot>(
    'SELECT state, error_details, chart_version, deleted_at, edge_port_pair FROM tenants WHERE id = $1',
    [id],
  );
  return rows[0];
}

export async function waitForState(
  o: Orchestration,
  id: string,
  state: string,
  timeoutMs = 240_000,
): Promise<TenantSnapshot> {
  const deadline = Date.now() + timeoutMs;
  let row: TenantSnapshot | undefined;
  while (Date.now() < deadline) {
    row = await tenantRow(o, id);
    if (row?.state === state) return row;
    // A failed attempt parks the tenant in pending with its error: no point waiting further.
    if (row?.state === 'pending' && row.error_details && state !== 'pending') {
      throw new Error(`provisioning failed: ${JSON.stringify(row.error_details)}`);
    }
    await sleep(250);
  }
  throw new Error(`tenant ${id} not ${state} within ${timeoutMs} ms; last: ${JSON.stringify(row)}`);
}

/** Steps and transitions, oldest first, as `step:<name>` and `<from>-><to>`. */
export async function lifecycle(o: Orchestration, id: string): Promise<string[]> {
  const { rows } = await o.db.pools.mssp.query<{
    kind: string;
    step: string | null;
    from_state: string | null;
    to_state: string | null;
  }>(
    `SELECT kind, step, from_state, to_state FROM tenant_lifecycle_events
      WHERE tenant_id = $1 ORDER BY id`,
    [id],
  );
  return rows.map((r) =>
    r.kind === 'transition'
      ? `${r.from_state}->${r.to_state}`
      : r.kind === 'step'
        ? `step:${r.step}`
        : `${r.kind}${r.step ? `:${r.step}` : ''}`,
  );
}

/**
 * One heartbeat sent by the test itself with the JWT svc wrote into the tenant namespace, for
 * tests that need the endpoint's answer at a moment they choose (a race, a state the real
 * adapter would pass through unseen). To activate a tenant, run its adapter: activeTenant or
 * `o.runAdapter`.
 */
export async function adapterHeartbeat(o: Orchestration, slug: string) {
  const secret = await o.core.readNamespacedSecret({
    name: 'svc-adapter-token',
    namespace: `tenant-${slug}`,
  });
  const token = Buffer.from(secret.data?.token ?? '', 'base64').toString('utf8');
  const res = await fetch(`${o.api.url}/api/internal/adapter/health`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ version: '0.1.0' }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/**
 * A tenant taken all the way to `active`: created, provisioned, and heard from by its adapter,
 * the real `svc adapter` process run for its Pod (`o.runAdapter`). The adapter keeps running
 * until its Pod is deleted or the orchestration closes, as it would in the cluster.
 */
export async function activeTenant(
  o: Orchestration,
  prefix: string,
): Promise<{ id: string; slug: string; adapter: AdapterPod }> {
  const slug = uniqueSlug(prefix);
  const id = await createTenantVia(o, tenantConfig(slug));
  await waitForState(o, id, 'provisioning');
  const adapter = await o.runAdapter(slug);
  await waitForState(o, id, 'active');
  return { id, slug, adapter };
}

/**
 * A copy of the bundled tenant chart under `dir` with another version; with
 * `unschedulableAdapter` its adapter asks for a node that does not exist, so its rollout never
 * completes (the real API server and scheduler decide that, nothing is faked).
 */
export async function tenantChartCopy(
  dir: string,
  version: string,
  options: { unschedulableAdapter?: boolean } = {},
): Promise<string> {
  const target = path.join(dir, `svc-tenant-${version}`);
  await cp(path.join(BUNDLED_CHARTS_DIR, 'svc-tenant'), target, { recursive: true });
  const chartFile = path.join(target, 'Chart.yaml');
  const chart = await readFile(chartFile, 'utf8');
  await writeFile(chartFile, chart.replace(/^version: .*$/m, `version: ${version}`));
  if (options.unschedulableAdapter) {
    const adapterFile = path.join(target, 'templates', 'adapter.yaml');
    const adapter = await readFile(adapterFile, 'utf8');
    const broken = adapter.replace(
      '      enableServiceLinks: false\n',
      '      enableServiceLinks: false\n      nodeSelector:\n        svc-test/nowhere: "true"\n',
    );
    assert.notEqual(broken, adapter, 'the adapter template changed: update this breakage');
    await writeFile(adapterFile, broken);
  }
  return target;
}

/** The lifecycle of a tenant provisioned without trouble, up to readiness (spec §9.4). */
export const PROVISIONED_LIFECYCLE = [
  'config_revision',
  'step:install_secrets_written',
  'step:namespace_created',
  'step:bootstrap_secrets_written',
  'step:edge_ports_allocated',
  'step:package_installed',
  'pending->provisioning',
  'step:package_ready',
] as const;

/** Waits until the lifecycle holds `step` and returns it; fails at once on a failed attempt. */
export async function waitForStep(
  o: Orchestration,
  id: string,
  step: string,
  timeoutMs = 240_000,
): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const steps = await lifecycle(o, id);
    if (steps.includes(step)) return steps;
    const row = await tenantRow(o, id);
    if (row?.error_details)
      throw new Error(`provisioning failed: ${JSON.stringify(row.error_details)}`);
    if (Date.now() > deadline)
      throw new Error(`no ${step} within ${timeoutMs} ms: ${steps.join(', ')}`);
    await sleep(250);
  }
}

/**
 * The environment of a real `svc` OS process (serve, orchestrator) on this orchestration's
 * database, install namespace and cluster; `extra` adds or overrides variables.
 */
export function svcProcessEnv(
  o: Orchestration,
  dataDir: string,
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    SVC_DATA_DIR: dataDir,
    SVC_LOG_LEVEL: 'warn',
    ...externalDatabaseEnv(o.db.target),
    KUBECONFIG: o.cluster.kubeconfigPath,
    SVC_INSTALL_NAMESPACE: o.installNamespace,
    SVC_MSSP_ID: o.deps.install.msspId,
    SVC_INSTALL_ID: o.deps.install.installId,
    SVC_MSSP_NAME: 'Test MSSP',
    SVC_INSTALL_LABEL: 'test',
    ...extra,
  };
}
