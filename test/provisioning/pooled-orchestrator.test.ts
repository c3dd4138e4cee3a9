import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Pgbouncer, startPgbouncer } from '../support/pgbouncer.ts';
import { testStorageClass } from '../support/volumes.ts';
import {
  createTenantVia,
  lifecycle,
  svcProcessEnv,
  tenantConfig,
  uniqueSlug,
  useOrchestration,
  waitForState,
  waitForStep,
} from './support.ts';

/**
 * `svc orchestrator` as its own OS process whose transactional pools go through a real
 * PgBouncer in transaction-pooling mode (docs/operations.md "Connection pooling"); its tenant
 * locks stay on direct connections. It provisions a tenant on the test cluster from start to
 * the installed package.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
let child: ChildProcess | undefined;
let dataDir: string;
let bouncer: Pgbouncer;
let stderr = '';

// Registered first, so it runs before the orchestration closes (hooks run in order): the
// process must be gone before its database is dropped.
after(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  await bouncer?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});
// The in-process orchestrator stays stopped: the pooled process does the work. Top-level
// `before` hooks do not wait for each other: the pooler starts in the orchestration's own.
const o = useOrchestration({ run: false }, async (live) => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'svc-orchestrator-'));
  bouncer = await startPgbouncer(live.db.target, {
    poolSize: 3,
    admin: live.db.target.credentials.admin,
  });
});

test('svc orchestrator through PgBouncer provisions a tenant to its installed package; locks stay direct', {
  timeout: 400_000,
}, async () => {
  child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'orchestrator'], {
    cwd: root,
    env: svcProcessEnv(o, dataDir, {
      SVC_TENANT_STORAGE_CLASS: testStorageClass,
      SVC_ADAPTER_IMAGE: 'registry.test/svc-adapter:0.1.0',
      SVC_API_URL: o.deps.settings.apiUrl,
      SVC_ORCHESTRATOR_POLL: '200ms',
      SVC_DATABASE_POOLER_HOST: bouncer.host,
      SVC_DATABASE_POOLER_PORT: String(bouncer.port),
    }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  const id = await createTenantVia(o, tenantConfig(uniqueSlug('pooled')));
  await waitForState(o, id, 'provisioning');
  await waitForStep(o, id, 'step:package_ready').catch((error: unknown) => {
    throw new Error(`${String(error)}\n${stderr}`);
  });
  assert.ok(!(await lifecycle(o, id)).some((s) => s.startsWith('error')), 'no failed step');
  assert.equal(child.exitCode, null, stderr);
  // The in-process API is direct: every svc_app client on the pooler is the orchestrator's.
  const clients = (await bouncer.show('CLIENTS')).map((c) => `${c.user}/${c.application_name}`);
  assert.ok(clients.includes(`${o.db.target.credentials.app.user}/svc-app`), clients.join(' '));
  assert.ok(!clients.some((c) => c.endsWith('/svc-tenant-locks')), clients.join(' '));
});
