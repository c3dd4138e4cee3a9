import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, rmSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { runBuildScript } from '../build-script.ts';

/**
 * A real OpenSearch node (the engine the Wazuh indexer 4.x is built on) started as a plain JVM
 * process from the assembly testcluster/opensearch/build.sh caches per machine
 * (docs/testing.md "The real indexer"). A plain node has no security plugin and speaks HTTP; a
 * security node loads the plugin with the chart's settings (charts/svc-tenant/charts/monitor/
 * templates/indexer.yaml), svc's PKI and svc's rendered security configuration, so it answers
 * as a tenant's indexer would. Every node binds only 127.0.0.1, on free ports.
 */

const here = dirname(fileURLToPath(import.meta.url));

/** The PEM files a tenant indexer mounts from svc-indexer-tls (src/orchestrator/indexer-pki.ts). */
export interface SecurityPem {
  rootCa: string;
  nodeCert: string;
  nodeKey: string;
  adminCert: string;
  adminKey: string;
}

/** The security plugin's files svc renders (src/orchestrator/indexer-security.ts). */
export interface SecurityFiles {
  'internal_users.yml': string;
  'roles.yml': string;
  'roles_mapping.yml': string;
}

export interface SecurityOptions {
  pem: SecurityPem;
  files: SecurityFiles;
  /** `plugins.security.nodes_dn` (the chart's monitor.indexerNodeDn). */
  nodeDn: string;
  /** `plugins.security.authcz.admin_dn` (the chart's monitor.indexerAdminDn). */
  adminDn: string;
  /**
   * `plugins.security.allow_default_init_securityindex`: the node loads the files into its
   * security index at first start, as the chart's indexer does. Default true; false leaves the
   * index to runSecurityAdmin.
   */
  initSecurityIndex?: boolean;
}

export interface StartOpenSearchOptions {
  /** JVM heap (-Xms = -Xmx); default 512 MB. */
  heapMb?: number;
  /** Where the node keeps its indices; default a fresh directory removed by stop(). */
  dataDir?: string;
  security?: SecurityOptions;
  /**
   * How long to wait for a green cluster; default 300 s: a security node needs 13 s on a quiet
   * machine but was seen at 100 s on two cores loaded 30-fold by parallel builds.
   */
  timeoutMs?: number;
}

/** What a client needs to verify a security node's HTTPS certificate. */
export interface OpenSearchTls {
  /** svc's indexer root CA (PEM). */
  ca: string;
  /**
   * A name the node certificate carries (src/orchestrator/indexer-pki.ts indexerDnsNames): the
   * node listens on 127.0.0.1, which the certificate does not name, so a client sends this as
   * the TLS server name and verifies against it.
   */
  servername: string;
}

export interface OpenSearchNode {
  /** http://127.0.0.1:<port> for a plain node, https://127.0.0.1:<port> for a security node. */
  readonly url: string;
  readonly httpPort: number;
  readonly transportPort: number;
  readonly pid: number;
  /** The assembly's home the node runs from (shared, read-only). */
  readonly home: string;
  /** The node's own directory: config/, logs/, tmp/ and (by default) data/. */
  readonly dir: string;
  readonly dataDir: string;
  /** The node's config directory (opensearch.yml, certs/, opensearch-security/). */
  readonly configDir: string;
  /** Set for a security node. */
  readonly tls: OpenSearchTls | undefined;
  readonly security: SecurityOptions | undefined;
  /** The node's console output (stdout and stderr). */
  readonly logPath: string;
  stop(): Promise<void>;
  /**
   * Stops and starts the node on the same ports and data directory; with `security`, the node's
   * certificates and security files are replaced first (a re-issue or a CA change).
   */
  restart(next?: { security?: SecurityOptions }): Promise<void>;
}

export interface Assembly {
  /** Core and modules only. */
  readonly plainHome: string;
  /** The same plus plugins/opensearch-security. */
  readonly securityHome: string;
}

/** Assembles the real indexer when the cache misses (~15 s with Maven's cache warm). */
export async function ensureOpenSearch(): Promise<Assembly> {
  const dir = await runBuildScript(join(here, 'build.sh'), 'OPENSEARCH_DIR');
  return { plainHome: join(dir, 'home'), securityHome: join(dir, 'home-security') };
}

/**
 * OpenSearch runs on Java 17 or 21 only (Java 24 removed the security manager it installs).
 * SVC_OPENSEARCH_JAVA overrides; else Debian's Java 17 or 21 when present, else `java`.
 */
function javaBinary(): string {
  const chosen = process.env.SVC_OPENSEARCH_JAVA;
  if (chosen) return chosen;
  const jvms = '/usr/lib/jvm';
  if (existsSync(jvms)) {
    for (const version of ['17', '21']) {
      const dir = readdirSync(jvms).find((d) => d.startsWith(`java-${version}-openjdk`));
      if (dir && existsSync(join(jvms, dir, 'bin', 'java'))) return join(jvms, dir, 'bin', 'java');
    }
  }
  return 'java';
}

/** A port nothing listens on now (the kernel's pick); the node binds it a moment later. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

/**
 * The chart's opensearch.yml (monitor-indexer-config), with the PEM paths under the node's
 * config directory and the loopback-only, single-node parts a test node needs.
 */
function opensearchYml(p: {
  httpPort: number;
  transportPort: number;
  dataDir: string;
  logsDir: string;
  security: SecurityOptions | undefined;
}): string {
  const lines = [
    'cluster.name: "wazuh-cluster"',
    'node.name: "monitor-indexer"',
    'network.host: "127.0.0.1"',
    `http.port: ${p.httpPort}`,
    `transport.port: ${p.transportPort}`,
    'discovery.type: single-node',
    `path.data: ${JSON.stringify(p.dataDir)}`,
    `path.logs: ${JSON.stringify(p.logsDir)}`,
    // As the chart's indexer: no mmap, hence no vm.max_map_count requirement.
    'node.store.allow_mmap: false',
    // A shared machine's disk may be fuller than the 85 % watermark; tests must not depend on it.
    'cluster.routing.allocation.disk.threshold_enabled: false',
    'compatibility.override_main_response_version: true',
  ];
  const s = p.security;
  if (s) {
    const dn = (v: string) => `  - ${JSON.stringify(v)}`;
    lines.push(
      'plugins.security.ssl.http.enabled: true',
      'plugins.security.ssl.http.pemcert_filepath: certs/indexer.pem',
      'plugins.security.ssl.http.pemkey_filepath: certs/indexer-key.pem',
      'plugins.security.ssl.http.pemtrustedcas_filepath: certs/root-ca.pem',
      'plugins.security.ssl.transport.pemcert_filepath: certs/indexer.pem',
      'plugins.security.ssl.transport.pemkey_filepath: certs/indexer-key.pem',
      'plugins.security.ssl.transport.pemtrustedcas_filepath: certs/root-ca.pem',
      'plugins.security.ssl.transport.enforce_hostname_verification: false',
      'plugins.security.ssl.transport.resolve_hostname: false',
      'plugins.security.nodes_dn:',
      dn(s.nodeDn),
      'plugins.security.authcz.admin_dn:',
      dn(s.adminDn),
      `plugins.security.allow_default_init_securityindex: ${s.initSecurityIndex ?? true}`,
      'plugins.security.check_snapshot_restore_write_privileges: true',
      'plugins.security.enable_snapshot_restore_privilege: true',
      'plugins.security.restapi.roles_enabled:',
      '  - "all_access"',
      '  - "security_rest_api_access"',
      'plugins.security.system_indices.enabled: true',
    );
  }
  return `${lines.join('\n')}\n`;
}

const LOG4J2 = `status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] %m%n
rootLogger.level = info
rootLogger.appenderRef.console.ref = console
`;

/** File names the chart mounts from svc-indexer-tls under <home>/certs. */
const PEM_FILES: Record<keyof SecurityPem, string> = {
  rootCa: 'root-ca.pem',
  nodeCert: 'indexer.pem',
  nodeKey: 'indexer-key.pem',
  adminCert: 'admin.pem',
  adminKey: 'admin-key.pem',
};

/**
 * The security plugin's configuration directory: the plugin's own defaults (config.yml with
 * HTTP basic auth against the internal users, action groups, tenants, ...) with svc's three
 * files over them, as the chart mounts them over the image's.
 */
async function writeSecurityConfig(
  securityHome: string,
  configDir: string,
  security: SecurityOptions,
): Promise<void> {
  const certs = join(configDir, 'certs');
  await mkdir(certs, { recursive: true });
  for (const [key, file] of Object.entries(PEM_FILES)) {
    await writeFile(join(certs, file), security.pem[key as keyof SecurityPem], { mode: 0o600 });
  }
  const dir = join(configDir, 'opensearch-security');
  await cp(join(securityHome, 'plugins', 'opensearch-security', 'config'), dir, {
    recursive: true,
  });
  for (const [file, text] of Object.entries(security.files)) {
    await writeFile(join(dir, file), text);
  }
}

// Nodes of this process die with it, even when a caller forgot stop().
const running = new Map<number, string>();
process.on('exit', () => {
  for (const [pid, removeDir] of running) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
    rmSync(removeDir, { recursive: true, force: true });
  }
});

/** The last lines of a node's console log, for an error message. */
async function logTail(path: string, lines = 40): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.trim().split('\n').slice(-lines).join('\n');
}

export interface OpenSearchResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body parsed as JSON when it is JSON, else the text. */
  body: unknown;
  text: string;
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  /** Newline-delimited JSON for _bulk: the array's items, one a line. */
  ndjson?: unknown[];
  /** HTTP basic credentials. */
  basic?: { username: string; password: string };
  /** Present the admin client certificate (security node): the plugin's super admin. */
  admin?: boolean;
  timeoutMs?: number;
}

/**
 * One request to a node: verifies a security node's certificate against svc's CA and the name
 * in `tls.servername`, as the adapter does.
 */
export async function openSearchRequest(
  node: Pick<OpenSearchNode, 'url' | 'tls' | 'security'>,
  path: string,
  opts: RequestOptions = {},
): Promise<OpenSearchResponse> {
  const url = new URL(path, node.url);
  let payload: string | undefined;
  let contentType = 'application/json';
  if (opts.ndjson) {
    payload = `${opts.ndjson.map((line) => JSON.stringify(line)).join('\n')}\n`;
    contentType = 'application/x-ndjson';
  } else if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
  }
  const headers: Record<string, string> = {};
  if (payload !== undefined) {
    headers['content-type'] = contentType;
    // Node sends a DELETE's or GET's body unframed without it, and the server then reads the
    // body as the next request on the kept-alive connection.
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  if (opts.basic) {
    const { username, password } = opts.basic;
    headers.authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  }
  const tls = node.tls;
  const pem = node.security?.pem;
  const options: https.RequestOptions = {
    method: opts.method ?? (payload === undefined ? 'GET' : 'POST'),
    headers,
    timeout: opts.timeoutMs ?? 30_000,
    ...(tls ? { ca: tls.ca, servername: tls.servername } : {}),
    ...(opts.admin && pem ? { cert: pem.adminCert, key: pem.adminKey } : {}),
  };
  return new Promise<OpenSearchResponse>((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(url, options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {}
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text });
      });
      res.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`timeout: ${url.pathname}`)));
    request.on('error', reject);
    request.end(payload);
  });
}

/** The certificate names svc issues for a tenant indexer all start with this. */
const SERVERNAME = 'monitor-indexer';

export async function startOpenSearch(opts: StartOpenSearchOptions = {}): Promise<OpenSearchNode> {
  const assembly = await ensureOpenSearch();
  const dir = await mkdtemp(join(tmpdir(), 'svc-opensearch-'));
  const dataDir = opts.dataDir ?? join(dir, 'data');
  const configDir = join(dir, 'config');
  const logsDir = join(dir, 'logs');
  const tmp = join(dir, 'tmp');
  const logPath = join(logsDir, 'console.log');
  await Promise.all([dataDir, configDir, logsDir, tmp].map((d) => mkdir(d, { recursive: true })));
  let [httpPort, transportPort] = [await freePort(), await freePort()];
  const heapMb = opts.heapMb ?? 512;
  const timeoutMs = opts.timeoutMs ?? 300_000;

  let security = opts.security;
  let child: ChildProcess | undefined;
  let exited: string | undefined;

  const state = {
    get home() {
      return security ? assembly.securityHome : assembly.plainHome;
    },
    get url() {
      return `${security ? 'https' : 'http'}://127.0.0.1:${httpPort}`;
    },
    get tls(): OpenSearchTls | undefined {
      return security ? { ca: security.pem.rootCa, servername: SERVERNAME } : undefined;
    },
  };

  const configure = async () => {
    await writeFile(
      join(configDir, 'opensearch.yml'),
      opensearchYml({ httpPort, transportPort, dataDir, logsDir, security }),
    );
    await writeFile(join(configDir, 'log4j2.properties'), LOG4J2);
    if (security) await writeSecurityConfig(assembly.securityHome, configDir, security);
  };

  const launch = async () => {
    const home = state.home;
    const java = [
      `-Xms${heapMb}m`,
      `-Xmx${heapMb}m`,
      '-XX:+UseG1GC',
      // OpenSearch refuses to run as root unless it cannot ask: with JNA unloadable (no system
      // copy, no unpacking) the root check, mlockall and the seccomp filter are skipped. Tests run
      // as root on CI; this keeps every file the node writes owned by the test's user.
      '-Djna.nosys=true',
      '-Djna.nounpack=true',
      // The distribution's jvm.options (2.19) for Java 17.
      '-Djava.security.manager=allow',
      '-Djava.locale.providers=SPI,COMPAT',
      '-Dfile.encoding=UTF-8',
      '-Djava.awt.headless=true',
      '-Dlog4j2.formatMsgNoLookups=true',
      // Without these two, log4j's own shutdown hook trips the security manager and SIGTERM
      // leaves a JVM that never exits.
      '-Dlog4j.shutdownHookEnabled=false',
      '-Dlog4j2.disable.jmx=true',
      '-Dio.netty.allocator.numDirectArenas=0',
      '-Dio.netty.noUnsafe=true',
      '-Dio.netty.noKeySetOptimization=true',
      '-Dio.netty.recycler.maxCapacityPerThread=0',
      '-XX:-OmitStackTraceInFastThrow',
      `-Djava.io.tmpdir=${tmp}`,
      '-cp',
      join(home, 'lib', '*'),
      `-Dopensearch.path.home=${home}`,
      `-Dopensearch.path.conf=${configDir}`,
      '-Dopensearch.distribution.type=tar',
      'org.opensearch.bootstrap.OpenSearch',
    ];
    const log = openSync(logPath, 'a');
    // setpriv --pdeathsig: the kernel kills the JVM when this process dies, even by SIGKILL,
    // so a crashed test run leaves no 300 MB JVM behind.
    const proc = spawn('setpriv', ['--pdeathsig', 'KILL', javaBinary(), ...java], {
      cwd: dir,
      env: { ...process.env, OPENSEARCH_PATH_CONF: configDir },
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    if (proc.pid === undefined) throw new Error('opensearch: could not start java');
    // A node never holds its process open (a test file's node:test child would never end); the
    // exit hook below and pdeathsig end it with the process.
    proc.unref();
    exited = undefined;
    proc.on('exit', (code, signal) => {
      exited = signal ? `signal ${signal}` : `code ${code}`;
      if (proc.pid !== undefined) running.delete(proc.pid);
    });
    running.set(proc.pid, dir);
    child = proc;
    await waitGreen(proc);
    // One node holds no replica: an index created with the default (1) would keep the cluster
    // yellow, and the node would never be green again after a restart. Only a cluster setting
    // moves that default (in opensearch.yml it is ignored); persistent, it survives restarts.
    const set = await openSearchRequest(
      { url: state.url, tls: state.tls, security },
      '/_cluster/settings',
      {
        method: 'PUT',
        admin: true,
        body: { persistent: { 'cluster.default_number_of_replicas': 0 } },
      },
    );
    if (set.status !== 200)
      throw new Error(`opensearch: cluster settings: HTTP ${set.status} ${set.text}`);
  };

  const waitGreen = async (proc: ChildProcess) => {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (;;) {
      if (exited !== undefined) {
        throw new Error(
          `opensearch exited (${exited}) before it was ready; ${logPath}:\n${await logTail(logPath)}`,
        );
      }
      try {
        const res = await openSearchRequest(
          { url: state.url, tls: state.tls, security },
          '/_cluster/health?wait_for_status=green&timeout=1s',
          { admin: true, timeoutMs: 5_000 },
        );
        if (res.status === 200 && (res.body as { status?: string }).status === 'green') {
          // The cluster is green before the plugin has loaded its security index; until then it
          // answers everyone but the admin 503. Ready means ready for the adapter's login.
          if (!security || security.initSecurityIndex === false) return;
          const plugin = await openSearchRequest(
            { url: state.url, tls: state.tls, security },
            '/_plugins/_security/health',
            { timeoutMs: 5_000 },
          );
          if (plugin.status === 200 && (plugin.body as { status?: string }).status === 'UP') return;
          last = `security plugin: HTTP ${plugin.status} ${plugin.text.slice(0, 200)}`;
        } else {
          last = `HTTP ${res.status} ${res.text.slice(0, 200)}`;
        }
      } catch (error) {
        last = error instanceof Error ? error.message : String(error);
      }
      if (Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(
          `opensearch not green within ${timeoutMs} ms (last: ${last}); ${logPath}:\n${await logTail(logPath)}`,
        );
      }
      await sleep(250);
    }
  };

  const halt = async () => {
    const proc = child;
    if (!proc || exited !== undefined) return;
    const gone = new Promise<void>((resolve) => {
      if (exited !== undefined) resolve();
      else proc.once('exit', () => resolve());
    });
    proc.kill('SIGTERM');
    const killed = await Promise.race([gone.then(() => true), sleep(20_000).then(() => false)]);
    if (!killed) {
      proc.kill('SIGKILL');
      await gone;
    }
  };

  try {
    // A free port may be taken by another process between the pick and the JVM's bind (parallel
    // test files): the node then exits with a bind error, and gets new ports.
    for (let attempt = 1; ; attempt++) {
      await configure();
      try {
        await launch();
        break;
      } catch (error) {
        const log = await logTail(logPath, 200);
        if (attempt >= 3 || exited === undefined || !/Bind(Http|Transport)Exception/.test(log)) {
          throw error;
        }
        [httpPort, transportPort] = [await freePort(), await freePort()];
      }
    }
  } catch (error) {
    await halt();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  const node: OpenSearchNode = {
    get url() {
      return state.url;
    },
    httpPort,
    transportPort,
    get pid() {
      return child?.pid ?? 0;
    },
    get home() {
      return state.home;
    },
    dir,
    dataDir,
    configDir,
    get tls() {
      return state.tls;
    },
    get security() {
      return security;
    },
    logPath,
    async stop() {
      await halt();
      // A caller's dataDir lies outside dir and is kept.
      rmSync(dir, { recursive: true, force: true });
    },
    async restart(next = {}) {
      await halt();
      if (next.security) {
        security = next.security;
        await configure();
      }
      await launch();
    },
  };
  return node;
}

export interface SecurityAdminOptions {
  /** Files written into the node's opensearch-security/ before applying it (svc's new render). */
  files?: Partial<SecurityFiles>;
  /** The admin certificate to use; default the node's (SecurityOptions.pem). */
  pem?: Pick<SecurityPem, 'rootCa' | 'adminCert' | 'adminKey'>;
  timeoutMs?: number;
}

export interface SecurityAdminResult {
  code: number | null;
  output: string;
}

/**
 * Runs the security plugin's own securityadmin tool (tools/securityadmin.sh's Java class and
 * class path) with the admin certificate, as an operator runs
 * `securityadmin.sh -cd <dir> -icl -nhnv -cacert … -cert … -key …` in the indexer pod: it loads
 * the node's whole opensearch-security/ directory into the security index. Throws with the
 * tool's output when it fails.
 */
export async function runSecurityAdmin(
  node: OpenSearchNode,
  opts: SecurityAdminOptions = {},
): Promise<SecurityAdminResult> {
  const security = node.security;
  if (!security) throw new Error('runSecurityAdmin needs a node started with security');
  const configDir = join(node.configDir, 'opensearch-security');
  for (const [file, text] of Object.entries(opts.files ?? {})) {
    if (text !== undefined) await writeFile(join(configDir, file), text);
  }
  const pem = opts.pem ?? security.pem;
  const certs = await mkdtemp(join(node.dir, 'securityadmin-'));
  const paths = {
    ca: join(certs, 'root-ca.pem'),
    cert: join(certs, 'admin.pem'),
    key: join(certs, 'admin-key.pem'),
  };
  await writeFile(paths.ca, pem.rootCa);
  await writeFile(paths.cert, pem.adminCert);
  await writeFile(paths.key, pem.adminKey, { mode: 0o600 });
  const plugin = join(node.home, 'plugins', 'opensearch-security');
  const classPath = [join(plugin, '*'), join(node.home, 'lib', '*'), join(plugin, 'deps', '*')];
  const args = [
    '-Dorg.apache.logging.log4j.simplelog.StatusLogger.level=OFF',
    '-cp',
    classPath.join(':'),
    'org.opensearch.security.tools.SecurityAdmin',
    '-cd',
    configDir,
    '-icl',
    '-nhnv',
    '-h',
    '127.0.0.1',
    '-p',
    String(node.httpPort),
    '-cacert',
    paths.ca,
    '-cert',
    paths.cert,
    '-key',
    paths.key,
  ];
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', javaBinary(), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    output += c;
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    output += c;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  }).finally(() => clearTimeout(timer));
  rmSync(certs, { recursive: true, force: true });
  if (code !== 0) throw new Error(`securityadmin exited with ${code}:\n${output.trim()}`);
  return { code, output };
}
