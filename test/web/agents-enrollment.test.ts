import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import type { Page } from 'playwright-core';
import { createNamespaceStore } from '../../src/cluster/namespaces.ts';
import { createSecretStore, type SecretStore } from '../../src/cluster/secrets.ts';
import { installSecretNames } from '../../src/domains/tenants/tenant-creation.ts';
import { ENROLLMENT_CA_KEYS, issueEnrollmentCa } from '../../src/orchestrator/enrollment-pki.ts';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { getTestCluster } from '../support/cluster.ts';
import {
  axe,
  type SeededTenant,
  type SeededUser,
  seedTenant,
  seedUser,
  settled,
  webSuite,
} from './support.ts';

/**
 * Agent enrollment in the console (docs/enrollment.md): the tenant page's Agents section reveals
 * the enrollment details after a confirmation, copies them, and rotates the password after
 * another. svc runs with the test cluster (no orchestrator): the tenant's Secrets are written
 * here as provisioning would have left them, the configuration names the hostname agents dial.
 */
const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
const slug = `agents-${randomBytes(3).toString('hex')}`;
const HOSTNAME = `agents.${slug}.example`;
const FIRST_PASSWORD = randomBytes(24).toString('base64url');
let installNamespace = '';
let secrets: SecretStore;
let tenant: SeededTenant;
let admin: SeededUser;
let analyst: SeededUser;
let caPem = '';

const suite = webSuite(
  async (svc) => {
    tenant = await seedTenant(svc, {
      slug,
      appName: 'Agents Inc',
      primaryColor: '#0b5394',
      secondaryColor: '#f1c232',
    });
    const names = installSecretNames(tenant.id);
    await svc.sql.query(
      `INSERT INTO tenant_lifecycle_events (tenant_id, kind, config_revision, details, actor)
       VALUES ($1, 'config_revision', 1, $2, 'user:seed')`,
      [
        tenant.id,
        {
          config: {
            slug,
            display_name: 'Agents Inc',
            monitor_ingress: { mode: 'loadbalancer', hostname: HOSTNAME },
          },
        },
      ],
    );
    await svc.sql.query(
      `INSERT INTO tenant_secrets (tenant_id, purpose, namespace, name)
       VALUES ($1, 'bootstrap', $2, $3)`,
      [tenant.id, installNamespace, names.bootstrap],
    );
    secrets = createSecretStore(cluster.kubeConfig, installNamespace);
    const labels = { 'tenant-id': tenant.id };
    const bundle = { 'monitor-enrollment-secret': FIRST_PASSWORD, 'store-password': 'kept' };
    await secrets.create(names.bootstrap, bundle, labels);
    const ca = await issueEnrollmentCa(new Date());
    caPem = ca[ENROLLMENT_CA_KEYS.ca];
    await secrets.create(names.enrollmentCa, ca, labels);
    const namespace = `tenant-${slug}`;
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    await createNamespaceStore(cluster.kubeConfig).putSecret(
      namespace,
      'svc-bootstrap',
      bundle,
      labels,
    );
    admin = await seedUser(svc, { role: 'mssp_admin' });
    analyst = await seedUser(svc, { role: 'analyst' });
  },
  async () => {
    installNamespace = await createTestNamespace(cluster, 'install');
    return { KUBECONFIG: cluster.kubeconfigPath, SVC_INSTALL_NAMESPACE: installNamespace };
  },
);

after(async () => {
  for (const name of [installNamespace, `tenant-${slug}`]) {
    if (name) await core.deleteNamespace({ name }).catch(() => undefined);
  }
});

async function tenantPage(user: SeededUser) {
  const w = await suite.open({ session: { user, at: suite.svc.consoleUrl } });
  await w.context.grantPermissions(['clipboard-read', 'clipboard-write'], {
    origin: suite.svc.consoleUrl,
  });
  await w.page.goto(`${suite.svc.consoleUrl}/tenants/${tenant.id}`);
  await w.page.getByRole('heading', { level: 2, name: 'Branding' }).waitFor();
  await settled(w.page);
  return w;
}

const clipboard = (page: Page) =>
  page.evaluate(() =>
    (
      globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
    ).navigator.clipboard.readText(),
  );

async function auditCount(action: string): Promise<number> {
  const { rows } = await suite.svc.sql.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM audit_log WHERE tenant_id = $1 AND action = $2',
    [tenant.id, action],
  );
  return rows[0]?.n ?? 0;
}

test('enrollment in the console: an mssp_admin reveals after a confirmation, copies the password and the commands, and rotates the password', async () => {
  const w = await tenantPage(admin);
  const { page } = w;
  try {
    const agents = page.getByRole('region', { name: 'Agents' });
    await agents.waitFor();
    // Nothing secret is fetched before the confirmation.
    assert.equal(await auditCount('tenant.enrollment.reveal'), 0);
    assert.equal(
      await agents.getByRole('textbox', { name: 'Enrollment password', exact: true }).count(),
      0,
    );
    await agents.getByRole('button', { name: 'Reveal enrollment details' }).click();
    const reveal = page.getByRole('dialog', { name: /Reveal Agents Inc/ });
    await reveal.getByText('recorded in the audit log').waitFor();
    await reveal.getByRole('button', { name: 'Reveal', exact: true }).click();

    const password = agents.getByRole('textbox', { name: 'Enrollment password', exact: true });
    await password.waitFor();
    assert.equal(await password.inputValue(), FIRST_PASSWORD);
    assert.equal(
      (
        await agents
          .getByRole('textbox', { name: 'CA certificate (PEM)', exact: true })
          .inputValue()
      ).trim(),
      caPem.trim(),
    );
    await agents.getByText(HOSTNAME, { exact: false }).first().waitFor();
    const deb = await agents
      .getByRole('textbox', { name: 'Install on Debian or Ubuntu (deb)', exact: true })
      .inputValue();
    assert.match(deb, new RegExp(`WAZUH_MANAGER='${HOSTNAME.replaceAll('.', '\\.')}'`));
    assert.ok(deb.includes(`WAZUH_REGISTRATION_PASSWORD='${FIRST_PASSWORD}'`));
    assert.equal(await auditCount('tenant.enrollment.reveal'), 1);
    await axe(page, 'tenant page, enrollment revealed');

    await agents.getByRole('button', { name: 'Copy Enrollment password' }).click();
    await agents.getByRole('status').filter({ hasText: 'Copied.' }).first().waitFor();
    assert.equal(await clipboard(page), FIRST_PASSWORD);
    await agents.getByRole('button', { name: 'Copy Install on Debian or Ubuntu (deb)' }).click();
    assert.equal(await clipboard(page), deb);
    await agents.getByRole('button', { name: 'Copy Install on Windows (msi, PowerShell)' }).click();
    assert.match(await clipboard(page), /msiexec\.exe/);

    await agents.getByRole('button', { name: 'Rotate enrollment password' }).click();
    const rotate = page.getByRole('dialog', { name: /Rotate Agents Inc/ });
    await rotate.getByText('refuses the old one').waitFor();
    await rotate.getByRole('button', { name: `Rotate ${slug}` }).click();
    await agents.getByRole('status').filter({ hasText: 'Rotated: secret version 2.' }).waitFor();
    const held = await secrets.read(installSecretNames(tenant.id).bootstrap);
    const fresh = held?.['monitor-enrollment-secret'];
    assert.ok(fresh && fresh !== FIRST_PASSWORD);
    assert.equal(held?.['store-password'], 'kept');
    await page.waitForFunction(
      ([value]) =>
        (
          globalThis as unknown as {
            document: { querySelectorAll(s: string): ArrayLike<{ value: string }> };
          }
        ).document.querySelectorAll('.enrollment input')[0]?.value === value,
      [fresh],
    );
    assert.equal(await password.inputValue(), fresh);
    assert.equal(await auditCount('tenant.enrollment.rotate'), 1);
    assert.equal(await auditCount('tenant.enrollment.reveal'), 2);
    await axe(page, 'tenant page, enrollment rotated');
    w.assertClean();
  } finally {
    await w.close();
  }
});

test('enrollment in the console: an analyst, whom the API refuses, sees no Agents section', async () => {
  const w = await tenantPage(analyst);
  try {
    assert.equal(await w.page.getByRole('heading', { level: 2, name: 'Agents' }).count(), 0);
    assert.equal(
      await w.page.getByRole('button', { name: 'Reveal enrollment details' }).count(),
      0,
    );
    w.assertClean();
  } finally {
    await w.close();
  }
});
