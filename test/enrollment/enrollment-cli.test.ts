import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { installSecretNames } from '../../src/domains/tenants/tenant-creation.ts';
import { auditRows } from '../internal/support.ts';
import { activeTenant, PASSWORD, useOrchestration } from '../provisioning/support.ts';
import { seedUser } from '../support/api.ts';

// `svc tenants enrollment <slug> [--rotate]` (docs/enrollment.md, docs/cli-tenants.md) as a real
// child process against the API of an orchestration with a provisioned tenant: the same audited
// reveal and rotation as the console, printed for a terminal or as JSON.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
let email = '';
let analystEmail = '';

const o = useOrchestration({}, async (live) => {
  email = `cli-enr-${randomBytes(4).toString('hex')}@mssp.test`;
  analystEmail = `cli-enr-analyst-${randomBytes(4).toString('hex')}@mssp.test`;
  await seedUser(live.db, live.api.hasher, { email, role: 'mssp_admin', password: PASSWORD });
  await seedUser(live.db, live.api.hasher, {
    email: analystEmail,
    role: 'analyst',
    password: PASSWORD,
  });
});

function svc(
  args: string[],
  as = email,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'tenants', ...args],
    {
      cwd: ROOT,
      env: { ...process.env, SVC_URL: o.api.url, SVC_CLI_EMAIL: as, SVC_CLI_PASSWORD: PASSWORD },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('svc tenants enrollment <slug>: the address, password, CA and install commands, audited; --rotate replaces the password and prints the new one', {
  timeout: 400_000,
}, async () => {
  const { id, slug } = await activeTenant(o, 'enrcli');
  await o.core.patchNamespacedServiceStatus(
    {
      name: 'monitor',
      namespace: `tenant-${slug}`,
      body: { status: { loadBalancer: { ingress: [{ hostname: 'lb-7.cloud.example' }] } } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  const held = async () =>
    (await o.deps.secrets.read(installSecretNames(id).bootstrap))?.['monitor-enrollment-secret'];
  const first = await held();
  assert.ok(first);

  const shown = await svc(['enrollment', slug]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(
    shown.stdout,
    /manager\s+lb-7\.cloud\.example \(loadbalancer; events 1514, enrollment 1515\)/,
  );
  assert.match(shown.stdout, new RegExp(`password\\s+${first}`));
  assert.match(shown.stdout, /-----BEGIN CERTIFICATE-----/);
  assert.match(shown.stdout, /# Debian, Ubuntu \(deb\)\nsudo tee /);
  assert.match(shown.stdout, /WAZUH_MANAGER='lb-7\.cloud\.example'/);
  assert.match(shown.stdout, /# Windows \(msi\)/);

  const rotated = await svc(['enrollment', slug, '--rotate', '--json']);
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.match(rotated.stderr, /rotated: secret version \d+; the manager restarts/);
  const view = JSON.parse(rotated.stdout) as { password: string; secret_version: number };
  const fresh = await held();
  assert.ok(fresh && fresh !== first);
  assert.equal(view.password, fresh);

  const actions = (await auditRows(o.db, id))
    .map((r) => r.action)
    .filter((a) => a.startsWith('tenant.enrollment.'));
  assert.deepEqual(actions, [
    'tenant.enrollment.reveal',
    'tenant.enrollment.rotate',
    'tenant.enrollment.reveal',
  ]);

  // An analyst may not: the API's refusal, with its code, and exit status 1.
  const refused = await svc(['enrollment', slug], analystEmail);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /\(forbidden\)/);
  assert.equal(refused.stdout, '');
  // A bad slug never reaches the API.
  const bad = await svc(['enrollment', 'Not_A_Slug']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /invalid slug/);
});
