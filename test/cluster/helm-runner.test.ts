import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { createHelmRunner, HelmError, type HelmRelease } from '../../src/cluster/index.ts';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { getTestCluster, waitUntil } from '../support/cluster.ts';

const chart = fileURLToPath(new URL('../fixtures/charts/stateful', import.meta.url));
const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
const helm = createHelmRunner({ kubeconfigPath: cluster.kubeconfigPath });
const namespaces: string[] = [];
/** Never schedulable: no node carries this label, so --wait can only time out. */
const nowhere = { deploymentNodeSelector: { 'svc.test/no-such-node': 'true' } };
let scratch = '';

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'helm-runner-'));
});

after(async () => {
  await rm(scratch, { recursive: true, force: true });
  await Promise.all(namespaces.map((name) => core.deleteNamespace({ name }).catch(() => {})));
});

async function namespace(prefix: string): Promise<string> {
  const name = await createTestNamespace(cluster, prefix);
  namespaces.push(name);
  return name;
}

/** A helm that records its argv and pid, then becomes the real helm (same pid, via exec). */
async function recordingHelm(): Promise<{
  binary: string;
  args: () => Promise<string[]>;
  pid: () => Promise<number>;
}> {
  const dir = await mkdtemp(join(scratch, 'wrap-'));
  const binary = join(dir, 'helm');
  await writeFile(
    binary,
    `#!/bin/sh\necho $$ > "${dir}/pid"\nprintf '%s\\n' "$@" > "${dir}/args"\nexec "${join(cluster.binDir, 'helm')}" "$@"\n`,
  );
  await chmod(binary, 0o700);
  return {
    binary,
    args: async () => (await readFile(join(dir, 'args'), 'utf8')).trimEnd().split('\n'),
    pid: () =>
      waitUntil(
        'the wrapper pid',
        async () => Number(await readFile(join(dir, 'pid'), 'utf8')) || undefined,
      ),
  };
}

async function configMessage(ns: string, release: string): Promise<string | undefined> {
  const cm = await core.readNamespacedConfigMap({ namespace: ns, name: `${release}-config` });
  return cm.data?.message;
}

function withoutUpdated(release: HelmRelease | undefined) {
  assert.ok(release);
  const { updated, ...rest } = release;
  assert.match(updated ?? '', /^\d{4}-\d\d-\d\dT/);
  return rest;
}

test('helm runner: install --wait, read back, upgrade, rollback, uninstall twice', {
  timeout: 180_000,
}, async () => {
  const ns = await namespace('helm-life');
  const first = { message: 'first', configLabel: 'one' };
  const opts = { release: 'app', namespace: ns, chart, timeoutMs: 90_000, wait: true };

  assert.equal(await helm.status({ release: 'app', namespace: ns }), undefined);
  const installed = await helm.install({ ...opts, values: first });
  assert.deepEqual(withoutUpdated(installed), {
    name: 'app',
    namespace: ns,
    revision: 1,
    status: 'deployed',
    chart: 'stateful',
    chartVersion: '0.2.0',
    appVersion: '2.0.0',
  });
  assert.deepEqual(
    withoutUpdated(await helm.status({ release: 'app', namespace: ns })),
    withoutUpdated(installed),
  );
  assert.deepEqual(await helm.values({ release: 'app', namespace: ns }), first);
  const manifest = await helm.manifest({ release: 'app', namespace: ns });
  assert.match(manifest, /kind: StatefulSet/);
  assert.match(manifest, /message: "first"/);
  assert.equal(await configMessage(ns, 'app'), 'first');
  // --wait covered the StatefulSet, whose pod needs its PVC bound first.
  const db = await apps.readNamespacedStatefulSet({ namespace: ns, name: 'app-db' });
  assert.equal(db.status?.readyReplicas, 1);
  const pvc = await core.readNamespacedPersistentVolumeClaim({
    namespace: ns,
    name: 'data-app-db-0',
  });
  assert.equal(pvc.status?.phase, 'Bound');

  await assert.rejects(helm.install({ ...opts, values: first }), (error: unknown) => {
    assert.ok(error instanceof HelmError);
    assert.equal(error.operation, 'install');
    assert.match(error.message, /already exists/);
    return true;
  });

  const second = { message: 'second' };
  const upgraded = await helm.upgrade({ ...opts, values: second });
  assert.equal(upgraded.revision, 2);
  assert.equal(upgraded.status, 'deployed');
  assert.deepEqual(await helm.values({ release: 'app', namespace: ns }), second);
  assert.equal(await configMessage(ns, 'app'), 'second');

  await helm.rollback({
    release: 'app',
    namespace: ns,
    revision: 1,
    timeoutMs: 90_000,
    wait: true,
  });
  const rolledBack = await helm.status({ release: 'app', namespace: ns });
  assert.equal(rolledBack?.revision, 3);
  assert.equal(rolledBack?.status, 'deployed');
  assert.deepEqual(await helm.values({ release: 'app', namespace: ns }), first);
  assert.equal(await configMessage(ns, 'app'), 'first');

  await helm.uninstall({ release: 'app', namespace: ns, timeoutMs: 90_000, wait: true });
  assert.equal(await helm.status({ release: 'app', namespace: ns }), undefined);
  await assert.rejects(apps.readNamespacedDeployment({ namespace: ns, name: 'app-web' }));
  await helm.uninstall({ release: 'app', namespace: ns, timeoutMs: 90_000, wait: true });
});

test('helm runner: an object the API server rejects fails install with helm stderr', {
  timeout: 120_000,
}, async () => {
  const ns = await namespace('helm-invalid');
  await assert.rejects(
    helm.install({
      release: 'bad',
      namespace: ns,
      chart,
      values: { configLabel: 'not a valid label!' },
      timeoutMs: 30_000,
      wait: true,
    }),
    (error: unknown) => {
      assert.ok(error instanceof HelmError);
      assert.equal(error.operation, 'install');
      assert.equal(error.exitCode, 1);
      assert.equal(error.timedOut, false);
      assert.match(error.stderr, /ConfigMap "bad-config" is invalid/);
      assert.match(error.stderr, /Invalid value/);
      return true;
    },
  );
  assert.equal((await helm.status({ release: 'bad', namespace: ns }))?.status, 'failed');
});

test('helm runner: --wait past timeoutMs fails as timedOut; upgrade then repairs the release', {
  timeout: 120_000,
}, async () => {
  const ns = await namespace('helm-timeout');
  const opts = { release: 'slow', namespace: ns, chart, wait: true };
  const started = Date.now();
  await assert.rejects(
    helm.install({ ...opts, values: nowhere, timeoutMs: 5_000 }),
    (error: unknown) => {
      assert.ok(error instanceof HelmError);
      assert.equal(error.timedOut, true);
      assert.equal(error.exitCode, 1);
      return true;
    },
  );
  const elapsed = Date.now() - started;
  console.log(`install with timeoutMs 5000 failed after ${elapsed} ms`);
  assert.ok(elapsed < 15_000, `took ${elapsed} ms`);
  assert.equal((await helm.status({ release: 'slow', namespace: ns }))?.status, 'failed');

  const repaired = await helm.upgrade({ ...opts, values: {}, timeoutMs: 60_000 });
  assert.equal(repaired.status, 'deployed');
  assert.equal(repaired.revision, 2);
});

test('helm runner: values reach helm on stdin, never in its argv', {
  timeout: 120_000,
}, async () => {
  const ns = await namespace('helm-argv');
  const secret = `sekret-${randomBytes(8).toString('hex')}`;
  const wrapper = await recordingHelm();
  const runner = createHelmRunner({
    binary: wrapper.binary,
    kubeconfigPath: cluster.kubeconfigPath,
  });
  await runner.install({
    release: 'quiet',
    namespace: ns,
    chart,
    values: { message: secret },
    timeoutMs: 60_000,
    wait: false,
  });
  const args = await wrapper.args();
  assert.ok(args.includes('--values'), args.join(' '));
  assert.equal(args[args.indexOf('--values') + 1], '-');
  assert.ok(!args.some((arg) => arg.includes(secret)), args.join(' '));
  assert.equal(await configMessage(ns, 'quiet'), secret);
});

test('helm runner: aborting the signal kills the running helm', { timeout: 120_000 }, async () => {
  const ns = await namespace('helm-abort');
  const wrapper = await recordingHelm();
  const controller = new AbortController();
  const runner = createHelmRunner({
    binary: wrapper.binary,
    kubeconfigPath: cluster.kubeconfigPath,
    signal: controller.signal,
  });
  const install = runner.install({
    release: 'stuck',
    namespace: ns,
    chart,
    values: nowhere,
    timeoutMs: 300_000,
    wait: true,
  });
  const pid = await wrapper.pid();
  // Let helm get into its wait before pulling the plug.
  await waitUntil('the release to be pending', async () =>
    (await helm.status({ release: 'stuck', namespace: ns }))?.status === 'pending-install'
      ? true
      : undefined,
  );
  const started = Date.now();
  controller.abort();
  await assert.rejects(install, (error: unknown) => {
    assert.ok(error instanceof HelmError);
    assert.match(error.message, /aborted/);
    assert.equal(error.timedOut, false);
    return true;
  });
  console.log(`helm gone ${Date.now() - started} ms after abort`);
  assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
  // SIGTERM first lets helm record the failure instead of leaving pending-install behind.
  const after = await helm.status({ release: 'stuck', namespace: ns });
  console.log(`release status after abort: ${after?.status}`);
  await assert.rejects(
    runner.status({ release: 'stuck', namespace: ns }),
    /aborted before it started/,
  );
});
