import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import bcrypt from 'bcryptjs';
import { stringify } from 'yaml';
import {
  INDEXER_ADMIN_DN,
  INDEXER_NODE_DN,
  INDEXER_TLS_SECRET,
  issueIndexerPki,
} from '../../src/orchestrator/indexer-pki.ts';
import {
  ADAPTER_INDEXER_SECRET,
  renderSecurityConfig,
} from '../../src/orchestrator/indexer-security.ts';
import { alertIndexSetupCalls } from '../../testcluster/opensearch/alert-index.ts';
import {
  type OpenSearchNode,
  openSearchRequest,
  type SecurityFiles,
  securityPem,
  startOpenSearch,
} from '../support/opensearch.ts';
import { extractIndexerSetup, renderTenantChart } from './rendered-setup.ts';

// The chart's security-config sidecar script (charts/svc-tenant/charts/monitor/files/), as
// `helm template` renders it into the indexer pod, run with bash against the REAL OpenSearch
// security plugin (docs/charts-tenant.md "Indexer TLS and users"). The node's security index
// was initialised from an older configuration (the image's demo users, no svc-adapter), as an
// indexer upgraded from monitor -svc-v1 has it: the plugin never reloads its files by itself.

const NAMESPACE = 'tenant-upgraded';
const K = INDEXER_TLS_SECRET.keys;
const DEMO_PASSWORD = 'admin';

let node: OpenSearchNode;
let scratch: string;
let setupDir: string;
const passwords = {
  admin: randomBytes(18).toString('base64url'),
  adapter: randomBytes(18).toString('base64url'),
};

/** The configuration an indexer from before svc's users holds: the image's demo users. */
function legacyFiles(): SecurityFiles {
  const hash = (password: string) => bcrypt.hashSync(password, 10);
  return {
    'internal_users.yml': stringify({
      _meta: { type: 'internalusers', config_version: 2 },
      admin: { hash: hash(DEMO_PASSWORD), reserved: true, backend_roles: ['admin'] },
      kibanaserver: { hash: hash('kibanaserver'), reserved: true },
    }),
    'roles.yml': stringify({ _meta: { type: 'roles', config_version: 2 } }),
    'roles_mapping.yml': stringify({
      _meta: { type: 'rolesmapping', config_version: 2 },
      all_access: { reserved: false, backend_roles: ['admin'] },
      kibana_server: { reserved: true, users: ['kibanaserver'] },
    }),
  };
}

/** The JDK the launcher runs the node with (the image's own jdk/ in the pod). */
function javaHome(): string {
  const chosen = process.env.SVC_OPENSEARCH_JAVA;
  if (chosen) return dirname(dirname(chosen));
  const jvms = '/usr/lib/jvm';
  for (const version of ['17', '21']) {
    const dir = readdirSync(jvms).find((d) => d.startsWith(`java-${version}-openjdk`));
    if (dir && existsSync(join(jvms, dir, 'bin', 'java'))) return join(jvms, dir);
  }
  throw new Error('no Java 17 or 21 under /usr/lib/jvm');
}

const pki = await issueIndexerPki(NAMESPACE, new Date());
const securityDir = () => join(scratch, 'indexer-security');

/** Mounts as the kubelet lays them out: the security Secret as a directory, the certs. */
async function mountFiles(files: Record<string, string>): Promise<void> {
  for (const [file, text] of Object.entries(files))
    await writeFile(join(securityDir(), file), text);
}

/** The sidecar as the pod runs it, with this node's port and the assembly's securityadmin.sh. */
function runScript(env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn('bash', [join(setupDir, 'security-config.sh')], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      SECURITY_DIR: securityDir(),
      SETUP_DIR: setupDir,
      CERTS_DIR: join(scratch, 'certs'),
      STATE_DIR: join(scratch, 'state'),
      INDEXER_HOST: '127.0.0.1',
      INDEXER_PORT: String(node.httpPort),
      SECURITYADMIN: join(node.home, 'plugins', 'opensearch-security', 'tools', 'securityadmin.sh'),
      OPENSEARCH_JAVA_HOME: javaHome(),
      JAVA_OPTS: '-Xms32m -Xmx96m',
      RETRY_SECONDS: '1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => {
    output += c;
  });
  child.stderr?.setEncoding('utf8').on('data', (c: string) => {
    output += c;
  });
  return { child, output: () => output };
}

async function exitOf(child: ChildProcess, timeoutMs: number): Promise<number | null> {
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  try {
    return await new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  } finally {
    clearTimeout(timer);
  }
}

const basic = (username: string, password: string) => ({ basic: { username, password } });
const searchAs = (username: string, password: string) =>
  openSearchRequest(node, '/wazuh-alerts-*/_search', {
    body: { size: 1, query: { match_all: {} } },
    ...basic(username, password),
  });

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'svc-security-config-'));
  setupDir = await extractIndexerSetup(await renderTenantChart(NAMESPACE));
  for (const dir of ['indexer-security', 'certs', 'state']) await mkdir(join(scratch, dir));
  await writeFile(join(scratch, 'certs', K.ca), pki[K.ca]);
  await writeFile(join(scratch, 'certs', K.admin), pki[K.admin]);
  await writeFile(join(scratch, 'certs', K.adminKey), pki[K.adminKey], { mode: 0o600 });
  node = await startOpenSearch({
    security: {
      pem: securityPem(pki),
      files: legacyFiles(),
      nodeDn: INDEXER_NODE_DN,
      adminDn: INDEXER_ADMIN_DN,
    },
  });
  // Some alerts already there, in an index created before the pipeline existed.
  const index = await openSearchRequest(node, '/wazuh-alerts-4.x-2026.11.27/_doc/a1?refresh=true', {
    method: 'PUT',
    body: { timestamp: '2026-11-27T10:00:00.000Z', id: 'a1', rule: { level: 5 } },
    admin: true,
  });
  assert.equal(index.status, 201, index.text);
});
after(async () => {
  await node?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
  if (setupDir) await rm(setupDir, { recursive: true, force: true });
});

test('upgrade from -svc-v1: the rendered sidecar script loads svc’s users into an existing security index; the adapter’s credential works and the old users are gone', {
  timeout: 300_000,
}, async () => {
  const adapter = ADAPTER_INDEXER_SECRET.username;
  assert.equal((await searchAs(adapter, passwords.adapter)).status, 401, 'no svc-adapter yet');
  assert.equal((await searchAs('admin', DEMO_PASSWORD)).status, 200, 'the demo admin works');

  await mountFiles(await renderSecurityConfig(passwords));
  const run = runScript({ APPLY_ONCE: '1' });
  assert.equal(await exitOf(run.child, 240_000), 0, run.output());
  assert.match(run.output(), /applied the security configuration [0-9a-f]{64}/);

  const search = await searchAs(adapter, passwords.adapter);
  assert.equal(search.status, 200, search.text);
  assert.equal((await searchAs('admin', DEMO_PASSWORD)).status, 401, 'the demo password is gone');
  assert.equal((await searchAs('kibanaserver', 'kibanaserver')).status, 401);
  assert.equal((await searchAs('admin', passwords.admin)).status, 200, 'svc-bootstrap’s admin');
  // svc-adapter reads and nothing else: no write, no other index.
  const write = await openSearchRequest(node, '/wazuh-alerts-4.x-2026.11.27/_doc/x', {
    method: 'PUT',
    body: { id: 'x' },
    ...basic(adapter, passwords.adapter),
  });
  assert.equal(write.status, 403, write.text);

  // The alert index setup after it, exactly the calls the tests' own setup makes.
  for (const call of alertIndexSetupCalls()) {
    const got = await openSearchRequest(node, call.path, { admin: true });
    assert.equal(got.status, 200, `${call.path}: ${got.text}`);
    const name = call.path.split('/').at(-1) ?? '';
    const stored = (got.body as Record<string, unknown>)[name] as Record<string, unknown>;
    for (const [key, value] of Object.entries(call.body as Record<string, unknown>)) {
      if (key === 'settings' || key === 'mappings') continue;
      assert.deepEqual(stored[key], value, `${call.path} ${key}`);
    }
  }
  const settings = await openSearchRequest(node, '/wazuh-alerts-4.x-2026.11.27/_settings', {
    admin: true,
  });
  assert.match(settings.text, /"final_pipeline":"svc-ingest-time"/, 'the existing index too');

  // A second pod start with the same files and state applies nothing (and exits at once).
  const again = runScript({ APPLY_ONCE: '1' });
  assert.equal(await exitOf(again.child, 30_000), 0, again.output());
  assert.doesNotMatch(again.output(), /applied/);
});

test('the sidecar applies a rewritten svc-indexer-security as soon as the mounted files change, without a restart', {
  timeout: 300_000,
}, async () => {
  const watching = runScript({ POLL_SECONDS: '1' });
  try {
    const rotated = { ...passwords, adapter: randomBytes(18).toString('base64url') };
    await mountFiles(await renderSecurityConfig(rotated));
    for (const deadline = Date.now() + 180_000; ; await sleep(500)) {
      const status = (await searchAs(ADAPTER_INDEXER_SECRET.username, rotated.adapter)).status;
      if (status === 200) break;
      assert.ok(Date.now() < deadline, `the new password never worked: ${watching.output()}`);
    }
    assert.equal(
      (await searchAs(ADAPTER_INDEXER_SECRET.username, passwords.adapter)).status,
      401,
      'the old password no longer works',
    );
    assert.equal(watching.child.exitCode, null, 'still watching');
  } finally {
    watching.child.kill('SIGTERM');
    await exitOf(watching.child, 10_000);
  }
});
