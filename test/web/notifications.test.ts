import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { type Receiver, startReceiver } from '../notifications/receiver.ts';
import { getTestCluster } from '../support/cluster.ts';
import { axe, type SeededUser, seedUser, settled, webSuite } from './support.ts';

/**
 * The console's Notifications page (docs/notifications.md): an mssp_admin adds an install
 * webhook, copies its signing secret, sends a test and reads the delivery log. svc runs with
 * the test cluster (its install namespace keeps the signing secret) and allows loopback, where
 * the receiver listens, as an operator would allow an in-house receiver.
 */
const cluster = getTestCluster();
const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
let installNamespace = '';
let admin: SeededUser;
let receiver: Receiver;

const suite = webSuite(
  async (svc) => {
    admin = await seedUser(svc, { role: 'mssp_admin' });
  },
  async () => {
    installNamespace = await createTestNamespace(cluster, 'install');
    receiver = await startReceiver();
    return {
      KUBECONFIG: cluster.kubeconfigPath,
      SVC_INSTALL_NAMESPACE: installNamespace,
      SVC_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32',
    };
  },
);

after(async () => {
  await receiver?.close();
  if (installNamespace)
    await core.deleteNamespace({ name: installNamespace }).catch(() => undefined);
});

test('docs/notifications.md an mssp_admin creates a webhook, sends a test and reads the delivery log (axe)', async () => {
  const w = await suite.open({ session: { user: admin, at: suite.svc.consoleUrl } });
  const { page } = w;
  try {
    await page.goto(`${suite.svc.consoleUrl}/notifications`);
    await page.getByRole('heading', { level: 1, name: 'Notifications' }).waitFor();
    await page.getByText('No webhooks yet.').waitFor();
    await settled(page);
    await axe(page, 'notifications, empty');

    await page.getByRole('button', { name: 'Add webhook' }).click();
    await page.getByLabel('Name').fill('On-call');
    await page.getByLabel('URL').fill(`${receiver.url}/on-call`);
    await page.getByLabel('Format').selectOption('standard');
    await axe(page, 'notifications, new webhook form');
    const created = page.waitForResponse(
      (r) => r.url().endsWith('/api/mssp/webhooks') && r.request().method() === 'POST',
    );
    await page.getByRole('button', { name: 'Create webhook' }).click();
    assert.equal((await created).status(), 201);
    const secret = await page.getByLabel('Signing secret').inputValue();
    assert.match(secret, /^whsec_/);
    receiver.expect('/on-call', secret);
    await page.getByRole('cell', { name: 'On-call', exact: true }).waitFor();

    const tested = page.waitForResponse((r) => r.url().endsWith(':test'));
    await page.getByRole('button', { name: 'Test send to On-call' }).click();
    assert.equal((await tested).status(), 200);
    await page.getByText('Test send to On-call: delivered (200).').waitFor();
    assert.equal(receiver.received.length, 1);
    assert.equal(receiver.received[0]?.verified, true, 'signed with the secret the page showed');

    await page.getByRole('button', { name: 'Delivery log of On-call' }).click();
    const log = page.getByRole('region', { name: 'Delivery log of On-call, newest first' });
    await log.getByRole('cell', { name: 'webhook.test' }).waitFor();
    await log.getByRole('cell', { name: '200', exact: true }).waitFor();
    await settled(page);
    await axe(page, 'notifications with a webhook and its log');

    await page.getByRole('button', { name: 'Disable On-call' }).click();
    await page.getByRole('cell', { name: 'Disabled', exact: true }).waitFor();
    w.assertClean();
  } finally {
    await w.close();
  }
  const { rows } = await suite.svc.sql.query<{ action: string }>(
    `SELECT action FROM audit_log WHERE resource_type = 'webhook' ORDER BY "timestamp", id`,
  );
  assert.deepEqual(
    rows.map((r) => r.action),
    ['webhook.create', 'webhook.test', 'webhook.update'],
  );
});
