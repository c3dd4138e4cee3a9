import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { PROVISIONING_STEPS } from '../../src/domains/provisioning/provisioning-types.ts';
import { testStorageClass } from '../support/volumes.ts';
import {
  createTenantVia,
  lifecycle,
  svcProcessEnv,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
  waitForState,
  waitForStep,
} from './support.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
let child: ChildProcess | undefined;
let dataDir: string;

// Registered first, so it runs before the orchestration closes (hooks run in order): the
// process must be gone before its database is dropped.
after(async () => {
  if (child?.exitCode === null) child.kill('SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});
// This file's own orchestrator stays stopped until the other one has been killed.
const o = useOrchestration({ run: false });
before(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'svc-orchestrator-'));
});

/** `svc orchestrator` as its own OS process, on this file's database, install and cluster. */
function orchestratorEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return svcProcessEnv(o, dataDir, {
    SVC_TENANT_STORAGE_CLASS: testStorageClass,
    SVC_ADAPTER_IMAGE: 'registry.test/svc-adapter:0.1.0',
    SVC_API_URL: o.deps.settings.apiUrl,
    ...extra,
  });
}

function startOrchestratorProcess(): { stderr: () => string } {
  const env = orchestratorEnv({ SVC_ORCHESTRATOR_POLL: '200ms' });

  child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'orchestrator'], {
    cwd: root,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  return { stderr: () => stderr };
}

test('§9.4 an orchestrator killed mid-flow (SIGKILL) is resumed by another after the last completed step', {
  timeout: 400_000,
}, async () => {
  const slug = uniqueSlug('crash');
  const id = await createTenantVia(o, tenantConfig(slug));
  const first = startOrchestratorProcess();

  // Kill it as soon as it has completed a step past the API's own, before it finishes.
  const deadline = Date.now() + 120_000;
  let before: string[] = [];
  for (;;) {
    before = await lifecycle(o, id);
    if (before.includes('step:namespace_created')) break;
    if (child?.exitCode !== null) throw new Error(`svc orchestrator exited: ${first.stderr()}`);
    if (Date.now() > deadline) throw new Error(`no progress: ${first.stderr()}`);
    await sleep(20);
  }
  const exited = new Promise((resolve) => child?.once('exit', resolve));
  child?.kill('SIGKILL');
  await exited;
  const killedAt = await lifecycle(o, id);
  assert.ok(
    !killedAt.includes('step:package_ready'),
    `killed before the end: ${killedAt.join(', ')}`,
  );
  const row = await tenantRow(o, id);
  assert.equal(row?.error_details, null, 'a crash is not a failure: nothing rolled back');

  // The survivor takes over; the dead process's lock went with its connection.
  o.orchestrator.start();
  await waitForState(o, id, 'provisioning');
  await waitForStep(o, id, 'step:package_ready');
  const steps = (await lifecycle(o, id)).filter((s) => s.startsWith('step:'));
  for (const step of PROVISIONING_STEPS) {
    assert.equal(
      steps.filter((s) => s === `step:${step}`).length,
      1,
      `${step} recorded exactly once: ${steps.join(', ')}`,
    );
  }
  assert.ok(!(await lifecycle(o, id)).some((s) => s.startsWith('error')), 'no failed step');
  const token = (await o.api.tokens.mintAdapter({ tenantId: id })).token;
  const beat = await fetch(`${o.api.url}/api/internal/adapter/health`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ version: '0.1.0' }),
  });
  assert.deepEqual(await beat.json(), { tenant_state: 'active', activated: true });
});

test('`svc orchestrator` stopped by SIGTERM the moment /metrics answers shuts down cleanly: exit 0', {
  timeout: 120_000,
}, async (t) => {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const metricsPort = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  const env = orchestratorEnv({ SVC_METRICS_PORT: String(metricsPort), SVC_LOG_LEVEL: 'info' });
  const orchestrator = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'orchestrator'],
    {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  let output = '';
  orchestrator.stdout?.on('data', (d) => {
    output += d;
  });
  const exited = once(orchestrator, 'exit');
  t.after(() => (orchestrator.exitCode === null ? orchestrator.kill('SIGKILL') : undefined));
  const deadline = Date.now() + 60_000;
  for (;;) {
    assert.equal(orchestrator.exitCode, null, `exited before serving /metrics: ${output}`);
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).catch(() => undefined);
    if (res?.status === 200) break;
    assert.ok(Date.now() < deadline, 'no /metrics within 60 s');
    await sleep(5);
  }
  orchestrator.kill('SIGTERM');
  const [code] = (await exited) as [number | null];
  assert.equal(code, 0, output);
  assert.ok(output.includes('shutting down'), output);
});
