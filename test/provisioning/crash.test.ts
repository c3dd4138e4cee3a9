import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
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
function startOrchestratorProcess(): { stderr: () => string } {
  const env = svcProcessEnv(o, dataDir, {
    SVC_TENANT_STORAGE_CLASS: testStorageClass,
    SVC_ADAPTER_IMAGE: 'registry.test/svc-adapter:0.1.0',
    SVC_API_URL: o.deps.settings.apiUrl,
    SVC_ORCHESTRATOR_POLL: '200ms',
  });

  const root = fileURLToPath(new URL('../../', import.meta.url));
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
