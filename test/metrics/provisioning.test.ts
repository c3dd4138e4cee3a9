import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { denyDeployments } from '../provisioning/inject.ts';
import {
  createTenantVia,
  lifecycle,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
  waitForStep,
} from '../provisioning/support.ts';
import { metricsListener, type Scrape, scrape } from './support.ts';

// Issue 15 "Metrics": provisioning step durations and outcomes, recorded by the orchestrator
// as it drives tenants on the real kube-apiserver with the real helm: one tenant through every
// step to a Ready package, one whose package install the cluster refuses.

const o = useOrchestration();

const COUNT = 'svc_provisioning_step_duration_seconds_count';
const RUN_STEPS = [
  'namespace_created',
  'bootstrap_secrets_written',
  'edge_ports_allocated',
  'package_installed',
  'package_ready',
] as const;

function moved(before: Scrape, after: Scrape, labels: Record<string, string>): number {
  return after.value(COUNT, labels) - before.value(COUNT, labels);
}

test('issue 15 metrics: each provisioning step the orchestrator runs counts one duration under success', {
  timeout: 400_000,
}, async (t) => {
  const listener = await metricsListener(o.api.metrics);
  t.after(() => listener.close());
  const before = await scrape(listener);

  const id = await createTenantVia(o, tenantConfig(uniqueSlug('metrics')));
  await waitForStep(o, id, 'step:package_ready');
  const after = await scrape(listener);
  for (const step of RUN_STEPS) {
    assert.equal(moved(before, after, { step, outcome: 'success' }), 1, step);
    assert.equal(moved(before, after, { step, outcome: 'failure' }), 0, step);
  }
  // Written by the API in the creating transaction, never run by the orchestrator.
  assert.equal(after.value(COUNT, { step: 'install_secrets_written' }), 0);
  // The readiness wait is timed from the tenant's entry into provisioning: never negative, and
  // the steps' sum is the time they took (well under the test's own).
  const sum = (labels: Record<string, string>) =>
    after.value('svc_provisioning_step_duration_seconds_sum', labels) -
    before.value('svc_provisioning_step_duration_seconds_sum', labels);
  assert.ok(sum({ step: 'package_ready' }) >= 0);
  assert.ok(sum({}) > 0 && sum({}) < 400);
});

test('issue 15 metrics: a step that fails counts one duration under failure and none under success', {
  timeout: 400_000,
}, async (t) => {
  const listener = await metricsListener(o.api.metrics);
  t.after(() => listener.close());
  const slug = uniqueSlug('metrics-fail');
  const injected = await denyDeployments(o, slug);
  t.after(() => injected.lift());
  const before = await scrape(listener);

  const id = await createTenantVia(o, tenantConfig(slug));
  const deadline = Date.now() + 300_000;
  let row = await tenantRow(o, id);
  while (!row?.error_details) {
    assert.ok(Date.now() < deadline, `no failure: ${(await lifecycle(o, id)).join(', ')}`);
    await sleep(250);
    row = await tenantRow(o, id);
  }
  assert.equal((row.error_details as { step?: string }).step, 'package_installed');
  const after = await scrape(listener);
  assert.equal(moved(before, after, { step: 'package_installed', outcome: 'failure' }), 1);
  assert.equal(moved(before, after, { step: 'package_installed', outcome: 'success' }), 0);
  assert.equal(moved(before, after, { step: 'edge_ports_allocated', outcome: 'success' }), 1);
  assert.equal(moved(before, after, { step: 'package_ready' }), 0);
});
