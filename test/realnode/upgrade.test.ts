// Issue 32, "Upgrade a live install": the system chart and image of an older svc commit
// (fixtures/old-release.ts: svc 0.1.0, schema level 31) installed on a real node with two API
// replicas, populated through svc's API (two tenants, alerts turned incidents, an assignment and
// a note, a signed-in MSSP session), then upgraded to the working tree's release THROUGH THE
// REGISTRY: publish.sh pushes the image and charts to the test registry, `helm upgrade` takes
// oci://…/svc-system@<chart digest>, and the node runs the image the chart pins by digest (the
// node cannot reach the host's loopback registry, so the archive is imported under the pinned
// name; pullPolicy Never proves nothing is pulled). The API is polled all along. Then a
// downgrade to the old chart and image: the old Pods refuse the newer database and never become
// Ready while the new ones serve; `helm rollback` restores the good revision. The tenants run on
// kwok; the test speaks for their adapters (heartbeats and alert batches with the adapter token
// svc wrote into each tenant namespace). Last, one API Pod of the new release is deleted while
// polling: its preStop pause means not one request fails. docs/packaging.md "Upgrade". About
// 3.6 min for the file (4.2 with the global setup) once the builds are cached.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { loopbackFetch } from '../../scripts/demo/loopback-fetch.ts';
import { type ClusterDns, startClusterDns } from '../../testcluster/node/dns.ts';
import { type RealNode, startRealNode } from '../../testcluster/node/real-node.ts';
import { type Registry, startRegistry } from '../../testcluster/registry/registry.ts';
import { wazuhAlert } from '../../testcluster/stand-ins/wazuh-alerts.ts';
import { helmWithValues, mergeValues, type Values } from '../../testcluster/system-chart.ts';
import { builtBinary, builtImage } from '../packaging/artifacts.ts';
import { exec, ROOT } from '../packaging/exec.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';
import { builtOldRelease, type OldRelease } from './fixtures/old-release.ts';
import { installSystemOnRealNode, ready, type SystemInstall } from './fixtures/system-install.ts';

const run = promisify(execFile);
const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const helm = path.join(cluster.binDir, 'helm');
const OWNER = 'acme-mssp';
const started = performance.now();
const newVersion = (
  JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
/** The migration the new release adds (svc's `releases` history, downgrade refusal). */
const NEW_MIGRATION = '0032_release_history.sql';
const svcComponents = ['api', 'orchestrator', 'worker'];
const times: Record<string, number> = {};
const mark = (what: string, since = started) => {
  times[what] = Math.round(performance.now() - since);
};

let work: string;
let registry: Registry;
let old: OldRelease;
let node: RealNode;
let dns: ClusterDns | undefined;
let install: SystemInstall;
let admin: SvcClient;
let adminEmail: string;
let adminId: string;
/** The admin's svc_session cookie (`name=value`), as the browser holds it. */
let sessionCookie = '';
/** What publish.sh pushed: the chart by digest and the image it pins. */
let published: { chart: string; imageDigest: string; pinned: string };
let anonymousHelm: string[];
const tenants: { id: string; slug: string; token: string }[] = [];
let beforeUpgrade: Snapshot;
let afterUpgrade: Snapshot;
const revisionsBefore: Record<string, number> = {};
let upgradePoll: ReturnType<typeof summarize>;
let downgradePoll: ReturnType<typeof summarize>;

before(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'svc-upgrade-test-'));
  // The three builds are cached per machine; cold, the old release is the long one.
  const [oldRelease, image, binary, startedRegistry] = await Promise.all([
    builtOldRelease(undefined, helm),
    builtImage(),
    builtBinary(),
    startRegistry({ dir: work }),
  ]);
  old = oldRelease;
  registry = startedRegistry;
  assert.notEqual(old.version, newVersion, 'the old commit is another svc version');
  mark('builds');
  console.log(
    `old release ${old.commit.slice(0, 12)} (svc ${old.version}): built in ${old.builtMs} ms`,
  );

  node = await startRealNode(cluster, { timeoutMs: 180_000 });
  dns = await startClusterDns({ kubeconfigPath: cluster.kubeconfigPath, node });
  install = await installSystemOnRealNode({
    cluster,
    node,
    release: { chartDir: old.chartDir, imageArchive: old.image, version: old.version },
    // Two API replicas: a rolling update keeps one serving while the other is replaced.
    values: { api: { replicas: 2 } },
  });
  mark('old install Ready');

  // The working tree's release, published as release.yml publishes it.
  const release = path.join(work, 'release');
  await mkdir(release);
  await symlink(binary, path.join(release, 'svc-linux-x64'));
  await symlink(image, path.join(release, 'svc-image.oci.tar'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_HELM_BIN: helm,
    PATH: `${path.join(ROOT, 'node_modules/.bin')}${path.delimiter}${process.env.PATH ?? ''}`,
    HOME: work,
    REGISTRY_USER: registry.user,
    REGISTRY_PASSWORD: registry.password,
  };
  delete env.COSIGN_KEY;
  const publish = await exec(
    'bash',
    [
      'scripts/release/publish.sh',
      '--registry',
      registry.host,
      '--owner',
      OWNER,
      '--dir',
      release,
      '--ca-file',
      registry.caFile,
      '--no-github-release',
    ],
    env,
  );
  assert.equal(publish.code, 0, `${publish.stdout}\n${publish.stderr}`);
  const imageDigest = (await readFile(path.join(release, 'svc-image.digest'), 'utf8')).trim();
  const chartRef = `${registry.host}/${OWNER}/charts/svc-system`;
  const raw = await exec('skopeo', [
    'inspect',
    '--cert-dir',
    registry.certDir,
    '--no-creds',
    '--raw',
    `docker://${chartRef}:${newVersion}`,
  ]);
  assert.equal(raw.code, 0, raw.stderr);
  const chartDigest = `sha256:${createHash('sha256').update(raw.stdout).digest('hex')}`;
  published = {
    chart: `oci://${chartRef}@${chartDigest}`,
    imageDigest,
    pinned: `${registry.host}/${OWNER}/svc:${newVersion}@${imageDigest}`,
  };
  anonymousHelm = [
    '--ca-file',
    registry.caFile,
    '--registry-config',
    path.join(work, 'helm-anonymous.json'),
  ];
  mark('published');
  admin = await signInAsAdmin();
});

after(async () => {
  for (const stop of polls) await stop();
  for (const t of tenants) {
    await core.deleteNamespace({ name: `tenant-${t.slug}` }).catch(() => undefined);
  }
  await install?.uninstall();
  await dns?.stop();
  await node?.stop();
  await registry?.stop();
  if (work) await rm(work, { recursive: true, force: true });
  console.log(
    `upgrade test file took ${Math.round(performance.now() - started)} ms: ${JSON.stringify(times)}`,
  );
});

/** A command in a container of one of the install's Pods on the node (ctr, as kubectl exec). */
let execs = 0;
async function execIn(pod: V1Pod, command: string[]): Promise<string> {
  const containerId = (pod.status?.containerStatuses?.[0]?.containerID ?? '').replace(
    'containerd://',
    '',
  );
  assert.ok(containerId, `a running container in ${pod.metadata?.name}`);
  const { stdout } = await run(
    'ctr',
    [
      '--address',
      node.containerdSocket,
      '--namespace',
      'k8s.io',
      'tasks',
      'exec',
      '--exec-id',
      `upgrade${process.pid}-${++execs}`,
      containerId,
      ...command,
    ],
    { maxBuffer: 16 * 2 ** 20 },
  );
  return stdout;
}

async function podsOf(component: string): Promise<V1Pod[]> {
  const pods = await core.listNamespacedPod({
    namespace: install.namespace,
    labelSelector: `app.kubernetes.io/component=${component}`,
  });
  return pods.items;
}

/**
 * The database Pod settled: one Pod, Ready, not being deleted, answering psql. A chart change
 * of its Pod template (the 0.1.0 chart's version label) restarts it after the API rollout a
 * test waits for, and a snapshot must not straddle that restart.
 */
async function databaseSettled(): Promise<string> {
  return waitUntil(
    'the database Pod Ready and answering',
    async () => {
      const pods = await podsOf('database');
      const [pod] = pods;
      if (pods.length !== 1 || !pod || !ready(pod) || pod.metadata?.deletionTimestamp) return;
      const answer = await sql('SELECT 1').catch(() => '');
      return answer === '1' ? (pod.metadata?.uid ?? '') : undefined;
    },
    300_000,
  );
}

/** psql as the database superuser inside the database Pod: one row of tab-separated text. */
async function sql(query: string): Promise<string> {
  const [pod] = await podsOf('database');
  assert.ok(pod, 'the database Pod');
  return (await execIn(pod, ['psql', '-U', 'postgres', '-d', 'svc', '-AtqX', '-c', query])).trim();
}

/** The first platform admin, made as an operator does (`svc auth create-admin` in an API Pod). */
async function signInAsAdmin(): Promise<SvcClient> {
  const pod = (await podsOf('api')).find(ready);
  assert.ok(pod, 'a Ready API Pod');
  adminEmail = 'admin@example.com';
  const stdout = await execIn(pod, [
    'svc',
    'auth',
    'create-admin',
    '--email',
    adminEmail,
    '--generate',
  ]);
  assert.match(stdout, /shown once/);
  const initial = stdout.trim().split('\n').at(-1) ?? '';
  // The client keeps the cookie itself; this copy is the browser's, replayed after the upgrade.
  const keepingCookie: typeof fetch = async (input, init) => {
    const res = await loopbackFetch(input, init);
    for (const set of res.headers.getSetCookie()) {
      const pair = set.split(';')[0] ?? '';
      if (pair.includes('svc_session=')) sessionCookie = pair.endsWith('=') ? '' : pair;
    }
    return res;
  };
  const client = createSvcClient({
    baseUrl: install.apiUrl,
    headers: { origin: 'https://mssp.example.com' },
    fetch: keepingCookie,
  });
  const login = await client.auth.login({ body: { email: adminEmail, password: initial } });
  assert.equal(login.status, 200, JSON.stringify(login.body));
  if (login.status === 200 && login.body.must_change) {
    const changed = await client.auth.changePassword({
      body: { current_password: initial, new_password: adminPassword },
    });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
  }
  const me = await client.auth.me();
  assert.equal(me.status, 200);
  if (me.status === 200) adminId = me.body.identity.user_id;
  assert.ok(sessionCookie, 'the session cookie');
  return client;
}
const adminPassword = `up-${randomBytes(12).toString('hex')}`;

/** GET /api/auth/me with a cookie, as the browser sends it. */
async function me(cookie: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${install.apiUrl}/api/auth/me`, { headers: { cookie } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** What must survive: row counts and the audit log's checksum over a fixed set of rows. */
interface Snapshot {
  counts: Record<string, number>;
  auditIds: string[];
  auditMd5: string;
}
const COUNTED = [
  'tenants',
  'users',
  'password_credentials',
  'sessions',
  'events',
  'investigations',
  'alert_groups',
  'audit_log',
  'tenant_lifecycle_events',
  'adapter_heartbeats',
  'ingest_checkpoints',
  'tenant_secrets',
  'schema_migrations',
];
async function snapshot(auditIds?: string[]): Promise<Snapshot> {
  const counts = JSON.parse(
    await sql(
      `SELECT json_build_object(${COUNTED.map((t) => `'${t}', (SELECT count(*) FROM ${t})`).join(', ')})`,
    ),
  ) as Record<string, number>;
  // Row text of every column, ordered by id; `auditIds` pins the rows to the earlier snapshot's.
  const where = auditIds ? `WHERE a.id = ANY('{${auditIds.join(',')}}'::uuid[])` : '';
  const [md5 = '', ids = ''] = (
    await sql(
      `SELECT md5(string_agg(a::text, E'\\n' ORDER BY a.id)), string_agg(a.id::text, ',' ORDER BY a.id) FROM audit_log a ${where}`,
    )
  ).split('|');
  return { counts, auditIds: ids ? ids.split(',') : [], auditMd5: md5 };
}

async function tenantRevision(slug: string): Promise<number> {
  const { stdout } = await run(helm, [
    'list',
    '--namespace',
    `tenant-${slug}`,
    '--kubeconfig',
    cluster.kubeconfigPath,
    '-o',
    'json',
  ]);
  const releases = JSON.parse(stdout) as { name: string; revision: string; chart: string }[];
  assert.equal(releases.length, 1, stdout);
  return Number(releases[0]?.revision);
}

/** `helm history` of the install, oldest first. */
async function helmHistory(): Promise<{ revision: number; status: string; chart: string }[]> {
  const { stdout } = await run(helm, [
    'history',
    install.release,
    '--namespace',
    install.namespace,
    '--kubeconfig',
    cluster.kubeconfigPath,
    '-o',
    'json',
  ]);
  return JSON.parse(stdout) as { revision: number; status: string; chart: string }[];
}

/** One sample of the poll: when, what the API said, whether the database Pod was Ready. */
interface Sample {
  at: number;
  status: number | string;
  databaseReady: boolean;
  databaseUid: string;
  /** An API Pod of svc 0.1.0 was being deleted (it stops accepting at SIGTERM). */
  oldApiStopping: boolean;
}

/**
 * Samples GET /api/auth/me (session and database) until stopped: what a user saw meanwhile,
 * beside the database Pod's readiness at that moment. A new connection per request (no
 * keep-alive), so each one goes through the Service afresh.
 */
function pollApi(cookie: string) {
  let stopped = false;
  const samples: Sample[] = [];
  const url = new URL(`${install.apiUrl}/api/auth/me`);
  const once = () =>
    new Promise<number | string>((resolve) => {
      const req = http.get(url, { agent: false, headers: { cookie }, timeout: 5_000 }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
      });
      req.on('timeout', () =>
        req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })),
      );
      req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
  const database = () =>
    core
      .readNamespacedPod({ name: 'svc-postgres-0', namespace: install.namespace })
      // A Pod being deleted keeps its Ready condition until the kubelet reports; it is down.
      .then((pod) => ({
        ready: ready(pod) && !pod.metadata?.deletionTimestamp,
        uid: pod.metadata?.uid ?? '',
      }))
      .catch(() => ({ ready: false, uid: '' }));
  const oldApiStopping = () =>
    podsOf('api')
      .then((pods) =>
        pods.some(
          (p) => imageOf(p) === `localhost/svc:${old.version}` && p.metadata?.deletionTimestamp,
        ),
      )
      .catch(() => false);
  const loop = (async () => {
    while (!stopped) {
      const at = Math.round(performance.now() - started);
      const [status, db, stopping] = await Promise.all([once(), database(), oldApiStopping()]);
      samples.push({
        at,
        status,
        databaseReady: db.ready,
        databaseUid: db.uid,
        oldApiStopping: stopping,
      });
      await sleep(200);
    }
  })();
  const stop = async () => {
    stopped = true;
    polls.delete(stop);
    await loop;
    return summarize(samples);
  };
  polls.add(stop);
  return { stop };
}
/** Polls still running: a test that failed before stopping its own leaves it to `after`. */
const polls = new Set<() => Promise<unknown>>();

/**
 * The failed samples, split into those explained and the rest. Explained: (1) the database Pod
 * not Ready, or Ready again less than DATABASE_GRACE_MS before (svc's API Pods turn Ready again
 * on their next probe, every 10 s); (2) a connection refused, reset or unanswered while an API Pod of svc
 * 0.1.0 was being deleted, or less than OLD_API_GRACE_MS after: 0.1.0's API Pods have no
 * preStop pause, so svc stops accepting at SIGTERM while kube-proxy still sends them
 * connections for a moment — more than 5 s on a loaded node (a CI run measured it), which is
 * also why 0.2.0's pause is 15 s.
 */
const DATABASE_GRACE_MS = 15_000;
const OLD_API_GRACE_MS = 15_000;
/**
 * How a connection kube-proxy still sends to a stopping 0.1.0 API Pod fails: refused or reset
 * while svc closes, or no answer at all (TIMEOUT, the poll's 5 s) once the Pod's network is
 * torn down before its endpoint is (a clean-clone CI run saw one, with the Pod terminating).
 */
const OLD_API_STOP_FAILURES: readonly string[] = ['ECONNRESET', 'ECONNREFUSED', 'TIMEOUT'];
function summarize(samples: Sample[]) {
  const failures = samples.filter((s) => s.status !== 200);
  const explained: Sample[] = [];
  const unexplained: Sample[] = [];
  const within = (f: Sample, down: (s: Sample) => boolean, graceMs: number) => {
    const last = samples.filter((s) => down(s) && s.at <= f.at).at(-1);
    return last !== undefined && f.at - last.at <= graceMs;
  };
  for (const f of failures) {
    const database = within(f, (s) => !s.databaseReady, DATABASE_GRACE_MS);
    const oldApi =
      typeof f.status === 'string' &&
      OLD_API_STOP_FAILURES.includes(f.status) &&
      within(f, (s) => s.oldApiStopping, OLD_API_GRACE_MS);
    (database || oldApi ? explained : unexplained).push(f);
  }
  const uids = new Set(samples.map((s) => s.databaseUid).filter(Boolean));
  const downMs = samples.filter((s) => !s.databaseReady).map((s) => s.at);
  return {
    requests: samples.length,
    failures: failures.length,
    explained,
    unexplained,
    databaseRestarted: uids.size > 1,
    databaseDown: downMs.length ? [Math.min(...downMs), Math.max(...downMs)] : null,
    firstFailure: failures[0]?.at,
    lastFailure: failures.at(-1)?.at,
  };
}

const imageOf = (pod: V1Pod) => pod.spec?.containers[0]?.image ?? '';
const component = (pod: V1Pod) => pod.metadata?.labels?.['app.kubernetes.io/component'] ?? '';

/** svc's API, orchestrator and worker Pods, terminating ones included. */
async function svcPods(): Promise<V1Pod[]> {
  const pods = (await core.listNamespacedPod({ namespace: install.namespace })).items;
  return pods.filter((p) => svcComponents.includes(component(p)));
}

/** Every svc Pod runs `image` and is Ready, two API replicas, nothing else left. */
async function rolledOutTo(image: string): Promise<V1Pod[]> {
  return waitUntil(
    `every svc Pod Ready on ${image}`,
    async () => {
      const pods = await svcPods();
      const settled =
        pods.every((p) => imageOf(p) === image && ready(p) && !p.metadata?.deletionTimestamp) &&
        pods.filter((p) => component(p) === 'api').length === 2 &&
        svcComponents.every((c) => pods.some((p) => component(p) === c));
      return settled ? pods : undefined;
    },
    300_000,
  ).catch(async (error) => {
    throw new Error(`${(error as Error).message}\n${await install.diagnostics()}`);
  });
}

/** A Pod's container log on the node (the kubelet's files), every restart's, message text. */
async function podLog(pod: V1Pod): Promise<string> {
  const root = path.join(node.dir, 'pod-logs');
  const prefix = `${install.namespace}_${pod.metadata?.name}_${pod.metadata?.uid}`;
  const files = (await readdir(root, { recursive: true }).catch(() => [] as string[]))
    .filter((f) => f.startsWith(prefix) && f.endsWith('.log'))
    .sort();
  let text = '';
  for (const file of files) {
    // CRI log lines: "<time> <stream> <F|P> <text>".
    for (const line of (await readFile(path.join(root, file), 'utf8')).split('\n')) {
      if (line) text += `${line.split(' ').slice(3).join(' ')}\n`;
    }
  }
  return text;
}

/** The `applied` lists of the "migrated" lines a Pod logged. */
async function migratedLines(pod: V1Pod): Promise<string[][]> {
  const lines: string[][] = [];
  for (const line of (await podLog(pod)).split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; applied?: string[] };
      if (entry.msg === 'migrated') lines.push(entry.applied ?? []);
    } catch {
      // not a log record
    }
  }
  return lines;
}

test('issue 32: the old release (svc 0.1.0) is installed from its chart and populated through its API: two tenants active, alerts turned incidents, an assignment and a note, a signed-in MSSP session', async () => {
  const populating = performance.now();
  assert.ok(
    (await svcPods()).every((p) => imageOf(p) === `localhost/svc:${old.version}`),
    'every svc Pod runs the old image',
  );
  for (const i of [0, 1]) {
    const slug = `up${randomBytes(3).toString('hex')}${i}`;
    const created = await admin.mssp.createTenant({
      body: {
        slug,
        display_name: `Upgrade ${slug}`,
        branding: { app_name: 'Upgrade SOC', primary_color: '#112233', secondary_color: '#abcdef' },
        llm: {
          provider: 'openai',
          base_url: 'https://llm.example.test/v1',
          model: 'gpt-x',
          api_key: `sk-${randomBytes(12).toString('hex')}`,
        },
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    if (created.status !== 201) return;
    tenants.push({ id: created.body.tenant.id, slug, token: '' });
  }
  for (const t of tenants) {
    // The package on kwok turns Ready; then the adapter's first heartbeat activates the tenant.
    await waitUntil(
      `tenant ${t.slug} provisioned (package_ready)`,
      async () => {
        const res = await admin.mssp.getTenant({ params: { tenant_id: t.id } });
        if (res.status !== 200) return undefined;
        if (res.body.tenant.error_details) {
          throw new Error(`provisioning failed: ${JSON.stringify(res.body.tenant.error_details)}`);
        }
        return res.body.lifecycle.some((e) => e.step === 'package_ready') ? true : undefined;
      },
      240_000,
    );
    const secret = await core.readNamespacedSecret({
      name: 'svc-adapter-token',
      namespace: `tenant-${t.slug}`,
    });
    t.token = Buffer.from(secret.data?.token ?? '', 'base64').toString('utf8');
    const beat = await adapterCall(t.token, 'health', { version: old.version });
    assert.equal(beat.status, 200, JSON.stringify(beat.body));
    assert.equal(beat.body.tenant_state, 'active');
    const alerts = [0, 1, 2].map((n) =>
      wazuhAlert(n, {
        start: new Date(),
        stepMs: 1,
        manager: `monitor-${t.slug}`,
        kind: 0,
        agent: 0,
      }),
    );
    const batch = await adapterCall(t.token, 'alerts', {
      alerts,
      checkpoint: { search_after: [Date.now(), 'upgrade'], index: 'wazuh-alerts-4.x-upgrade' },
    });
    assert.equal(batch.status, 200, JSON.stringify(batch.body));
    assert.equal(batch.body.accepted, 3);
  }
  for (const t of tenants) {
    const incident = await waitUntil(
      `an incident of ${t.slug} from its alerts`,
      async () => {
        const res = await admin.mssp.tenantIncidents({ params: { tenant_id: t.id }, query: {} });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return res.status === 200 ? res.body.items[0] : undefined;
      },
      180_000,
    );
    const detail = await admin.mssp.incident({ params: { tenant_id: t.id, id: incident.id } });
    assert.equal(detail.status, 200, JSON.stringify(detail.body));
    if (detail.status !== 200) return;
    const assigned = await admin.mssp.assignIncident({
      params: { tenant_id: t.id, id: incident.id },
      body: { assignee_id: adminId, version: detail.body.incident.version },
    });
    assert.equal(assigned.status, 200, JSON.stringify(assigned.body));
    if (assigned.status !== 200) return;
    const noted = await admin.mssp.addIncidentNote({
      params: { tenant_id: t.id, id: incident.id },
      body: {
        body: `Checked before the upgrade (${t.slug}).`,
        visibility: 'internal',
        version: assigned.body.incident.version,
      },
    });
    assert.equal(noted.status, 200, JSON.stringify(noted.body));
    revisionsBefore[t.slug] = await tenantRevision(t.slug);
  }
  mark('populated', populating);

  beforeUpgrade = await snapshot();
  const c = beforeUpgrade.counts;
  assert.equal(c.tenants, 2);
  assert.equal(c.schema_migrations, 31, 'the old release is at schema level 31');
  assert.ok(
    (c.investigations ?? 0) >= 2 && (c.events ?? 0) >= 6 && (c.sessions ?? 0) >= 1,
    JSON.stringify(c),
  );
  assert.ok(beforeUpgrade.auditIds.length > 0);
  assert.equal(await sql('SELECT count(*) FROM releases'), '0', 'svc 0.1.0 records no release');
  console.log(`before the upgrade: ${JSON.stringify(c)}`);
});

async function adapterCall(
  token: string,
  route: 'health' | 'alerts',
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${install.apiUrl}/api/internal/adapter/${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

test('issue 32: helm upgrade to the published release by chart digest while the old Pods serve: the API keeps answering, 0032 is applied once by one new Pod, the Pods run the published image digest', async () => {
  assert.ok(beforeUpgrade, 'the populated old install of the previous test');
  // The node cannot reach the host's loopback registry: the archive goes in under the name the
  // chart pins (repository@digest is what containerd's CRI looks the reference up by).
  const upgrading = performance.now();
  const repository = `${registry.host}/${OWNER}/svc`;
  const names = await node.importImage(await builtImage(), repository);
  assert.ok(names.includes(`${repository}:${newVersion}`), names.join(', '));
  await run('ctr', [
    '--address',
    node.containerdSocket,
    '--namespace',
    'k8s.io',
    'images',
    'tag',
    '--force',
    `${repository}:${newVersion}`,
    `${repository}@${published.imageDigest}`,
  ]);

  const poll = pollApi(sessionCookie);
  // The install's values without image.*: the published chart pins the image. Never: the node
  // must already hold the pinned digest (nothing to pull from here).
  // tenants.packages: the published chart names svc-tenant in the registry by digest, to be
  // pulled at start; the registry listens on the host's loopback, which a Pod cannot reach, so
  // the Pods use the svc-tenant bundled in the image (the same chart, 0.1.0) instead.
  const values: Values = mergeValues(mergeValues(install.values, { image: null }), {
    image: { pullPolicy: 'Never' },
    tenants: { packages: [] },
  });
  await helmWithValues(
    helm,
    [
      'upgrade',
      install.release,
      published.chart,
      '--namespace',
      install.namespace,
      '--kubeconfig',
      cluster.kubeconfigPath,
      ...anonymousHelm,
    ],
    values,
  );
  let pods: V1Pod[];
  try {
    pods = await rolledOutTo(published.pinned);
  } finally {
    const polled = await poll.stop();
    console.log(`upgrade: the API polled during the rollout: ${JSON.stringify(polled)}`);
    upgradePoll = polled;
  }
  mark('upgrade rolled out', upgrading);
  // The 0.1.0 chart labels the database Pod with the chart version, so this upgrade replaces
  // svc-postgres-0 once: a failure is accepted only while it restarts. Every other moment the
  // API answered 200, old and new Pods alike.
  assert.deepEqual(
    upgradePoll.unexplained,
    [],
    'the API answered but while the database restarted',
  );
  assert.ok(upgradePoll.requests > 10, `${upgradePoll.requests} requests`);
  for (const pod of pods) {
    const imageId = pod.status?.containerStatuses?.[0]?.imageID ?? '';
    assert.ok(imageId.endsWith(`@${published.imageDigest}`), `${pod.metadata?.name}: ${imageId}`);
  }
  // Applied once, by exactly one of the new Pods (the migration lock queues the others).
  assert.equal(await sql('SELECT count(*) FROM schema_migrations WHERE version = 32'), '1');
  assert.equal(await sql('SELECT max(version) FROM schema_migrations'), '32');
  assert.equal(
    await sql(
      `SELECT string_agg(kind || ' ' || version || ' ' || schema_version, ',') FROM releases`,
    ),
    `system ${newVersion} 32`,
  );
  const applied: string[] = [];
  for (const pod of pods) {
    const lines = await migratedLines(pod);
    assert.ok(lines.length > 0, `${pod.metadata?.name} logged its migrate`);
    for (const list of lines)
      if (list.includes(NEW_MIGRATION)) applied.push(pod.metadata?.name ?? '');
  }
  assert.equal(applied.length, 1, `0032 applied by ${applied.join(', ') || 'no Pod'}`);

  const history = await helmHistory();
  assert.deepEqual(history.at(-1), {
    ...history.at(-1),
    revision: 2,
    status: 'deployed',
    chart: `svc-system-${newVersion}`,
  });
});

test('issue 32: after the upgrade nothing is lost: tenants active and heard from, counts kept, the old audit rows unchanged, the old session still signed in, no tenant release touched', async () => {
  assert.ok(beforeUpgrade, 'the populated old install');
  for (const t of tenants) {
    const res = await admin.mssp.getTenant({ params: { tenant_id: t.id } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    if (res.status !== 200) return;
    assert.equal(res.body.tenant.state, 'active');
    assert.ok(res.body.adapter, 'the adapter heard from before the upgrade');
    // The adapter's token (signed with the key the chart keeps across upgrades) still works.
    const beat = await adapterCall(t.token, 'health', { version: newVersion });
    assert.equal(beat.status, 200, JSON.stringify(beat.body));
    assert.equal(beat.body.tenant_state, 'active');
    const incidents = await admin.mssp.tenantIncidents({ params: { tenant_id: t.id }, query: {} });
    assert.equal(incidents.status, 200);
    if (incidents.status === 200) assert.ok(incidents.body.items.length >= 1);
    // The matrix keeps tenant 0.1.0 supported on system 0.2.0: no tenant upgrade.
    assert.ok(!res.body.lifecycle.some((e) => e.step?.startsWith('upgrade')), t.slug);
    assert.equal(await tenantRevision(t.slug), revisionsBefore[t.slug], `${t.slug} helm revision`);
  }

  // The browser's cookie from before the upgrade: sessions live in the database, so the new
  // Pods know it (asserted: 200, the same user).
  const session = await me(sessionCookie);
  assert.equal(session.status, 200, JSON.stringify(session.body));
  assert.equal((session.body.identity as { email?: string }).email, adminEmail);
  // And a fresh sign-in works on the new release.
  const login = await fetch(`${install.apiUrl}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: 'https://mssp.example.com' },
    body: JSON.stringify({ email: adminEmail, password: adminPassword }),
  });
  assert.equal(login.status, 200, await login.text());

  afterUpgrade = await snapshot();
  const b = beforeUpgrade.counts;
  const a = afterUpgrade.counts;
  console.log(`after the upgrade: ${JSON.stringify(a)}`);
  for (const table of COUNTED) {
    assert.ok((a[table] ?? 0) >= (b[table] ?? 0), `${table}: ${a[table]} < ${b[table]}`);
  }
  for (const table of [
    'tenants',
    'users',
    'password_credentials',
    'investigations',
    'alert_groups',
  ]) {
    assert.equal(a[table], b[table], `${table} unchanged`);
  }
  assert.equal(a.schema_migrations, 32);
  const old = await snapshot(beforeUpgrade.auditIds);
  assert.equal(old.auditIds.length, beforeUpgrade.auditIds.length, 'every old audit row is there');
  assert.equal(old.auditMd5, beforeUpgrade.auditMd5, 'the old audit rows are unchanged');
});

test('issue 32: a downgrade to the old chart and image is refused by the old Pods (migration error, never Ready) while the new ones serve; helm rollback restores the good revision with the data intact', async () => {
  assert.ok(afterUpgrade, 'the upgraded install of the previous tests');
  const downgrading = performance.now();
  const oldImage = `localhost/svc:${old.version}`;
  const poll = pollApi(sessionCookie);
  await helmWithValues(
    helm,
    [
      'upgrade',
      install.release,
      old.chartDir,
      '--namespace',
      install.namespace,
      '--kubeconfig',
      cluster.kubeconfigPath,
    ],
    install.values,
  );
  // The old API Pod started by the rolling update reads the newer database and exits.
  const refused = await waitUntil(
    'an old API Pod refusing the database',
    async () => {
      for (const pod of (await podsOf('api')).filter((p) => imageOf(p) === oldImage)) {
        const log = await podLog(pod);
        if (/migration 0032_\w+\.sql was applied to this database but is missing from/.test(log)) {
          return { pod, log };
        }
      }
      return undefined;
    },
    180_000,
  ).catch(async (error) => {
    throw new Error(`${(error as Error).message}\n${await install.diagnostics()}`);
  });
  mark('downgrade refused', downgrading);
  // The old chart's database Pod template differs again (its labels), so PostgreSQL restarts
  // meanwhile and the new API Pods are briefly unready: wait for them, the old Pod still out.
  const { current } = await waitUntil(
    'both new API Pods Ready beside the refusing old ones',
    async () => {
      const pods = await svcPods();
      const serving = pods.filter(
        (p) => component(p) === 'api' && imageOf(p) === published.pinned && ready(p),
      );
      return serving.length === 2 ? { current: pods } : undefined;
    },
    180_000,
  );
  const oldPods = current.filter((p) => imageOf(p) === oldImage && !p.metadata?.deletionTimestamp);
  assert.ok(
    oldPods.some((p) => component(p) === 'api'),
    'the old API Pod is still there, refusing',
  );
  for (const pod of oldPods) assert.ok(!ready(pod), `${pod.metadata?.name} not Ready`);
  // The refusing Pod's container exited non-zero (the kubelet restarts it, to refuse again).
  const again = await waitUntil(
    `${refused.pod.metadata?.name} seen exited`,
    async () => {
      const pod = await core.readNamespacedPod({
        name: refused.pod.metadata?.name ?? '',
        namespace: install.namespace,
      });
      const status = pod.status?.containerStatuses?.[0];
      const exited = status?.state?.terminated ?? status?.lastState?.terminated;
      return exited ? { pod, exitCode: exited.exitCode } : undefined;
    },
    60_000,
  );
  assert.notEqual(again.exitCode, 0);
  assert.ok(!ready(again.pod));
  assert.match(refused.log, new RegExp(`${NEW_MIGRATION.replace('.', '\\.')} was applied`));

  await run(helm, [
    'rollback',
    install.release,
    '2',
    '--namespace',
    install.namespace,
    '--kubeconfig',
    cluster.kubeconfigPath,
  ]);
  try {
    await rolledOutTo(published.pinned);
  } finally {
    const polled = await poll.stop();
    console.log(`downgrade and rollback: the API polled meanwhile: ${JSON.stringify(polled)}`);
    downgradePoll = polled;
  }
  mark('rolled back', downgrading);
  assert.deepEqual(downgradePoll.unexplained, [], 'the new API Pods answered throughout');

  const database = await databaseSettled();
  const after = await snapshot();
  for (const table of COUNTED) {
    assert.ok(
      (after.counts[table] ?? 0) >= (afterUpgrade.counts[table] ?? 0),
      `${table}: ${after.counts[table]} < ${afterUpgrade.counts[table]}`,
    );
  }
  assert.equal(after.counts.schema_migrations, 32);
  const kept = await snapshot(afterUpgrade.auditIds);
  if (kept.auditMd5 !== afterUpgrade.auditMd5) {
    // Say what differs: rows gone, rows changed, or another database Pod answered.
    const found = await sql(
      `SELECT count(*) FROM audit_log WHERE id = ANY('{${afterUpgrade.auditIds.join(',')}}'::uuid[])`,
    ).catch((error: unknown) => String(error));
    const pod = (await podsOf('database')).map((p) => `${p.metadata?.name} ${p.metadata?.uid}`);
    assert.fail(
      `the audit rows are unchanged: md5 ${kept.auditMd5} ≠ ${afterUpgrade.auditMd5}; ${found} of ${afterUpgrade.auditIds.length} rows found; database Pod then ${database}, now ${pod.join(', ')}; counts ${JSON.stringify(after.counts)}`,
    );
  }
  assert.equal(
    await sql(
      `SELECT string_agg(kind || ' ' || version || ' ' || schema_version, ',') FROM releases`,
    ),
    `system ${newVersion} 32`,
    'the old code wrote nothing',
  );
  for (const t of tenants) {
    const res = await admin.mssp.getTenant({ params: { tenant_id: t.id } });
    assert.equal(res.status, 200);
    if (res.status === 200) assert.equal(res.body.tenant.state, 'active');
  }
  const history = await helmHistory();
  assert.deepEqual(
    history.map((h) => [h.revision, h.chart]),
    [
      [1, `svc-system-${old.version}`],
      [2, `svc-system-${newVersion}`],
      [3, `svc-system-${old.version}`],
      [4, `svc-system-${newVersion}`],
    ],
  );
  assert.equal(history.at(-1)?.status, 'deployed');
});

test('issue 32: an API Pod of the new release stopping (rollout, drain) refuses no request: it pauses (preStop) until kube-proxy has dropped it', async () => {
  assert.ok(downgradePoll, 'the rolled-back install of the previous test');
  const [victim] = (await podsOf('api')).filter(ready);
  assert.ok(victim?.metadata?.name, 'a Ready API Pod');
  assert.equal(victim.spec?.containers[0]?.lifecycle?.preStop?.sleep?.seconds, 15);
  const stopping = performance.now();
  const poll = pollApi(sessionCookie);
  let polled: ReturnType<typeof summarize>;
  try {
    await core.deleteNamespacedPod({ name: victim.metadata.name, namespace: install.namespace });
    await waitUntil(
      `${victim.metadata.name} gone`,
      async () =>
        (await podsOf('api')).some((p) => p.metadata?.uid === victim.metadata?.uid)
          ? undefined
          : true,
      90_000,
    );
    await rolledOutTo(published.pinned);
  } finally {
    polled = await poll.stop();
    console.log(`an API Pod deleted: the API polled meanwhile: ${JSON.stringify(polled)}`);
  }
  mark('API Pod replaced', stopping);
  assert.equal(polled.databaseRestarted, false);
  assert.equal(polled.failures, 0, 'every request answered 200');
  assert.ok(polled.requests > 10, `${polled.requests} requests`);
});
