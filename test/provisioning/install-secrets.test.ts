import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createSvcClient } from '../../contracts/index.ts';
import { freePort } from '../../src/db/embedded.ts';
import { installSecretNames } from '../../src/domains/tenants/tenant-creation.ts';
import { collectOrphanSecrets, ORPHAN_GRACE_MS } from '../../src/orchestrator/orphans.ts';
import { seedUser } from '../support/api.ts';
import { ownOrchestrator } from './inject.ts';
import {
  createTenantVia,
  PASSWORD,
  svcProcessEnv,
  tenantConfig,
  uniqueSlug,
  useOrchestration,
  waitForStep,
} from './support.ts';

const o = useOrchestration({ run: false });

async function names(): Promise<string[]> {
  const list = await o.core.listNamespacedSecret({ namespace: o.installNamespace });
  return list.items.map((s) => s.metadata?.name ?? '').sort();
}

test('issue 18 item 6: the orchestrator collects orphans in its reconcile pass (on start and on schedule)', async () => {
  const orphan = randomUUID();
  const orphanNames = installSecretNames(orphan);
  await o.deps.secrets.create(orphanNames.llm, { api_key: 'k' }, { 'tenant-id': orphan });
  // An orchestrator whose clock is past the grace period; its own pass does the collecting.
  const own = ownOrchestrator(o, {
    ...o.deps,
    now: () => new Date(Date.now() + ORPHAN_GRACE_MS + 60_000),
  });
  try {
    await own.orchestrator.reconcile();
    assert.ok(!(await names()).includes(orphanNames.llm), 'the orphan is gone');
  } finally {
    await own.stop();
  }
});

test('issue 18 item 6: Secrets of a creation that never committed are collected; nothing svc did not create is touched', async () => {
  const live = await createTenantVia(o, tenantConfig(uniqueSlug('live')));
  // What a creation killed before its commit leaves: the Secrets exactly as createTenant
  // writes them (svc's labels, the fresh tenant id), and no tenant row with that id.
  const orphan = randomUUID();
  const orphanNames = installSecretNames(orphan);
  await o.deps.secrets.create(
    orphanNames.bootstrap,
    { 'tenant-id': orphan },
    { 'tenant-id': orphan },
  );
  await o.deps.secrets.create(orphanNames.llm, { api_key: 'k' }, { 'tenant-id': orphan });
  // Not svc's: the same name without svc's labels, svc's labels on a name svc never gives,
  // another manager's label.
  const stranger = randomUUID();
  await o.core.createNamespacedSecret({
    namespace: o.installNamespace,
    body: { metadata: { name: installSecretNames(stranger).bootstrap }, stringData: { a: 'b' } },
  });
  await o.core.createNamespacedSecret({
    namespace: o.installNamespace,
    body: {
      metadata: { name: 'svc-config', labels: { 'managed-by': 'svc', 'tenant-id': stranger } },
      stringData: { a: 'b' },
    },
  });
  await o.core.createNamespacedSecret({
    namespace: o.installNamespace,
    body: {
      metadata: {
        name: installSecretNames(stranger).llm,
        labels: { 'managed-by': 'someone-else', 'tenant-id': stranger },
      },
      stringData: { a: 'b' },
    },
  });
  const before = await names();
  const deps = {
    provisioning: o.deps.provisioning,
    secrets: o.deps.secrets,
    now: () => new Date(),
    logger: o.deps.logger,
  };

  // Within the grace period a creation may still be committing: nothing is collected.
  assert.deepEqual(await collectOrphanSecrets(deps), []);
  assert.deepEqual(await names(), before);

  // Past it (the clock moved on by the grace period), only the orphans go.
  const later = { ...deps, now: () => new Date(Date.now() + ORPHAN_GRACE_MS + 60_000) };
  assert.deepEqual(
    (await collectOrphanSecrets(later)).sort(),
    [orphanNames.bootstrap, orphanNames.llm].sort(),
  );
  assert.deepEqual(
    await names(),
    before.filter((n) => n !== orphanNames.bootstrap && n !== orphanNames.llm),
  );
  for (const name of Object.values(installSecretNames(live))) {
    if (before.includes(name))
      assert.ok((await names()).includes(name), `${name} of a live tenant`);
  }
  assert.ok((await names()).includes(installSecretNames(stranger).bootstrap));
  assert.ok((await names()).includes('svc-config'));
});

test('issue 18 item 8: a lost bootstrap Secret is made again with a new adapter credential that the database agrees with', async () => {
  const id = await createTenantVia(o, tenantConfig(uniqueSlug('restore')));
  const name = installSecretNames(id).bootstrap;
  const original = await o.deps.secrets.read(name);
  const hashBefore = await o.db.pools.mssp.query<{ credential_hash: string }>(
    'SELECT credential_hash FROM adapter_credentials WHERE tenant_id = $1',
    [id],
  );
  assert.equal(await o.deps.provisioning.restoreBootstrapSecret(o.deps.secrets, id), false);
  await o.deps.secrets.remove(name);
  assert.equal(await o.deps.provisioning.restoreBootstrapSecret(o.deps.secrets, id), true);
  const restored = await o.deps.secrets.read(name);
  assert.ok(restored?.['adapter-bootstrap-credential']);
  assert.notEqual(
    restored['adapter-bootstrap-credential'],
    original?.['adapter-bootstrap-credential'],
  );
  const hashAfter = await o.db.pools.mssp.query<{ credential_hash: string }>(
    'SELECT credential_hash FROM adapter_credentials WHERE tenant_id = $1',
    [id],
  );
  assert.notEqual(hashAfter.rows[0]?.credential_hash, hashBefore.rows[0]?.credential_hash);
  const res = await fetch(`${o.api.url}/api/internal/adapter/bootstrap`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      tenant_id: id,
      credential: restored['adapter-bootstrap-credential'],
    }),
  });
  assert.equal(res.status, 200, await res.text());
});

/** `svc serve` as its own OS process (API only), on this file's database, install and cluster. */
async function startServe(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const env = svcProcessEnv(o, dataDir, {
    SVC_HOST: '127.0.0.1',
    SVC_PORT: String(port),
    SVC_ORCHESTRATOR: 'off',
    SVC_MSSP_HOSTNAME: 'mssp.test',
  });

  const root = fileURLToPath(new URL('../../', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve'], {
    cwd: root,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`svc serve exited with ${child.exitCode}`);
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { child, url };
    if (i > 600) throw new Error('svc serve did not come up');
    await sleep(100);
  }
}

test('issue 18 item 8: a tenant whose bootstrap Secret was lost (cluster replaced) still provisions', async () => {
  const id = await createTenantVia(o, tenantConfig(uniqueSlug('lost')));
  const name = installSecretNames(id).bootstrap;
  await o.deps.secrets.remove(name);
  const own = ownOrchestrator(o, o.deps);
  try {
    await waitForStep(o, id, 'step:bootstrap_secrets_written');
  } finally {
    await own.stop();
  }
  assert.ok(await o.deps.secrets.read(name), 'the bootstrap Secret was issued anew');
});

test('issue 18 item 6: SIGKILL of a real svc during 12 concurrent creations leaves only Secrets the collection removes', {
  timeout: 60_000,
}, async () => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'svc-serve-'));
  const { child, url } = await startServe(dataDir);
  try {
    const email = `kill-${randomBytes(4).toString('hex')}@mssp.test`;
    await seedUser(o.db, o.api.hasher, { email, role: 'mssp_admin', password: PASSWORD });
    const client = createSvcClient({ baseUrl: url, headers: { origin: 'https://mssp.test' } });
    assert.equal((await client.auth.login({ body: { email, password: PASSWORD } })).status, 200);
    const before = new Set(await names());
    const creations = Array.from({ length: 12 }, () =>
      client.mssp.createTenant({ body: tenantConfig(uniqueSlug('killed')) }).catch(() => undefined),
    );
    // Kill as soon as the first new Secret exists: other creations are between their Secret
    // writes and their commit.
    for (let i = 0; !(await names()).some((n) => !before.has(n)); i++) {
      if (i > 2000) throw new Error('no Secret appeared');
      await sleep(5);
    }
    child.kill('SIGKILL');
    await Promise.all(creations);
    // A child killed by a signal keeps exitCode null (signalCode is set): test both, or a
    // child that already exited leaves this waiting for an 'exit' that has come and gone.
    await new Promise((r) =>
      child.exitCode === null && child.signalCode === null ? child.once('exit', r) : r(null),
    );

    const secrets = await o.deps.secrets.list('managed-by=svc,tenant-id');
    const rows = await o.db.pools.mssp.query<{ id: string }>('SELECT id FROM tenants');
    const committed = new Set(rows.rows.map((r) => r.id));
    const orphans = secrets
      .filter((s) => !before.has(s.name) && !committed.has(s.labels['tenant-id'] ?? ''))
      .map((s) => s.name)
      .sort();
    const kept = secrets
      .filter((s) => committed.has(s.labels['tenant-id'] ?? ''))
      .map((s) => s.name);
    process.stderr.write(
      `# SIGKILL mid-create: ${orphans.length} orphan Secrets, ${kept.length} Secrets of committed tenants\n`,
    );
    const later = () => new Date(Date.now() + ORPHAN_GRACE_MS + 60_000);
    const deps = {
      provisioning: o.deps.provisioning,
      secrets: o.deps.secrets,
      now: later,
      logger: o.deps.logger,
    };
    assert.deepEqual((await collectOrphanSecrets(deps)).sort(), orphans);
    const left = new Set(await names());
    for (const name of kept) assert.ok(left.has(name), `${name} of a committed tenant was removed`);
    for (const name of orphans) assert.ok(!left.has(name), `${name} was not collected`);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  }
});
