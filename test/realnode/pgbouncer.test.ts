// Issue 33: the system chart with pgbouncer.enabled, installed by `helm install` on a real node
// (svc's image, the PostgreSQL test image and the PgBouncer test image built from Debian 12's
// pgbouncer package, testcluster/images/build.sh). PgBouncer's Pods run the chart's start script,
// which writes the auth file from the database Secret; svc's API, orchestrator and worker send
// their transactional pools through it and keep their direct connections. Proven here: SCRAM
// through the pooler with the Secret's passwords (and a wrong one refused), server connections
// from the pooler's Pods to PostgreSQL, an authenticated API request answered while svc's pooled
// connections come from the pooler and its LISTEN stays direct, and the same request failing
// while the pooler is scaled to zero and answered again once it is back. The chart's
// NetworkPolicies are enforced for real (kube-router, testcluster/node/netpol.ts) from before the
// install: the install coming up proves the paths they allow, and connections from Pods' own
// network namespaces prove what they refuse around the pooler. One node, one install.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import {
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import pg from 'pg';
import { createSvcClient } from '../../contracts/index.ts';
import { loopbackFetch } from '../../scripts/demo/loopback-fetch.ts';
import { builtTestImage } from '../../testcluster/images/images.ts';
import { clusterDns } from '../../testcluster/node/configs.ts';
import { type ClusterDns, startClusterDns } from '../../testcluster/node/dns.ts';
import { type PolicyEnforcer, startPolicyEnforcer } from '../../testcluster/node/netpol.ts';
import { type Forward, type RealNode, startRealNode } from '../../testcluster/node/real-node.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';
import {
  connectManyFrom,
  podNetns,
  readyPod,
  standInPod,
  standInPort,
} from './fixtures/policy-probes.ts';
import { installSystemOnRealNode, ready, type SystemInstall } from './fixtures/system-install.ts';

const run = promisify(execFile);
const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const started = performance.now();
const REPLICAS = 2;

let node: RealNode;
let dns: ClusterDns;
let enforcer: PolicyEnforcer;
let install: SystemInstall;
const forwards: Forward[] = [];

before(async () => {
  node = await startRealNode(cluster, { timeoutMs: 180_000 });
  dns = await startClusterDns({ kubeconfigPath: cluster.kubeconfigPath, node });
  enforcer = await startPolicyEnforcer({
    kubeconfigPath: cluster.kubeconfigPath,
    netnsPath: node.netnsPath,
    nodeName: node.name,
    dir: node.dir,
  });
  const pgbouncer = await builtTestImage('pgbouncer');
  await node.importImage(pgbouncer.archive);
  const [repository, tag] = pgbouncer.ref.split(':');
  install = await installSystemOnRealNode({
    cluster,
    node,
    values: {
      pgbouncer: {
        enabled: true,
        replicas: REPLICAS,
        image: { repository, tag },
        // Small, so server connections are really shared by svc's three Pods.
        poolSize: 3,
        resources: { requests: { cpu: '20m', memory: '32Mi' } },
      },
    },
  });
  console.log(
    `real node Ready after ${node.readyAfterMs} ms, CoreDNS after ${dns.readyAfterMs} ms, ` +
      `kube-router synced after ${enforcer.readyAfterMs} ms, svc-system with PgBouncer: every Pod Ready after ${install.readyAfterMs} ms ` +
      JSON.stringify(install.componentsReadyAfterMs),
  );
});

after(async () => {
  for (const f of forwards) await f.close().catch(() => undefined);
  await install?.uninstall();
  await enforcer?.stop();
  await dns?.stop();
  await node?.stop();
  console.log(`pgbouncer test file took ${Math.round(performance.now() - started)} ms`);
});

async function podsOf(component: string): Promise<V1Pod[]> {
  const pods = await core.listNamespacedPod({
    namespace: install.namespace,
    labelSelector: `app.kubernetes.io/component=${component}`,
  });
  return pods.items.filter((p) => !p.metadata?.deletionTimestamp);
}

let execs = 0;
/** Runs a command in a Pod's first container (as its own user); answers stdout. */
async function execIn(pod: V1Pod, command: string[]): Promise<string> {
  const id = (pod.status?.containerStatuses?.[0]?.containerID ?? '').replace('containerd://', '');
  assert.ok(id, `a running container in ${pod.metadata?.name}`);
  const { stdout } = await run(
    'ctr',
    [
      ...['--address', node.containerdSocket, '--namespace', 'k8s.io', 'tasks', 'exec'],
      ...['--exec-id', `pgb${process.pid}-${++execs}`, id, ...command],
    ],
    { maxBuffer: 16 * 2 ** 20 },
  );
  return stdout;
}

/** A query as the superuser over the database Pod's own socket (its psql, trust locally). */
async function databaseRows(query: string): Promise<string[][]> {
  const [database] = await podsOf('database');
  assert.ok(database, 'the database Pod');
  const out = await execIn(database, ['psql', '-U', 'postgres', '-d', 'svc', '-AtqX', '-c', query]);
  return out
    .trim()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split('|'));
}

async function databaseSecret(key: string): Promise<string> {
  const secret = await core.readNamespacedSecret({
    name: 'svc-database',
    namespace: install.namespace,
  });
  return Buffer.from(secret.data?.[key] ?? '', 'base64').toString();
}

async function withDiagnostics<T>(what: string, check: () => Promise<T | undefined>, ms = 180_000) {
  try {
    return await waitUntil(what, check, ms);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${await install.diagnostics()}`);
  }
}

async function scalePooler(replicas: number): Promise<void> {
  await apps.patchNamespacedDeployment(
    { name: 'svc-pgbouncer', namespace: install.namespace, body: { spec: { replicas } } },
    mergePatch,
  );
  await withDiagnostics(`svc-pgbouncer at ${replicas} Ready replicas`, async () => {
    const pods = (
      await core.listNamespacedPod({
        namespace: install.namespace,
        labelSelector: 'app.kubernetes.io/component=pgbouncer',
      })
    ).items;
    const up = pods.filter(ready).length;
    return pods.length === replicas && up === replicas ? true : undefined;
  });
}

test('issue 33 PgBouncer Pods run the chart’s start script as uid 10002 on a read-only root, with an owner-only auth file of the two pooled roles', async () => {
  const pods = await podsOf('pgbouncer');
  assert.equal(pods.length, REPLICAS);
  for (const pod of pods) {
    assert.ok(ready(pod), pod.metadata?.name);
    // One exec per Pod (each costs seconds on a loaded node): PID 1's status, the auth file's
    // mode and owner, its user names, and a write to the root filesystem.
    const out = await execIn(pod, [
      'sh',
      '-c',
      'cat /proc/1/status; echo ---; ls -ln /var/run/pgbouncer; echo ---; ' +
        'while read -r user rest; do echo "$user"; done </var/run/pgbouncer/userlist.txt; ' +
        'echo ---; (echo x >/etc/probe) 2>/dev/null && echo written || echo refused',
    ]);
    const [status, listing, users, write] = out.split('---\n');
    // PID 1 is pgbouncer itself (the script exec'd it), as the pod's user.
    assert.match(status ?? '', /^Name:\s+pgbouncer$/m);
    assert.match(status ?? '', /^Uid:\s+10002\s+10002\s+10002\s+10002$/m);
    assert.match(listing ?? '', /^-rw-------\s+1\s+10002\s+10002\s.*userlist\.txt$/m);
    assert.deepEqual((users ?? '').trim().split('\n'), ['"svc_app"', '"svc_mssp"']);
    assert.equal((write ?? '').trim(), 'refused', 'read-only root filesystem');
  }
});

test('issue 33 SCRAM through the pooler with the Secret’s svc_app password reaches PostgreSQL from the pooler’s Pod; a wrong password is refused', async () => {
  const [pod] = await podsOf('pgbouncer');
  assert.ok(pod?.status?.podIP);
  const forward = await node.forward(pod.status.podIP, 6432);
  forwards.push(forward);
  const connect = (password: string) =>
    new pg.Client({
      host: '127.0.0.1',
      port: forward.port,
      database: 'svc',
      user: 'svc_app',
      password,
      connectionTimeoutMillis: 20_000,
    });
  const client = connect(await databaseSecret('app_password'));
  await client.connect();
  try {
    const row = (
      await client.query<{ user: string; addr: string }>(
        'SELECT current_user AS user, host(inet_client_addr()) AS addr',
      )
    ).rows[0];
    assert.equal(row?.user, 'svc_app');
    // The server connection is the pooler's own: its Pod's address, not the test's forwarder.
    assert.equal(row?.addr, pod.status.podIP);
  } finally {
    await client.end();
  }
  const wrong = connect(`not-${randomBytes(8).toString('hex')}`);
  await assert.rejects(wrong.connect(), /password authentication failed|SASL|SCRAM/i);
  await wrong.end().catch(() => undefined);
});

test('issue 33 an authenticated API request is answered through the pooler: svc’s pooled connections come from PgBouncer’s Pods, its LISTEN stays direct; with the pooler at zero the request fails, and it is answered again once the pooler is back', async (t) => {
  const [apiPod] = await podsOf('api');
  assert.ok(apiPod?.status?.podIP);
  const email = 'admin@example.com';
  const created = await execIn(apiPod, [
    ...['svc', 'auth', 'create-admin', '--email', email, '--generate'],
  ]);
  assert.match(created, /shown once/);
  const initial = created.trim().split('\n').at(-1) ?? '';
  let cookie = '';
  const keepingCookie: typeof fetch = async (input, init) => {
    const res = await loopbackFetch(input, init);
    for (const set of res.headers.getSetCookie()) {
      const pair = set.split(';')[0] ?? '';
      if (pair.startsWith('svc_session=') && !pair.endsWith('=')) cookie = pair;
    }
    return res;
  };
  // Straight to the API Pod, so a refusal below is svc's answer, not a missing endpoint.
  const forward = await node.forward(apiPod.status.podIP, 8080);
  forwards.push(forward);
  const apiUrl = `http://127.0.0.1:${forward.port}`;
  const client = createSvcClient({
    baseUrl: apiUrl,
    headers: { origin: 'https://mssp.example.com' },
    fetch: keepingCookie,
  });
  const login = await client.auth.login({ body: { email, password: initial } });
  assert.equal(login.status, 200, JSON.stringify(login.body));
  if (login.status === 200 && login.body.must_change) {
    const changed = await client.auth.changePassword({
      body: { current_password: initial, new_password: `pg-${randomBytes(12).toString('hex')}` },
    });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
  }
  assert.ok(cookie, 'the session cookie');
  const me = async (timeoutMs = 60_000) => {
    try {
      const res = await fetch(`${apiUrl}/api/auth/me`, {
        headers: { cookie },
        signal: AbortSignal.timeout(timeoutMs),
      });
      return { status: res.status, body: await res.text() };
    } catch (error) {
      return { status: 0, body: `no answer: ${error}` };
    }
  };
  const answered = await me();
  assert.equal(answered.status, 200, answered.body);
  assert.match(answered.body, new RegExp(email));

  // Who PostgreSQL sees: svc_app sessions from the pooler's Pods, and from svc's own Pods only
  // the direct kinds (LISTEN, locks, the job queue), never a pooled pool's connection.
  const poolerIps = new Set((await podsOf('pgbouncer')).map((p) => p.status?.podIP));
  const svcIps = new Set(
    (await Promise.all(['api', 'orchestrator', 'worker'].map(podsOf)))
      .flat()
      .map((p) => p.status?.podIP),
  );
  // The chart's database.maxConnections (200) reached the server (the image's own is 100).
  assert.deepEqual(await databaseRows('SHOW max_connections'), [['200']]);
  const sessions = await databaseRows(
    `SELECT usename, coalesce(host(client_addr), ''), application_name
       FROM pg_stat_activity WHERE datname = 'svc' AND backend_type = 'client backend'`,
  );
  const fromPooler = sessions.filter(([, addr]) => poolerIps.has(addr));
  const fromSvc = sessions.filter(([, addr]) => svcIps.has(addr));
  const table = sessions.map((s) => s.join(' | ')).join('\n');
  assert.ok(
    fromPooler.some(([user]) => user === 'svc_app'),
    `svc_app server connections from the pooler:\n${table}`,
  );
  assert.ok(
    fromSvc.some(([, , name]) => name === 'svc-app-events'),
    `the event hub's LISTEN connection direct from svc's Pods:\n${table}`,
  );
  // The pooled pools (src/db/pools.ts, src/db/system-gate.ts) never connect directly.
  assert.deepEqual(
    fromSvc.filter(([, , name]) => name === 'svc-app' || name === 'svc-mssp'),
    [],
    table,
  );
  // At most poolSize server connections per (database, role) per pooler replica.
  const pooledApp = fromPooler.filter(([user]) => user === 'svc_app').length;
  assert.ok(pooledApp <= 3 * REPLICAS, `${pooledApp} svc_app server connections:\n${table}`);
  console.log(
    `PostgreSQL sessions: ${fromPooler.length} from the pooler (${pooledApp} svc_app), ` +
      `${fromSvc.length} direct from svc's Pods, ${sessions.length} in all`,
  );

  // The negative control: without a pooler the same request cannot be answered. svc maps a
  // refused connection to 503 database_unavailable (src/db/pools.ts), and a connect whose SYNs
  // are dropped (the Service between its last endpoint's loss and kube-proxy's next sync) to the
  // same answer after the app pool's wait bound (APP_POOL_WAIT_MS, 10 s, inside the 20 s asked).
  t.after(() => scalePooler(REPLICAS));
  await scalePooler(0);
  const refused = await me(20_000);
  console.log(`with the pooler at 0: ${refused.status} ${refused.body.slice(0, 200)}`);
  assert.equal(refused.status, 503, refused.body);
  assert.match(refused.body, /database_unavailable/);
  const restoring = performance.now();
  await scalePooler(REPLICAS);
  const poolerBackMs = Math.round(performance.now() - restoring);
  const again = await withDiagnostics('GET /api/auth/me answered again', async () => {
    const res = await me();
    return res.status === 200 ? res : undefined;
  });
  assert.match(again.body, new RegExp(email));
  console.log(
    `pooler back to ${REPLICAS} Ready Pods ${poolerBackMs} ms after the scale-up, the request ` +
      `answered again ${Math.round(performance.now() - restoring)} ms after it`,
  );
});

test('issue 33 the chart’s pgbouncer.ini is what the Pods run', async () => {
  const [pod] = await podsOf('pgbouncer');
  assert.ok(pod);
  const mounted = await execIn(pod, ['cat', '/etc/pgbouncer/pgbouncer.ini']);
  assert.match(mounted, /^pool_mode = transaction$/m);
  assert.match(mounted, /^auth_type = scram-sha-256$/m);
  assert.match(
    mounted,
    new RegExp(`^svc = host=svc-postgres\\.${install.namespace}\\.svc port=5432 dbname=svc$`, 'm'),
  );
  const script = await execIn(pod, ['cat', '/etc/pgbouncer/start.sh']);
  assert.equal(
    script,
    await readFile(
      new URL('../../charts/svc-system/files/pgbouncer-start.sh', import.meta.url),
      'utf8',
    ),
  );
});

test('issue 33 NetworkPolicies enforced: the API reaches the pooler, a Pod of the namespace that is none of svc’s does not; the pooler reaches the database and nothing else', async () => {
  const namespace = install.namespace;
  // A Pod of the install namespace with svc's part-of label but none of the three components,
  // and no policy of its own: what it cannot reach, the pooler's ingress refuses.
  const body = standInPod(node, namespace, 'stranger', {
    'app.kubernetes.io/part-of': 'svc',
    'app.kubernetes.io/instance': install.release,
    'app.kubernetes.io/component': 'stranger',
  });
  await core.createNamespacedPod({ namespace, body });
  const stranger = await withDiagnostics('the stand-in Pod Ready', () =>
    readyPod(core, namespace, 'stranger'),
  );
  const [api] = await podsOf('api');
  const [database] = await podsOf('database');
  const poolers = await podsOf('pgbouncer');
  const [pooler] = poolers;
  assert.ok(api?.status?.podIP && database?.status?.podIP && pooler?.status?.podIP);
  const toPoolers = poolers.map((p) => [p.status?.podIP ?? '', 6432] as const);
  await expectFlows(
    api,
    toPoolers,
    toPoolers.map(() => true),
    'the API reaches every pooler Pod',
  );
  await expectFlows(
    stranger,
    // The last one is the control: its packets do leave it (cluster DNS, which no policy selects).
    [...toPoolers, [clusterDns, 53]],
    [...toPoolers.map(() => false), true],
    'another Pod of the namespace does not reach the pooler',
  );
  await expectFlows(
    pooler,
    [
      [database.status.podIP, 5432],
      [stranger.status?.podIP ?? '', standInPort],
      [api.status.podIP, 8080],
    ],
    [true, false, false],
    'the pooler reaches the database and nothing else',
  );
});

/**
 * Connects from the Pod's own network namespace to each target until each one connects or not
 * as expected (kube-router applies policies asynchronously); a refusal and a timeout both count
 * as not connecting (kube-router rejects).
 */
async function expectFlows(
  from: V1Pod,
  targets: readonly (readonly [string, number])[],
  connects: readonly boolean[],
  what: string,
): Promise<void> {
  const netns = await podNetns(node, from);
  let got: string[] = [];
  await withDiagnostics(
    what,
    async () => {
      got = await connectManyFrom(netns, targets);
      return got.every((result, i) => (result === 'connected') === connects[i]) ? true : undefined;
    },
    60_000,
  ).catch((error: Error) => {
    throw new Error(`${error.message}\n${JSON.stringify(targets)} → ${JSON.stringify(got)}`);
  });
  console.log(`${what}: ${JSON.stringify(got)}`);
}
