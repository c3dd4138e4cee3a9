// Issue 33: the system chart can put PgBouncer (transaction pooling, SCRAM) in front of the
// database. Rendered with `helm template` as an operator's values would render it: what is there
// when pgbouncer.enabled is off and on, the pooler's address on the API, orchestrator and worker
// while SVC_DATABASE_HOST stays the database, the NetworkPolicies around the pooler, the external
// database, and the start script that writes the auth file from the database Secret's files.
// test/realnode/pgbouncer.test.ts installs it on a real node.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import type {
  KubernetesObject,
  V1ConfigMap,
  V1Container,
  V1CronJob,
  V1Deployment,
  V1PodDisruptionBudget,
  V1Secret,
  V1Service,
  V1StatefulSet,
} from '@kubernetes/client-node';
import { ensureBinaries } from '../../testcluster/harness.ts';
import {
  helmWithValues,
  mergeValues,
  renderSystemChart,
  sampleValues,
  systemChart,
  type Values,
} from '../../testcluster/system-chart.ts';

const run = promisify(execFile);
const helm = join((await ensureBinaries()).binDir, 'helm');
const ns = 'svc-system';
const scratch = await mkdtemp(join(tmpdir(), 'svc-pgbouncer-chart-'));
after(() => rm(scratch, { recursive: true, force: true }));

const render = (overrides: Values = {}) =>
  renderSystemChart(helm, ns, mergeValues(sampleValues(ns), overrides));
const pooled = { pgbouncer: { enabled: true } };
const SVC_PODS = ['svc-api', 'svc-orchestrator', 'svc-worker'] as const;

function find<T extends KubernetesObject>(objects: KubernetesObject[], kind: string, name: string) {
  const found = objects.find((o) => o.kind === kind && o.metadata?.name === name);
  assert.ok(found, `rendered ${kind} ${name}`);
  return found as T;
}

const named = (objects: KubernetesObject[], name: string) =>
  objects.filter((o) => o.metadata?.name === name).map((o) => o.kind);

function container(objects: KubernetesObject[], name: string): V1Container {
  const first = find<V1Deployment>(objects, 'Deployment', name).spec?.template.spec?.containers[0];
  assert.ok(first, `${name} has a container`);
  return first;
}

function env(c: V1Container): Record<string, string | undefined> {
  return Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
}

const podLabels = (objects: KubernetesObject[], name: string) =>
  find<V1Deployment>(objects, 'Deployment', name).spec?.template.metadata?.labels ?? {};
const selects = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  selector !== undefined && Object.entries(selector).every(([k, v]) => labels[k] === v);
/** A rendered NetworkPolicy as YAML has it (the client's types name `from` `_from`). */
interface Peer {
  podSelector?: { matchLabels?: Record<string, string> };
  namespaceSelector?: unknown;
}
interface Rule {
  from?: Peer[];
  to?: Peer[];
  ports?: Array<{ port: number | string; protocol?: string }>;
}
interface PolicySpec {
  podSelector: { matchLabels?: Record<string, string> };
  policyTypes: string[];
  ingress?: Rule[];
  egress?: Rule[];
}
const policy = (objects: KubernetesObject[], name: string) =>
  (find(objects, 'NetworkPolicy', name) as unknown as { spec: PolicySpec }).spec;
/** The pod names (of `names`) a list of peers admits by pod selector. */
const admitted = (objects: KubernetesObject[], peers: Peer[], names: string[]) =>
  names.filter((name) =>
    peers.some(
      (peer) =>
        peer.namespaceSelector === undefined &&
        selects(peer.podSelector?.matchLabels, podLabels(objects, name)),
    ),
  );

test('issue 33 pgbouncer.enabled defaults to false: no pooler objects, no pooler address, the database admits svc alone', async () => {
  const objects = await render();
  assert.deepEqual(named(objects, 'svc-pgbouncer'), []);
  for (const name of SVC_PODS) {
    const vars = env(container(objects, name));
    assert.equal(vars.SVC_DATABASE_POOLER_HOST, undefined, name);
    assert.equal(vars.SVC_DATABASE_POOLER_PORT, undefined, name);
    assert.equal(vars.SVC_DATABASE_HOST, 'svc-postgres.svc-system.svc', name);
    const egress = policy(objects, name)?.egress ?? [];
    assert.ok(
      !egress.some((rule) => rule.ports?.some((p) => p.port === 6432)),
      `${name}: no egress to a pooler`,
    );
  }
  const database = policy(objects, 'svc-postgres')?.ingress?.[0]?.from ?? [];
  assert.equal(database.length, 3);
});

test('issue 33 pgbouncer.enabled: a Deployment, Service and ConfigMap; api, orchestrator and worker get SVC_DATABASE_POOLER_HOST/PORT while SVC_DATABASE_HOST stays the database', async () => {
  const objects = await render(mergeValues(pooled, { backup: { enabled: true } }));
  assert.deepEqual(named(objects, 'svc-pgbouncer').sort(), [
    'ConfigMap',
    'Deployment',
    'NetworkPolicy',
    'PodDisruptionBudget',
    'Service',
  ]);
  for (const name of SVC_PODS) {
    const vars = env(container(objects, name));
    assert.equal(vars.SVC_DATABASE_POOLER_HOST, 'svc-pgbouncer.svc-system.svc', name);
    assert.equal(vars.SVC_DATABASE_POOLER_PORT, '6432', name);
    // Direct: LISTEN, session locks, the job queue, migrations, bootstrap.
    assert.equal(vars.SVC_DATABASE_HOST, 'svc-postgres.svc-system.svc', name);
    assert.equal(vars.SVC_DATABASE_PORT, '5432', name);
  }
  // The backup stays direct (pg_dump and SET ROLE need a session of their own).
  const backup = find<V1CronJob>(objects, 'CronJob', 'svc-backup').spec?.jobTemplate.spec?.template
    .spec?.containers[0];
  assert.ok(backup);
  assert.equal(env(backup).SVC_DATABASE_POOLER_HOST, undefined);

  const service = find<V1Service>(objects, 'Service', 'svc-pgbouncer');
  assert.deepEqual(
    service.spec?.ports?.map((p) => [p.name, p.port, p.targetPort]),
    [['pgbouncer', 6432, 'pgbouncer']],
  );
  assert.ok(selects(service.spec?.selector, podLabels(objects, 'svc-pgbouncer')));
  const pooler = container(objects, 'svc-pgbouncer');
  assert.deepEqual(
    pooler.ports?.map((p) => [p.name, p.containerPort]),
    [['pgbouncer', 6432]],
  );
  assert.equal(pooler.image, 'ghcr.io/cloudnative-pg/pgbouncer:1.24.1');
  assert.deepEqual(pooler.command, ['/bin/sh', '/etc/pgbouncer/start.sh']);

  const config = find<V1ConfigMap>(objects, 'ConfigMap', 'svc-pgbouncer').data ?? {};
  const ini = config['pgbouncer.ini'] ?? '';
  const settings = iniSettings(ini);
  assert.deepEqual(settings.databases, {
    svc: 'host=svc-postgres.svc-system.svc port=5432 dbname=svc',
  });
  assert.equal(settings.pgbouncer?.pool_mode, 'transaction');
  assert.equal(settings.pgbouncer?.auth_type, 'scram-sha-256');
  assert.equal(settings.pgbouncer?.auth_file, '/var/run/pgbouncer/userlist.txt');
  assert.equal(settings.pgbouncer?.listen_port, '6432');
  assert.equal(settings.pgbouncer?.default_pool_size, '10');
  assert.equal(settings.pgbouncer?.max_client_conn, '2000');
  assert.equal(settings.pgbouncer?.unix_socket_dir, '');
  assert.equal(
    config['start.sh'],
    await readFile(join(systemChart, 'files', 'pgbouncer-start.sh'), 'utf8'),
  );
  // No password anywhere but the database Secret.
  const secret = find<V1Secret>(objects, 'Secret', 'svc-database').data ?? {};
  for (const key of ['app_password', 'mssp_password', 'admin_password', 'superuser_password']) {
    const password = Buffer.from(secret[key] ?? '', 'base64').toString();
    assert.ok(password.length >= 32, key);
    assert.ok(!JSON.stringify(config).includes(password), `${key} is not in the ConfigMap`);
  }
});

test('issue 33 the pooler Pod: non-root on a read-only root, no capabilities, no API token, probes, resources, and only the two pooled roles of the database Secret', async () => {
  const objects = await render(pooled);
  const deployment = find<V1Deployment>(objects, 'Deployment', 'svc-pgbouncer');
  assert.equal(deployment.spec?.replicas, 2);
  assert.equal(deployment.spec?.strategy?.rollingUpdate?.maxUnavailable, 0);
  const pod = deployment.spec?.template.spec;
  assert.ok(pod);
  assert.equal(pod.automountServiceAccountToken, false);
  assert.deepEqual(pod.securityContext, {
    runAsNonRoot: true,
    runAsUser: 10002,
    runAsGroup: 10002,
    fsGroup: 10002,
    seccompProfile: { type: 'RuntimeDefault' },
  });
  const c = container(objects, 'svc-pgbouncer');
  assert.deepEqual(c.securityContext, {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'] },
  });
  assert.deepEqual(c.readinessProbe?.tcpSocket, { port: 'pgbouncer' });
  assert.deepEqual(c.livenessProbe?.tcpSocket, { port: 'pgbouncer' });
  assert.deepEqual(c.resources, {
    requests: { cpu: '50m', memory: '64Mi' },
    limits: { cpu: '1', memory: '256Mi' },
  });
  const volumes = Object.fromEntries((pod.volumes ?? []).map((v) => [v.name, v]));
  assert.equal(volumes['database-credentials']?.secret?.secretName, 'svc-database');
  assert.deepEqual(
    volumes['database-credentials']?.secret?.items?.map((i) => i.key),
    ['app_user', 'app_password', 'mssp_user', 'mssp_password'],
  );
  assert.deepEqual(volumes.auth?.emptyDir, { medium: 'Memory', sizeLimit: '1Mi' });
  assert.equal(volumes.config?.configMap?.name, 'svc-pgbouncer');
  const mounts = Object.fromEntries((c.volumeMounts ?? []).map((m) => [m.name, m.mountPath]));
  assert.deepEqual(mounts, {
    config: '/etc/pgbouncer',
    'database-credentials': '/var/run/secrets/svc/database',
    auth: '/var/run/pgbouncer',
  });
  // Not part-of=svc: the API admits svc's own Pods by that label, and the pooler is none of them.
  assert.equal(podLabels(objects, 'svc-pgbouncer')['app.kubernetes.io/part-of'], undefined);

  const pdb = find<V1PodDisruptionBudget>(objects, 'PodDisruptionBudget', 'svc-pgbouncer');
  assert.equal(pdb.spec?.maxUnavailable, 1);
  assert.ok(selects(pdb.spec?.selector?.matchLabels, podLabels(objects, 'svc-pgbouncer')));
  const single = await render({ pgbouncer: { enabled: true, replicas: 1 } });
  assert.deepEqual(named(single, 'svc-pgbouncer').sort(), [
    'ConfigMap',
    'Deployment',
    'NetworkPolicy',
    'Service',
  ]);

  // A configuration change rolls the Pods; a chart upgrade that changes nothing here does not.
  const checksum = (o: KubernetesObject[]) =>
    find<V1Deployment>(o, 'Deployment', 'svc-pgbouncer').spec?.template.metadata?.annotations?.[
      'checksum/config'
    ];
  const resized = await render({ pgbouncer: { enabled: true, poolSize: 30 } });
  assert.notEqual(checksum(resized), checksum(objects));
  assert.equal(checksum(await render(pooled)), checksum(objects));
  assert.equal(
    podLabels(objects, 'svc-pgbouncer')['app.kubernetes.io/version'],
    undefined,
    'no version label on the pod template',
  );
});

test('issue 33 NetworkPolicies: only the API, orchestrator and worker reach the pooler; it reaches DNS and the database alone; the database admits it', async () => {
  const objects = await render(mergeValues(pooled, { edgeProxy: { enabled: true } }));
  const everyPod = ['svc-api', 'svc-orchestrator', 'svc-worker', 'svc-edge-proxy', 'svc-pgbouncer'];
  const pooler = policy(objects, 'svc-pgbouncer');
  assert.ok(pooler);
  assert.deepEqual(pooler.policyTypes, ['Ingress', 'Egress']);
  assert.ok(selects(pooler.podSelector.matchLabels, podLabels(objects, 'svc-pgbouncer')));
  assert.equal(pooler.ingress?.length, 1);
  const [ingress] = pooler.ingress ?? [];
  assert.deepEqual(admitted(objects, ingress?.from ?? [], everyPod), [...SVC_PODS]);
  assert.deepEqual(ingress?.ports, [{ port: 'pgbouncer', protocol: 'TCP' }]);
  const [dns, database, ...rest] = pooler.egress ?? [];
  assert.deepEqual(rest, []);
  assert.deepEqual(dns?.to, [
    { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } },
  ]);
  const postgresLabels =
    find<V1StatefulSet>(objects, 'StatefulSet', 'svc-postgres').spec?.template.metadata?.labels ??
    {};
  assert.equal(database?.to?.length, 1);
  assert.ok(selects(database?.to?.[0]?.podSelector?.matchLabels, postgresLabels));
  assert.deepEqual(database?.ports, [{ protocol: 'TCP', port: 5432 }]);

  const postgres = policy(objects, 'svc-postgres');
  assert.deepEqual(admitted(objects, postgres?.ingress?.[0]?.from ?? [], everyPod), [
    ...SVC_PODS,
    'svc-pgbouncer',
  ]);
  for (const name of SVC_PODS) {
    const toPooler = (policy(objects, name)?.egress ?? []).filter((rule) =>
      (rule.to ?? []).some((peer) =>
        selects(peer.podSelector?.matchLabels, podLabels(objects, 'svc-pgbouncer')),
      ),
    );
    assert.deepEqual(
      toPooler.map((rule) => rule.ports),
      [[{ protocol: 'TCP', port: 6432 }]],
      name,
    );
  }
});

test('issue 33 pgbouncer with an external database: its host, port and name, the existing Secret, egress on its port; TLS to the database is refused with a reason', async () => {
  const external = {
    database: {
      enabled: false,
      external: {
        host: 'pg.example.internal',
        port: 5433,
        database: 'svc_prod',
        existingSecret: 'pg',
      },
    },
  };
  const objects = await render(mergeValues(pooled, external));
  const ini = iniSettings(
    find<V1ConfigMap>(objects, 'ConfigMap', 'svc-pgbouncer').data?.['pgbouncer.ini'] ?? '',
  );
  assert.deepEqual(ini.databases, {
    svc_prod: 'host=pg.example.internal port=5433 dbname=svc_prod',
  });
  const pod = find<V1Deployment>(objects, 'Deployment', 'svc-pgbouncer').spec?.template.spec;
  const secret = pod?.volumes?.find((v) => v.name === 'database-credentials')?.secret;
  assert.equal(secret?.secretName, 'pg');
  assert.deepEqual(policy(objects, 'svc-pgbouncer')?.egress?.[1], {
    ports: [{ protocol: 'TCP', port: 5433 }],
  });
  const api = env(container(objects, 'svc-api'));
  assert.equal(api.SVC_DATABASE_HOST, 'pg.example.internal');
  assert.equal(api.SVC_DATABASE_POOLER_HOST, 'svc-pgbouncer.svc-system.svc');

  await assert.rejects(
    render(
      mergeValues(pooled, mergeValues(external, { database: { external: { ssl: 'require' } } })),
    ),
    /pgbouncer\.enabled with database\.external\.ssl=require/,
  );
});

test('issue 33 §9.3 pgbouncer.image.digest pins the pooler’s image', async () => {
  const digest = `sha256:${'d'.repeat(64)}`;
  const objects = await render({
    pgbouncer: {
      enabled: true,
      image: { repository: 'registry.example.com/pgbouncer', tag: '1.18', digest },
    },
  });
  assert.equal(
    container(objects, 'svc-pgbouncer').image,
    `registry.example.com/pgbouncer:1.18@${digest}`,
  );
});

test('issue 33 the values schema refuses a bad pgbouncer value before anything renders', async () => {
  for (const bad of [
    { poolSize: 0 },
    { replicas: 0 },
    { maxClientConnections: 'many' },
    { image: { digest: 'sha256:short' } },
    { poolMode: 'session' },
  ]) {
    await assert.rejects(
      helmWithValues(
        helm,
        ['template', 'svc', systemChart, '--namespace', ns],
        mergeValues(sampleValues(ns), { pgbouncer: { enabled: true, ...bad } }),
      ),
      /values don't meet the specifications of the schema/,
      JSON.stringify(bad),
    );
  }
});

test('issue 33 the start script writes the auth file from the Secret files (quotes doubled, owner-only) and stops on a missing one', async () => {
  // The script with its two absolute paths moved under a scratch directory, run by dash as the
  // images run it (/bin/sh); `exec pgbouncer` is replaced by printing the file it wrote.
  const script = await readFile(join(systemChart, 'files', 'pgbouncer-start.sh'), 'utf8');
  const credentials = join(scratch, 'credentials');
  const runDir = join(scratch, 'run');
  await mkdir(credentials);
  await mkdir(runDir);
  const local = script
    .replace('credentials=/var/run/secrets/svc/database', `credentials=${credentials}`)
    .replace('auth_file=/var/run/pgbouncer/userlist.txt', `auth_file=${runDir}/userlist.txt`)
    .replace('exec pgbouncer /etc/pgbouncer/pgbouncer.ini', 'echo started');
  assert.notEqual(local, script);
  assert.equal((local.match(new RegExp(scratch, 'g')) ?? []).length, 2, 'both paths moved');
  const file = join(scratch, 'start.sh');
  await writeFile(file, local);
  const secret: Record<string, string> = {
    app_user: 'svc_app',
    // A Secret file may end in a newline; svc trims it, so does the script.
    app_password: 'pa"ss word\n',
    mssp_user: 'svc_mssp',
    mssp_password: 'x"',
  };
  for (const [key, value] of Object.entries(secret)) {
    await writeFile(join(credentials, key), value);
  }
  const { stdout } = await run('dash', [file]);
  assert.equal(stdout.trim(), 'started');
  const written = join(runDir, 'userlist.txt');
  assert.equal(await readFile(written, 'utf8'), '"svc_app" "pa""ss word"\n"svc_mssp" "x"""\n');
  assert.equal((await stat(written)).mode & 0o777, 0o600);

  await rm(join(credentials, 'mssp_password'));
  await rm(written);
  const failed = await run('dash', [file]).catch(
    (error: { code: number; stderr: string }) => error,
  );
  assert.ok('code' in failed && failed.code !== 0, 'a missing file stops the start');
  assert.doesNotMatch(JSON.stringify(failed), /started/);
});

/** `[section]` → key → value of an ini file, comments dropped. */
function iniSettings(text: string): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header?.[1]) {
      section = header[1];
      out[section] = {};
      continue;
    }
    const eq = line.indexOf('=');
    assert.ok(eq > 0, `an ini line: ${line}`);
    const sectionOut = out[section] ?? {};
    sectionOut[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
    out[section] = sectionOut;
  }
  return out;
}
