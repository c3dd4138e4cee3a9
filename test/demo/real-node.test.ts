import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { freePort } from '../../src/db/embedded.ts';
import { isRunning } from '../../testcluster/harness.ts';
import { nodePaths } from '../../testcluster/node/configs.ts';
import { mountsUnder, processesWithArg } from '../../testcluster/node/real-node.ts';
import {
  type Demo,
  type DemoState,
  portFree,
  printedLogins,
  signIn,
  startDemo,
  stopDemo,
  triagedIncidents,
  waitForOutput,
} from './demo-process.ts';

/**
 * Issue 31 "Done when": `npm run demo -- --real-node` run as a real child process, headless, in
 * its own directory and on a free port, with one tenant (`--tenants 1`: the second would only
 * double the node's start-up work). The test knows what the demo printed and its `state.json`
 * (the cluster's admin kubeconfig and the real node's name, network namespace and directory):
 * the tenant is active through svc's API, its adapter and indexer are real containers on the real
 * node running svc's and the indexer's images, an alert the demo wrote into the indexer Pod
 * reaches the customer's portal as a triaged incident, and Ctrl-C leaves nothing behind.
 * docs/demo.md "The test".
 */

const run = promisify(execFile);
const SLUG = 'acme';
const NAMESPACE = `tenant-${SLUG}`;

describe('issue 31: npm run demo -- --real-node', () => {
  let demo: Demo;
  let port = 0;
  let state: DemoState;
  let startedAt = 0;

  before(async () => {
    port = await freePort();
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-demo-real-node-'));
    startedAt = Date.now();
    // --headless-for only bounds a run whose test died; the test stops it with SIGINT.
    demo = startDemo(
      ['--real-node', '--tenants', '1', '--port', String(port), '--headless-for', '1200'],
      dir,
    );
    // "ready" comes after step 7, which waits for the tenant to be active.
    await waitForOutput(demo, /^demo: ready$/m, 720_000);
    state = JSON.parse(await readFile(path.join(dir, 'state.json'), 'utf8')) as DemoState;
    const at = (line: RegExp) => ((demo.printedAt(line) ?? startedAt) - startedAt) / 1000;
    console.log(
      `demo --real-node: cluster at ${at(/^\[2\/8\] Local/).toFixed(1)} s, svc at ` +
        `${at(/^\[5\/8\]/).toFixed(1)} s, node ready at ${at(/^demo: real node \S+ ready$/).toFixed(1)} s, ` +
        `tenant created at ${at(/^\[6\/8\]/).toFixed(1)} s, active at ` +
        `${at(/^\[8\/8\]/).toFixed(1)} s, ready at ${at(/^demo: ready$/).toFixed(1)} s`,
    );
  });

  after(async () => {
    if (!demo) return;
    await stopDemo(demo);
    await rm(demo.dir, { recursive: true, force: true });
  });

  test('the tenant is active through the MSSP API, heard from by its adapter', async () => {
    const [staff] = printedLogins(demo.output(), 'console');
    assert.ok(staff, demo.output());
    assert.deepEqual(
      printedLogins(demo.output(), 'portal').map((l) => l.url),
      [`http://${SLUG}.localhost:${port}`],
      'one tenant, as --tenants 1 asked',
    );
    const mssp = await signIn(staff);
    const list = await mssp.mssp.listTenants({ query: {} });
    assert.equal(list.status, 200);
    if (list.status !== 200) return;
    assert.deepEqual(
      list.body.items.map((t) => [t.slug, t.state]),
      [[SLUG, 'active']],
    );
    const id = list.body.items[0]?.id ?? '';
    const detail = await mssp.mssp.getTenant({ params: { tenant_id: id } });
    assert.equal(detail.status, 200);
    if (detail.status !== 200) return;
    assert.ok(detail.body.adapter, 'a heartbeat from the adapter made it active');
  });

  test("the adapter and the indexer run as real containers on the real node: svc's image, Running, Ready", async () => {
    const node = state.realNode;
    assert.ok(node, 'state.json names the real node');
    assert.ok(state.kubeconfigPath, 'state.json names the cluster');
    const kc = new KubeConfig();
    kc.loadFromFile(state.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    const pods = (await core.listNamespacedPod({ namespace: NAMESPACE })).items;
    const pod = (workload: string): V1Pod => {
      const found = pods.find((p) => p.metadata?.name?.startsWith(`${workload}-`));
      assert.ok(found, `${workload} Pod in ${NAMESPACE}: ${pods.map((p) => p.metadata?.name)}`);
      return found;
    };
    const { version } = JSON.parse(
      await readFile(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    const running = await runningTasks(nodePaths(node.dir).containerdSocket);
    for (const [workload, image] of [
      ['svc-adapter', `localhost/svc:${version}`],
      ['monitor-indexer', undefined],
    ] as const) {
      const p = pod(workload);
      assert.equal(p.spec?.nodeName, node.name, `${workload} is placed on the real node`);
      assert.equal(p.status?.phase, 'Running', workload);
      const containers = p.status?.containerStatuses ?? [];
      assert.notEqual(containers.length, 0, workload);
      if (image) assert.equal(containers[0]?.image, image, `${workload} runs svc's image`);
      for (const container of containers) {
        const what = `${workload}/${container.name}`;
        assert.ok(container.ready, `${what} passed its readiness probe`);
        // The node's own containerd runs it: kwok reports Running without any container.
        const id = (container.containerID ?? '').replace(/^containerd:\/\//, '');
        assert.ok(running.includes(id), `${what}'s container ${id} is a running task`);
      }
    }
    // The rest of the package has no image here: kwok's, not the real node's.
    assert.notEqual(pod('monitor-manager').spec?.nodeName, node.name);
  });

  test("alerts the demo writes into the indexer Pod reach the portal's incidents, triaged", {
    timeout: 240_000,
  }, async () => {
    const [login] = printedLogins(demo.output(), 'portal');
    assert.ok(login);
    await triagedIncidents(login);
    console.log(
      `incidents closed and awaiting review ${((Date.now() - startedAt) / 1000).toFixed(1)} s ` +
        'after the demo started',
    );
  });

  test("Ctrl-C (SIGINT) stops everything: processes, the node's network namespace, its mounts, its containers", {
    timeout: 180_000,
  }, async () => {
    const node = state.realNode;
    assert.ok(node);
    const names = new Set(state.processes.map((p) => p.name));
    for (const name of ['kube-apiserver', 'svc serve', 'postgres', 'real node', 'svc forwarder']) {
      assert.ok(names.has(name), `state.json records ${name}: ${[...names]}`);
    }
    assert.ok(state.processes.every(isRunning), 'all of them run before Ctrl-C');
    const socket = nodePaths(node.dir).containerdSocket;
    assert.notDeepEqual(await processesWithArg(socket), [], 'container shims run before');
    const stoppingFrom = Date.now();
    demo.child.kill('SIGINT');
    assert.equal(await demo.exited, 0, demo.output());
    console.log(`demo stopped in ${((Date.now() - stoppingFrom) / 1000).toFixed(1)} s:`);
    console.log(
      demo
        .output()
        .match(/^ {2}stopped .*$/gm)
        ?.join('\n'),
    );
    assert.match(demo.output(), /^demo: stopped; nothing it started is running$/m);
    assert.deepEqual(state.processes.filter(isRunning), []);
    assert.deepEqual(await processesWithArg(socket), [], 'no container shim outlives the node');
    for (const p of state.ports) assert.ok(await portFree(p), `port ${p} is free`);
    const { stdout } = await run('ip', ['netns', 'list']);
    assert.doesNotMatch(stdout, new RegExp(`^${node.netnsName}\\b`, 'm'));
    assert.equal(existsSync(`/run/netns/${node.netnsName}`), false);
    assert.deepEqual(await mountsUnder(demo.dir), []);
    assert.deepEqual(await mountsUnder(node.dir), []);
    assert.equal(existsSync(node.dir), false, "the node's directory is removed");
    assert.equal(existsSync(demo.dir), false, 'its files are removed (no --keep-data)');
  });
});

test('--tenants other than 1-2 exits 2 with a one-line hint and starts nothing', async () => {
  await Promise.all(
    ['0', '3', 'two', '1.5'].map(async (bad) => {
      const dir = await mkdtemp(path.join(tmpdir(), 'svc-demo-flag-'));
      try {
        const demo = startDemo(['--real-node', '--tenants', bad], dir);
        assert.equal(await demo.exited, 2, demo.output());
        assert.match(
          demo.output(),
          /^--tenants: expected a number of tenants 1-2\nusage: npm run demo -- .*--tenants/,
        );
        assert.equal(existsSync(path.join(dir, 'state.json')), false);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }),
  );
});

/** Container ids the node's containerd runs (`ctr tasks ls`, status RUNNING). */
async function runningTasks(socket: string): Promise<string[]> {
  const { stdout } = await run('ctr', [
    '--address',
    socket,
    '--namespace',
    'k8s.io',
    'tasks',
    'ls',
  ]);
  return stdout
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((words) => words[2] === 'RUNNING')
    .map((words) => words[0] ?? '');
}
