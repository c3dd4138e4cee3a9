import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { signedInAs } from '../support/sign-in.ts';
import {
  ATTACKER_IP,
  attackAlert,
  eventPayload,
  ingest,
  LLM_KEY,
  type PipelineRig,
  pipelineTenant,
  startPipelineRig,
  streamTypes,
  until,
} from './support.ts';

// Issue 13 end to end: alerts in through the adapter API → investigation → triage job (policy,
// redacted prompt to the stand-in LLM) → enrichment (the stand-in Cortex) → decision → review →
// approval → the act job opens a case in the stand-in TheHive; audited and visible to the
// tenant's customer. Real API, real workers on the PostgreSQL queue, the test cluster's Secrets.

let rig: PipelineRig;
before(async () => {
  rig = await startPipelineRig();
});
after(async () => {
  await rig.close();
});

const escalate = JSON.stringify({
  verdict: 'true_positive',
  severity: 'high',
  confidence: 0.93,
  rationale: 'Repeated failed SSH logins from one external address against a non-existent user.',
  recommended_action: 'escalate',
});

test('issue 13 end to end: alert → incident → triage → review → approval → case opened in TheHive, audited and visible to the customer', async () => {
  rig.llm.respond(() => escalate);
  const before = rig.llm.requests.length;
  const { tenantId, token } = await pipelineTenant(rig);
  await ingest(rig, token, [attackAlert(1), attackAlert(2)]);

  const reviews = await until('a review', async () => {
    const res = await rig.admin.mssp.tenantReviews({ params: { tenant_id: tenantId } });
    return res.status === 200 && res.body.items.length > 0 ? res.body.items : undefined;
  });
  assert.equal(reviews.length, 1);
  const review = reviews[0];
  assert.ok(review);
  assert.equal(review.proposed_action, 'open_case');
  assert.equal(review.risk, 'high', 'a malicious analyzer verdict makes the risk high');
  assert.match(review.rationale, /AbuseIPDB_1_0/);

  // The prompt: the tenant's key, the tenant's model, and no redacted value.
  const sent = rig.llm.requests.slice(before);
  assert.equal(sent.length, 1, 'one model call for one investigation');
  const request = sent[0];
  assert.ok(request);
  assert.equal(request.headers.authorization, `Bearer ${LLM_KEY}`);
  assert.equal(request.body.model, 'gpt-test');
  const prompt = JSON.stringify(request.body);
  for (const secret of ['alice.secret', 'bob.hidden@corp.example'])
    assert.ok(!prompt.includes(secret), `${secret} reached the model`);
  const triaged = await eventPayload(rig.db, tenantId, 'triage.completed');
  const redaction = triaged?.redaction as { fired: Array<{ rule: string }> } | undefined;
  const fired = (redaction?.fired ?? []).map((f) => f.rule);
  assert.ok(fired.includes('email') && fired.includes('username'), fired.join(','));

  // Enrichment asked the tenant's analysis component about the public address.
  assert.deepEqual(
    rig.cortex.jobs().map((j) => [j.analyzerName, j.data]),
    [['AbuseIPDB_1_0', ATTACKER_IP]],
  );

  const investigationId = review.investigation_id;
  const approved = await rig.admin.mssp.approveReview({
    params: { tenant_id: tenantId, review_id: review.id },
    body: { note: 'confirmed brute force' },
  });
  assert.equal(approved.status, 200);
  const cases = await until('a case in TheHive', async () =>
    rig.thehive.cases().length > 0 ? rig.thehive.cases() : undefined,
  );
  assert.equal(cases.length, 1);
  const opened = cases[0];
  assert.ok(opened);
  assert.ok(opened.tags.includes(`svc-ref:${investigationId}`));
  assert.equal(opened.severity, 3);
  assert.deepEqual(
    rig.thehive
      .observables(opened._id)
      .map((o) => [o.dataType, o.data])
      .sort(),
    [
      ['ip', ATTACKER_IP],
      ['mail', 'bob.hidden@corp.example'],
    ],
  );

  // Approving again is refused; the action happened once.
  const again = await rig.admin.mssp.approveReview({
    params: { tenant_id: tenantId, review_id: review.id },
    body: { note: 'twice' },
  });
  assert.equal(again.status, 409);

  // The case exists in TheHive before the worker commits case.opened: wait for the event
  // itself, not for the next read of the stream.
  const types = await until('case.opened in the stream', async () => {
    const seen = await streamTypes(rig.db, tenantId);
    return seen.includes('case.opened') ? seen : undefined;
  });
  assert.deepEqual(
    types.filter((t) => t !== 'analyzer.completed'),
    [
      'investigation.opened',
      'triage.started',
      'triage.completed',
      'enrichment.completed',
      'decision.made',
      'review.requested',
      'review.approved',
      'case.opened',
    ],
  );

  // The customer sees the outcome in the read model and every step in its audit trail.
  const customer = await signedInAs({ db: rig.db, api: rig.api }, 'customer_viewer', { tenantId });
  const incident = await until('the resolved incident', async () => {
    const res = await customer.tenant.incidents({ query: {} });
    const found =
      res.status === 200 ? res.body.items.find((i) => i.id === investigationId) : undefined;
    return found?.status === 'resolved' ? found : undefined;
  });
  assert.equal(incident.verdict, 'true_positive');
  const audit = await customer.tenant.audit({ query: {} });
  assert.equal(audit.status, 200);
  if (audit.status !== 200) return;
  const actions = audit.body.items.map((r) => `${r.actor_principal}:${r.action}`);
  for (const expected of [
    'Worker:review.request',
    'User:investigation.approve',
    'Worker:case.open',
  ])
    assert.ok(actions.includes(expected), `${expected} missing from ${actions.join(', ')}`);
});

test('issue 13: a confident false positive closes without a human; nothing reaches TheHive', async () => {
  rig.llm.respond(() =>
    JSON.stringify({
      verdict: 'false_positive',
      severity: 'low',
      confidence: 0.97,
      rationale: 'A scheduled vulnerability scan from the customer’s own scanner.',
      recommended_action: 'close',
    }),
  );
  const { tenantId, token } = await pipelineTenant(rig, { analyzers: [] });
  await ingest(rig, token, [attackAlert(3, { data: { srcip: '10.1.2.3', srcuser: 'scanner' } })]);
  await until('the investigation closed', async () =>
    (await streamTypes(rig.db, tenantId)).includes('investigation.closed') ? true : undefined,
  );
  const reviews = await rig.admin.mssp.tenantReviews({ params: { tenant_id: tenantId } });
  assert.equal(reviews.status, 200);
  if (reviews.status === 200) assert.equal(reviews.body.items.length, 0);
  const closed = await eventPayload(rig.db, tenantId, 'investigation.closed');
  assert.equal(closed?.verdict, 'false_positive');
  assert.equal(closed?.by, 'pipeline');
});

test('issue 13: below the policy level the investigation closes as benign and no model is asked', async () => {
  const { tenantId, token } = await pipelineTenant(rig, { auto_close_below_level: 5 });
  const before = rig.llm.requests.length;
  await ingest(rig, token, [
    attackAlert(4, { rule: { level: 3, id: '5501', description: 'PAM: Login session opened.' } }),
  ]);
  await until('the investigation closed', async () =>
    (await streamTypes(rig.db, tenantId)).includes('investigation.closed') ? true : undefined,
  );
  assert.equal(rig.llm.requests.length, before);
  const triaged = await eventPayload(rig.db, tenantId, 'triage.completed');
  assert.equal(triaged?.by, 'policy');
  const closed = await eventPayload(rig.db, tenantId, 'investigation.closed');
  assert.equal(closed?.verdict, 'benign');
});

test('issue 13: an always-escalate rule group goes to a human without a model call', async () => {
  const { tenantId, token } = await pipelineTenant(rig, {
    always_escalate_rule_groups: ['authentication_failures'],
  });
  const before = rig.llm.requests.length;
  await ingest(rig, token, [attackAlert(5)]);
  const review = await until('a review', async () => {
    const res = await rig.admin.mssp.tenantReviews({ params: { tenant_id: tenantId } });
    return res.status === 200 ? res.body.items[0] : undefined;
  });
  assert.equal(review.proposed_action, 'open_case');
  assert.equal(rig.llm.requests.length, before);
});

test('issue 13: a rejected escalation closes the investigation as the analyst judged it; no case is opened', async () => {
  rig.llm.respond(() => escalate);
  const { tenantId, token } = await pipelineTenant(rig, { analyzers: [] });
  await ingest(rig, token, [attackAlert(6)]);
  const review = await until('a review', async () => {
    const res = await rig.admin.mssp.tenantReviews({ params: { tenant_id: tenantId } });
    return res.status === 200 ? res.body.items[0] : undefined;
  });
  const rejected = await rig.admin.mssp.rejectReview({
    params: { tenant_id: tenantId, review_id: review.id },
    body: { note: 'known pentest', verdict: 'benign' },
  });
  assert.equal(rejected.status, 200);
  const closed = await until('the read model closed', async () => {
    const { rows } = await rig.db.pools.mssp.query<{ status: string; verdict: string | null }>(
      'SELECT status, verdict FROM investigations WHERE tenant_id = $1 AND id = $2',
      [tenantId, review.investigation_id],
    );
    return rows[0]?.status === 'closed' ? rows[0] : undefined;
  });
  assert.equal(closed.verdict, 'benign', "the analyst's verdict is the read model's");
  assert.ok(!(await streamTypes(rig.db, tenantId)).includes('case.opened'));
});
