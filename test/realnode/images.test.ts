// Issue 31, the images the real node runs (docs/test-images.md): each one built from Debian
// packages by testcluster/images/build.sh, unpacked with umoci and run with runc in its own
// network namespace, as its chart runs it (uid, read-only root, volumes, no capabilities), then
// proven to work from inside the container. No containerd or kubelet is needed.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmod,
  chown,
  mkdir,
  mkdtemp,
  readFile,
  readlink,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import { promisify } from 'node:util';
import { issueIndexerPki } from '../../src/orchestrator/indexer-pki.ts';
import { builtTestImage, type TestImageName } from '../../testcluster/images/images.ts';
import {
  type RuncContainer,
  type RuncOptions,
  runImage,
  waitFor,
} from '../../testcluster/images/runc.ts';
import { tenantSecurity } from '../support/opensearch.ts';

const run = promisify(execFile);

/** Builds (or finds) the image and reports its build time and size. */
async function image(t: TestContext, name: TestImageName) {
  const started = Date.now();
  const built = await builtTestImage(name);
  const size = (await stat(built.archive)).size;
  t.diagnostic(
    `${built.ref}: ${built.archive} ${(size / 2 ** 20).toFixed(1)} MiB, ready in ${Date.now() - started} ms`,
  );
  return { ...built, tag: built.ref.slice(built.ref.lastIndexOf(':') + 1) };
}

/** A scratch directory for one test's volumes, removed after it. */
async function scratch(t: TestContext, prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A directory owned by uid:gid, as a volume the kubelet prepares for fsGroup. */
async function volume(parent: string, name: string, uid: number, gid: number): Promise<string> {
  const dir = path.join(parent, name);
  await mkdir(dir, { recursive: true });
  await chown(dir, uid, gid);
  await chmod(dir, 0o770);
  return dir;
}

async function start(t: TestContext, options: RuncOptions): Promise<RuncContainer> {
  const started = Date.now();
  const container = await runImage(options);
  t.after(() => container.remove());
  t.diagnostic(`runc create + start: ${Date.now() - started} ms`);
  // Its own network namespace, never the machine's.
  assert.notEqual(await readlink(container.netns), await readlink('/proc/self/ns/net'));
  return container;
}

/** The container's stdout and stderr, for an assertion message. */
const logsOf = async (c: RuncContainer) =>
  `\n--- container log ---\n${(await c.logs()).slice(-4000)}`;

test('pause: a static PID 1 that runs as 65535, reaps orphans and exits 0 on SIGTERM', async (t) => {
  const pause = await image(t, 'pause');
  const container = await start(t, { archive: pause.archive, tag: pause.tag });
  // Signal it only once runc's init has exec'd it (before that, runc's own Go runtime shows
  // in /proc) and it has installed its handlers: a namespace's PID 1 never gets a signal it has
  // no handler for, so an early SIGTERM would be lost (SigCgt bit 15 - 1).
  await waitFor('pause runs and catches SIGTERM', 5_000, async () => {
    const comm = (await readFile(`/proc/${container.pid}/comm`, 'utf8')).trim();
    const caught = /^SigCgt:\s+([0-9a-f]+)$/m.exec(
      await readFile(`/proc/${container.pid}/status`, 'utf8'),
    )?.[1];
    return comm === 'pause' && caught !== undefined && (BigInt(`0x${caught}`) & (1n << 14n)) !== 0n;
  });
  const status = await readFile(`/proc/${container.pid}/status`, 'utf8');
  assert.match(status, /^Uid:\s+65535\s+65535/m);
  assert.equal(await container.status(), 'running');
  const stopMs = await container.stop('TERM', 10_000);
  t.diagnostic(`stopped ${stopMs} ms after SIGTERM`);
  assert.match(await container.logs(), /Shutting down, got signal: terminated/);

  // Reaping: the same binary as PID 1 of a new PID namespace; a shell entered into that
  // namespace leaves a background child behind, which the kernel hands to PID 1 when the shell
  // exits. Without reaping it would stay a zombie for good.
  const bundle = await scratch(t, 'svc-pause-');
  await run('umoci', [
    'unpack',
    '--image',
    `${await layoutOf(bundle, pause.archive)}:${pause.tag}`,
    `${bundle}/b`,
  ]);
  const child: ChildProcess = spawn(
    'unshare',
    ['--pid', '--fork', '--kill-child', `${bundle}/b/rootfs/pause`],
    {
      stdio: 'ignore',
    },
  );
  t.after(() => child.kill('SIGKILL'));
  const pausePid = await waitFor('pause in its PID namespace', 10_000, async () => {
    const kids = await childrenOf(child.pid ?? -1);
    return kids.length === 1;
  }).then(async () => (await childrenOf(child.pid ?? -1))[0] as number);
  await run('nsenter', [
    `--target=${pausePid}`,
    '--pid',
    '--',
    'sh',
    '-c',
    'sleep 3 </dev/null >/dev/null 2>&1 & exit 0',
  ]);
  await waitFor(
    'the orphan appears under pause',
    5_000,
    async () => (await childrenOf(pausePid)).length === 1,
  );
  await waitFor(
    'the orphan is reaped, not left a zombie',
    10_000,
    async () => (await childrenOf(pausePid)).length === 0,
  );
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  process.kill(pausePid, 'SIGTERM');
  assert.equal(await exited, 0);
});

/** The host PIDs whose parent is `pid` (zombies included). */
async function childrenOf(pid: number): Promise<number[]> {
  const { stdout } = await run('sh', ['-c', 'cat /proc/[0-9]*/stat 2>/dev/null || true'], {
    maxBuffer: 64 << 20,
  });
  const kids: number[] = [];
  for (const line of stdout.split('\n')) {
    // pid (comm) state ppid ...; comm may hold spaces and parentheses.
    const close = line.lastIndexOf(')');
    if (close < 0) continue;
    const [, ppid] = line.slice(close + 2).split(' ');
    if (Number(ppid) === pid) kids.push(Number.parseInt(line, 10));
  }
  return kids;
}

async function layoutOf(dir: string, archive: string): Promise<string> {
  const layout = path.join(dir, 'layout');
  await mkdir(layout, { recursive: true });
  await run('tar', ['-C', layout, '-xf', archive]);
  return layout;
}

test('postgres: the chart database container initialises, answers with the password, restarts on its data', async (t) => {
  const pg = await image(t, 'postgres');
  const dir = await scratch(t, 'svc-pg-image-');
  const data = await volume(dir, 'data', 999, 999);
  // The Secret volume: defaultMode 0440, group fsGroup 999.
  const secret = await volume(dir, 'superuser', 0, 999);
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  await writeFile(path.join(secret, 'password'), password, { mode: 0o440 });
  await chown(path.join(secret, 'password'), 0, 999);
  const options: RuncOptions = {
    archive: pg.archive,
    tag: pg.tag,
    // charts/svc-system/templates/database.yaml
    user: { uid: 999, gid: 999 },
    additionalGids: [999],
    env: {
      POSTGRES_USER: 'postgres',
      POSTGRES_PASSWORD_FILE: '/var/run/secrets/svc/superuser/password',
      PGDATA: '/var/lib/postgresql/data/pgdata',
    },
    mounts: [
      { destination: '/var/lib/postgresql/data', source: data },
      { destination: '/var/run/postgresql' },
      { destination: '/tmp' },
      { destination: '/var/run/secrets/svc/superuser', source: secret, readOnly: true },
    ],
  };
  // Loopback is trusted, as in the official image; every other address needs the password. The
  // pod address stands for a client in another pod: it exists only in the container's netns.
  const podAddress = '10.244.0.5';
  const psql = (c: RuncContainer, pw: string, sql: string, host = podAddress) =>
    c.exec(['psql', '-h', host, '-U', 'postgres', '-d', 'postgres', '-Atc', sql], {
      env: { PGPASSWORD: pw },
    });
  const addPodAddress = (c: RuncContainer) =>
    run('nsenter', [`--net=${c.netns}`, 'ip', 'address', 'add', `${podAddress}/32`, 'dev', 'lo']);

  const first = await start(t, options);
  // The chart's startup and readiness probe.
  const readyMs = await waitFor('pg_isready -U postgres -h 127.0.0.1', 120_000, async () => {
    if ((await first.status()) !== 'running')
      throw new Error(`container ${await first.status()}${await logsOf(first)}`);
    return (await first.exec(['pg_isready', '-U', 'postgres', '-h', '127.0.0.1'])).code === 0;
  });
  t.diagnostic(`initdb + start to ready: ${readyMs} ms`);
  await addPodAddress(first);
  const version = await psql(first, password, 'show server_version');
  assert.equal(version.code, 0, version.stderr + (await logsOf(first)));
  assert.match(version.stdout, /^18\./);
  const settings = await psql(
    first,
    password,
    "select current_user, current_setting('listen_addresses'), (select string_agg(auth_method, ',') from pg_hba_file_rules where type = 'host' and address = 'all')",
  );
  assert.equal(settings.stdout.trim(), 'postgres|*|scram-sha-256');
  const wrong = await psql(first, 'not-the-password', 'select 1');
  assert.notEqual(wrong.code, 0);
  assert.match(wrong.stderr, /password authentication failed for user "postgres"/);
  assert.equal((await psql(first, 'not-the-password', 'select 1', '127.0.0.1')).stdout.trim(), '1');
  assert.equal(
    (await psql(first, password, 'create table kept (v text); insert into kept values (1)')).code,
    0,
  );
  // The server is PID 1 (exec): it gets the runtime's signal and shuts down cleanly.
  const stopMs = await first.stop('INT', 30_000);
  t.diagnostic(`stopped ${stopMs} ms after SIGINT`);
  assert.match(await first.logs(), /database system is shut down/);
  await first.remove();

  // A second container on the same volume skips initialisation and keeps the data.
  const second = await start(t, options);
  await waitFor('pg_isready after restart', 60_000, async () => {
    if ((await second.status()) !== 'running')
      throw new Error(`container ${await second.status()}${await logsOf(second)}`);
    return (await second.exec(['pg_isready', '-U', 'postgres', '-h', '127.0.0.1'])).code === 0;
  });
  await addPodAddress(second);
  assert.equal((await psql(second, password, 'select count(*) from kept')).stdout.trim(), '1');
  assert.doesNotMatch(await second.logs(), /init process complete/);
  await second.stop('TERM', 30_000);
});

test('haproxy: the edge proxy runs as uid 99 with the chart config, serves /healthz, and the preStop hook stops it', async (t) => {
  const haproxy = await image(t, 'haproxy');
  const dir = await scratch(t, 'svc-haproxy-image-');
  const config = await volume(dir, 'config', 0, 0);
  await chmod(config, 0o755);
  const chartConfig = await readFile(
    new URL('../../charts/svc-system/files/edge-proxy-haproxy.cfg', import.meta.url),
    'utf8',
  );
  await writeFile(path.join(config, 'haproxy.cfg'), chartConfig, { mode: 0o644 });
  // The kubelet mounts a resolv.conf; the chart's config parses it (parse-resolv-conf).
  const resolv = path.join(dir, 'resolv.conf');
  await writeFile(resolv, 'nameserver 127.0.0.1\noptions ndots:5\n', { mode: 0o644 });
  const container = await start(t, {
    archive: haproxy.archive,
    tag: haproxy.tag,
    // charts/svc-system/templates/edge-proxy.yaml
    args: ['haproxy', '-W', '-db', '-f', '/usr/local/etc/haproxy/haproxy.cfg'],
    user: { uid: 99, gid: 99 },
    mounts: [
      { destination: '/usr/local/etc/haproxy', source: config, readOnly: true },
      { destination: '/etc/resolv.conf', source: resolv, readOnly: true },
    ],
  });
  const get = (url: string) => container.exec(['busybox', 'wget', '-q', '-S', '-O', '-', url]);
  const readyMs = await waitFor('GET /healthz answers 200', 30_000, async () => {
    if ((await container.status()) !== 'running')
      throw new Error(`container stopped${await logsOf(container)}`);
    return (await get('http://127.0.0.1:8404/healthz')).code === 0;
  });
  t.diagnostic(`haproxy ready in ${readyMs} ms`);
  const other = await get('http://127.0.0.1:8404/other');
  assert.notEqual(other.code, 0);
  assert.match(other.stderr, /404/);
  const version = await container.exec(['haproxy', '-v']);
  assert.match(version.stdout, /HAProxy version 2\.6\./);
  const status = await readFile(`/proc/${container.pid}/status`, 'utf8');
  assert.match(status, /^Uid:\s+99\s+99/m);

  // The preStop hook: a soft stop of the master (PID 1), whose exit ends the container while
  // the hook still sleeps.
  const started = Date.now();
  const hook = container.exec(['/bin/sh', '-c', 'kill -USR1 1; sleep 30'], { timeoutMs: 60_000 });
  await waitFor(
    'the container stops after the preStop hook',
    20_000,
    async () => (await container.status()) === 'stopped',
  );
  t.diagnostic(`stopped ${Date.now() - started} ms after the preStop hook`);
  await hook;
});

test('opensearch: runs as uid 1000 on a read-only root with opensearch.yml mounted into the Wazuh indexer home, turns green', async (t) => {
  const os = await image(t, 'opensearch');
  const dir = await scratch(t, 'svc-opensearch-image-');
  const config = await volume(dir, 'config', 0, 0);
  await chmod(config, 0o755);
  await writeFile(
    path.join(config, 'opensearch.yml'),
    [
      'cluster.name: "wazuh-cluster"',
      'node.name: "monitor-indexer"',
      'network.host: "0.0.0.0"',
      'path.data: /var/lib/wazuh-indexer',
      'path.logs: /var/log/wazuh-indexer',
      'cluster.routing.allocation.disk.threshold_enabled: false',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const data = await volume(dir, 'data', 1000, 1000);
  const logs = await volume(dir, 'logs', 1000, 1000);
  const container = await start(t, {
    archive: os.archive,
    tag: os.tag,
    user: { uid: 1000, gid: 1000 },
    // As charts/svc-tenant/charts/monitor/templates/indexer.yaml passes them.
    env: {
      OPENSEARCH_JAVA_OPTS: '-Xms256m -Xmx256m',
      'discovery.type': 'single-node',
      'node.store.allow_mmap': 'false',
    },
    mounts: [
      // Read-only, as the chart's ConfigMap (subPath): the home is on the read-only root, so
      // the entrypoint copies the configuration to /tmp for the keystore.
      {
        destination: '/usr/share/wazuh-indexer/opensearch.yml',
        source: path.join(config, 'opensearch.yml'),
        readOnly: true,
      },
      { destination: '/var/lib/wazuh-indexer', source: data },
      { destination: '/var/log/wazuh-indexer', source: logs },
      { destination: '/tmp' },
    ],
  });
  const health = async () => {
    const r = await container.exec([
      'busybox',
      'wget',
      '-q',
      '-O',
      '-',
      'http://127.0.0.1:9200/_cluster/health',
    ]);
    return r.code === 0
      ? (JSON.parse(r.stdout) as { status: string; number_of_nodes: number })
      : undefined;
  };
  const greenMs = await waitFor('cluster health green', 180_000, async () => {
    if ((await container.status()) !== 'running')
      throw new Error(`container stopped${await logsOf(container)}`);
    return (await health())?.status === 'green';
  });
  t.diagnostic(`OpenSearch green ${greenMs} ms after start`);
  const root = await container.exec(['busybox', 'wget', '-q', '-O', '-', 'http://127.0.0.1:9200/']);
  const info = JSON.parse(root.stdout) as { version: { number: string }; cluster_name: string };
  assert.equal(info.cluster_name, 'wazuh-cluster');
  assert.equal(info.version.number, '2.19.4');
  // No security plugin in this configuration: plain HTTP, the plain home.
  const plugins = await container.exec([
    'busybox',
    'wget',
    '-q',
    '-O',
    '-',
    'http://127.0.0.1:9200/_cat/plugins',
  ]);
  assert.equal(plugins.stdout.trim(), '');
  const status = await readFile(`/proc/${container.pid}/status`, 'utf8');
  assert.match(status, /^Uid:\s+1000\s+1000/m);
  // The JVM is PID 1 and stops on SIGTERM.
  const stopMs = await container.stop('TERM', 60_000);
  t.diagnostic(`stopped ${stopMs} ms after SIGTERM`);
});

test('opensearch: with the chart security settings it loads the plugin, serves HTTPS and accepts the admin certificate', async (t) => {
  const os = await image(t, 'opensearch');
  const dir = await scratch(t, 'svc-opensearch-security-image-');
  const config = await volume(dir, 'config', 0, 1000);
  await chmod(config, 0o750);
  const pki = await issueIndexerPki('svc-image-test', new Date());
  const security = await tenantSecurity(pki, {
    admin: randomBytes(18).toString('base64url'),
    adapter: randomBytes(18).toString('base64url'),
  });
  // The chart's opensearch.yml (monitor-indexer-config) and its paths in the Wazuh indexer home.
  const home = '/usr/share/wazuh-indexer';
  const dn = (v: string) => `  - ${JSON.stringify(v)}`;
  const yml = [
    'network.host: "0.0.0.0"',
    'node.name: "monitor-indexer"',
    'cluster.name: "wazuh-cluster"',
    'path.data: /var/lib/wazuh-indexer',
    'path.logs: /var/log/wazuh-indexer',
    'cluster.routing.allocation.disk.threshold_enabled: false',
    'compatibility.override_main_response_version: true',
    'plugins.security.ssl.http.enabled: true',
    ...['http', 'transport'].flatMap((layer) => [
      `plugins.security.ssl.${layer}.pemcert_filepath: ${home}/certs/indexer.pem`,
      `plugins.security.ssl.${layer}.pemkey_filepath: ${home}/certs/indexer-key.pem`,
      `plugins.security.ssl.${layer}.pemtrustedcas_filepath: ${home}/certs/root-ca.pem`,
    ]),
    'plugins.security.ssl.transport.enforce_hostname_verification: false',
    'plugins.security.ssl.transport.resolve_hostname: false',
    'plugins.security.nodes_dn:',
    dn(security.nodeDn),
    'plugins.security.authcz.admin_dn:',
    dn(security.adminDn),
    'plugins.security.allow_default_init_securityindex: true',
    'plugins.security.system_indices.enabled: true',
    '',
  ].join('\n');
  await writeFile(path.join(config, 'opensearch.yml'), yml, { mode: 0o640 });
  const certs = path.join(config, 'certs');
  const pems = {
    'root-ca.pem': security.pem.rootCa,
    'indexer.pem': security.pem.nodeCert,
    'indexer-key.pem': security.pem.nodeKey,
  };
  await mkdir(certs);
  for (const [file, text] of Object.entries(pems))
    await writeFile(path.join(certs, file), text, { mode: 0o640 });
  // Only svc's three files, each mounted over the image's copy as the chart does (subPath).
  const securityDir = path.join(config, 'opensearch-security');
  await mkdir(securityDir);
  for (const [file, text] of Object.entries(security.files) as [string, string][]) {
    await writeFile(path.join(securityDir, file), text, { mode: 0o640 });
  }
  await run('chown', ['-R', '0:1000', config]);
  await run('chmod', ['-R', 'g+rX', config]);
  // The client's side: the admin certificate and the CA, on the host.
  const client = path.join(dir, 'client');
  await mkdir(client);
  await writeFile(path.join(client, 'ca.pem'), security.pem.rootCa);
  await writeFile(path.join(client, 'admin.pem'), security.pem.adminCert);
  await writeFile(path.join(client, 'admin-key.pem'), security.pem.adminKey, { mode: 0o600 });
  const data = await volume(dir, 'data', 1000, 1000);
  const logs = await volume(dir, 'logs', 1000, 1000);
  const container = await start(t, {
    archive: os.archive,
    tag: os.tag,
    user: { uid: 1000, gid: 1000 },
    env: {
      OPENSEARCH_JAVA_OPTS: '-Xms256m -Xmx256m',
      'discovery.type': 'single-node',
      'node.store.allow_mmap': 'false',
    },
    // The chart's indexer container: a writable root (the node writes its keystore into the
    // home), its files mounted read-only where the Wazuh indexer image reads them.
    readOnlyRoot: false,
    mounts: [
      {
        destination: `${home}/opensearch.yml`,
        source: path.join(config, 'opensearch.yml'),
        readOnly: true,
      },
      { destination: `${home}/certs`, source: certs, readOnly: true },
      ...Object.keys(security.files).map((file) => ({
        destination: `${home}/opensearch-security/${file}`,
        source: path.join(securityDir, file),
        readOnly: true,
      })),
      { destination: '/var/lib/wazuh-indexer', source: data },
      { destination: '/var/log/wazuh-indexer', source: logs },
      { destination: '/tmp' },
    ],
  });
  // curl from the host's binaries, inside the container's network namespace only.
  const curl = async (urlPath: string, admin: boolean) => {
    const args = [`--net=${container.netns}`, 'curl', '-sS', '-o', '-', '-w', '\n%{http_code}'];
    args.push(
      '--cacert',
      path.join(client, 'ca.pem'),
      '--resolve',
      'monitor-indexer:9200:127.0.0.1',
    );
    if (admin)
      args.push(
        '--cert',
        path.join(client, 'admin.pem'),
        '--key',
        path.join(client, 'admin-key.pem'),
      );
    const { stdout } = await run('nsenter', [...args, `https://monitor-indexer:9200${urlPath}`]);
    const lines = stdout.trimEnd().split('\n');
    return { status: Number(lines.at(-1)), body: lines.slice(0, -1).join('\n') };
  };
  const greenMs = await waitFor(
    'cluster health green over HTTPS with the admin certificate',
    240_000,
    async () => {
      if ((await container.status()) !== 'running')
        throw new Error(`container stopped${await logsOf(container)}`);
      const health = await curl('/_cluster/health', true);
      return (
        health.status === 200 && (JSON.parse(health.body) as { status: string }).status === 'green'
      );
    },
  );
  t.diagnostic(`security node green ${greenMs} ms after start`);
  // 503 while the plugin loads svc's users into its index, then a basic-auth challenge.
  await waitFor(
    'security initialised: a request without credentials gets 401',
    120_000,
    async () => {
      const anonymous = await curl('/', false);
      if (anonymous.status !== 503 && anonymous.status !== 401)
        throw new Error(`HTTP ${anonymous.status}`);
      return anonymous.status === 401;
    },
  );
  const plugins = await curl('/_cat/plugins', true);
  assert.match(plugins.body, /opensearch-security/);
  const stopMs = await container.stop('TERM', 60_000);
  t.diagnostic(`stopped ${stopMs} ms after SIGTERM`);
});
