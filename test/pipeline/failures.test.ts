import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { enqueueJobs } from '../../src/domains/jobs/job-repository.ts';
import {
  attackAlert,
  ingest,
  type PipelineRig,
  pipelineTenant,
  startPipelineRig,
  streamTypes,
  until,
} from './support.ts';

// Issue 13, "LLM 500 / timeout / invalid JSON / 429 with Retry-After: retried, then human
// review; nothing lost", budgets, the tenant-keyed cache (§9.5.5) and job isolation (§5.7.5),
// proven from the outside: events in the store, reviews through the MSSP API, the stand-ins'
// recorded requests and the queue's own table. Tests run in order on one rig: the stand-ins'
// scripted faults and answers are shared, so each test waits until its tenant's work is done.

let rig: PipelineRig;
before(async () => {
  rig = await startPipelineRig();
});
after(async () => {
  await rig.close();
});

const answer = (fields: Record<string, unknown>) =>
  JSON.stringify({
    verdict: 'true_positive',
    severity: 'high',
    confidence: 0.93,
    rationale: 'Repeated failed SSH logins from one external address.',
    recommended_action: 'escalate',
    ...fields,
  });
const ESCALATE = answer({});
const CLOSE = answer({
  verdict: 'false_positive',
  severity: 'low',
  confidence: 0.97,
  rationale: 'The customer’s own vulnerability scanner.',
  recommended_action: 'close',
});
/** No analyzers: these tests are about the model and the case component, not Cortex. */
const NO_ANALYZERS = { analyzers: [] };

type Rig = Pick<PipelineRig, 'db' | 'admin'>;

async function openReviews(r: Rig, tenantId: string) {
  const res = await r.admin.mssp.tenantReviews({ params: { tenant_id: tenantId } });
  assert.equal(res.status, 200);
  return res.status === 200 ? res.body.items : [];
}

function firstReview(r: Rig, tenantId: string) {
  return until('a review', async () => (await openReviews(r, tenantId))[0]);
}

/** The tenant's investigations, oldest first (read as svc_mssp, for assertions). */
async function investigations(r: Rig, tenantId: string): Promise<string[]> {
  const { rows } = await r.db.pools.mssp.query<{ stream_id: string }>(
    `SELECT stream_id FROM events WHERE tenant_id = $1 AND type = 'investigation.opened' ORDER BY id`,
    [tenantId],
  );
  return rows.map((row) => row.stream_id);
}

async function eventOf(
  r: Rig,
  tenantId: string,
  investigationId: string,
  type: string,
): Promise<Record<string, unknown> | undefined> {
  const { rows } = await r.db.pools.mssp.query<{ payload: Record<string, unknown> }>(
    `SELECT payload FROM events WHERE tenant_id = $1 AND stream_id = $2 AND type = $3
      ORDER BY id DESC LIMIT 1`,
    [tenantId, investigationId, type],
  );
  return rows[0]?.payload;
}

/** The tenant's jobs still in the queue (done jobs are deleted), read as svc_admin. */
async function queuedJobs(r: Rig, tenantId: string) {
  const { rows } = await r.db.pools.admin.query<{
    task: string;
    attempts: number;
    last_error: string | null;
  }>(
    `SELECT t.identifier AS task, j.attempts, j.last_error
       FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
      WHERE j.payload->>'tenant_id' = $1`,
    [tenantId],
  );
  return rows;
}

function queueDrained(r: Rig, tenantId: string) {
  return until(`${tenantId}'s jobs done`, async () =>
    (await queuedJobs(r, tenantId)).length === 0 ? true : undefined,
  );
}

/** What the pipeline's workers wrote for the tenant: events and audit rows, counted. */
async function writes(r: Rig, tenantId: string): Promise<{ events: number; audit: number }> {
  const { rows } = await r.db.pools.mssp.query<{ events: number; audit: number }>(
    `SELECT (SELECT count(*)::int FROM events WHERE tenant_id = $1) AS events,
            (SELECT count(*)::int FROM audit_log WHERE tenant_id = $1 AND actor_principal = 'Worker') AS audit`,
    [tenantId],
  );
  return rows[0] ?? { events: -1, audit: -1 };
}

async function auditActions(r: Rig, tenantId: string): Promise<string[]> {
  const { rows } = await r.db.pools.mssp.query<{ action: string }>(
    'SELECT action FROM audit_log WHERE tenant_id = $1 ORDER BY timestamp',
    [tenantId],
  );
  return rows.map((row) => row.action);
}

async function usageToday(tenantId: string) {
  const res = await rig.admin.mssp.llmUsage({ params: { tenant_id: tenantId }, query: {} });
  assert.equal(res.status, 200);
  return res.status === 200 ? res.body.days[0] : undefined;
}

const userMessage = (request: { body: Record<string, unknown> }) => {
  const messages = request.body.messages as Array<{ role: string; content: string }>;
  return messages.find((m) => m.role === 'user')?.content ?? '';
};

/** A triage that failed: the reason recorded, one review proposing a case, nothing queued. */
async function assertWentToHuman(r: Rig, tenantId: string, reason: RegExp) {
  const review = await firstReview(r, tenantId);
  const [investigationId] = await investigations(r, tenantId);
  assert.ok(investigationId);
  const failed = await eventOf(r, tenantId, investigationId, 'triage.failed');
  assert.match(String(failed?.reason), reason);
  assert.equal(review.investigation_id, investigationId, 'the investigation has its review');
  assert.equal(review.proposed_action, 'open_case');
  assert.match(review.rationale, /Automatic triage failed/);
  assert.match(review.rationale, reason);
  assert.deepEqual(
    (await streamTypes(r.db, tenantId)).filter((t) => t !== 'alert.received'),
    [
      'investigation.opened',
      'triage.started',
      'triage.failed',
      'enrichment.completed',
      'decision.made',
      'review.requested',
    ],
  );
  await queueDrained(r, tenantId);
  return review;
}

test('issue 13 LLM 500: the provider retries (1 + 2 requests), then triage.failed llm_server and a review; nothing lost, no job left failing', async () => {
  rig.llm.respond(() => ESCALATE);
  rig.llm.fail([{ status: 500 }, { status: 500 }, { status: 500 }]);
  const sent = rig.llm.requests.length;
  const { tenantId, token } = await pipelineTenant(rig, NO_ANALYZERS);
  await ingest(rig, token, [attackAlert(1)]);
  await assertWentToHuman(rig, tenantId, /llm_server/);
  assert.equal(rig.llm.requests.length - sent, 3, 'one request and two retries');
  assert.deepEqual(await queuedJobs(rig, tenantId), []);
});

test('issue 13 LLM timeout (SVC_LLM_TIMEOUT 1 s): every attempt times out, then triage.failed llm_timeout and a review', async () => {
  const slow = await startPipelineRig({ env: { SVC_LLM_TIMEOUT: '1s' } });
  try {
    slow.llm.respond(() => ESCALATE);
    slow.llm.fail([{ delayMs: 2500 }, { delayMs: 2500 }, { delayMs: 2500 }]);
    const { tenantId, token } = await pipelineTenant(slow, NO_ANALYZERS);
    await ingest(slow, token, [attackAlert(2)]);
    await assertWentToHuman(slow, tenantId, /llm_timeout/);
    assert.equal(slow.llm.requests.length, 3, 'one request and two retries');
  } finally {
    await slow.close();
  }
});

test('issue 13 invalid JSON twice: one corrective ask (2 model calls), then malformed_answer and a review', async () => {
  rig.llm.respond(() => 'The activity looks like a routine login to me.');
  const sent = rig.llm.requests.length;
  const { tenantId, token } = await pipelineTenant(rig, NO_ANALYZERS);
  await ingest(rig, token, [attackAlert(3)]);
  await assertWentToHuman(rig, tenantId, /malformed_answer/);
  const asked = rig.llm.requests.slice(sent);
  assert.equal(asked.length, 2);
  const [first, second] = asked.map(userMessage);
  assert.doesNotMatch(String(first), /previous answer was rejected/);
  assert.match(String(second), /Your previous answer was rejected \(.+\)/);
  assert.ok(String(second).startsWith(String(first)), 'the same prompt, asked again');
});

test('issue 13 invalid JSON once, then valid: triage.completed with answer_attempts 2 and the normal decision', async () => {
  let calls = 0;
  rig.llm.respond(() => {
    calls += 1;
    return calls === 1 ? '{"verdict": "probably fine"}' : CLOSE;
  });
  const sent = rig.llm.requests.length;
  const { tenantId, token } = await pipelineTenant(rig, NO_ANALYZERS);
  await ingest(rig, token, [attackAlert(4)]);
  const [investigationId] = await until('the investigation', async () => {
    const ids = await investigations(rig, tenantId);
    return ids.length > 0 ? ids : undefined;
  });
  assert.ok(investigationId);
  const closed = await until('the investigation closed', () =>
    eventOf(rig, tenantId, investigationId, 'investigation.closed'),
  );
  assert.equal(closed.by, 'pipeline');
  assert.equal(closed.verdict, 'false_positive');
  const triaged = await eventOf(rig, tenantId, investigationId, 'triage.completed');
  assert.equal(triaged?.answer_attempts, 2);
  assert.equal(triaged?.verdict, 'false_positive');
  assert.equal(triaged?.by, 'model');
  assert.equal(rig.llm.requests.length - sent, 2);
  assert.deepEqual(await openReviews(rig, tenantId), []);
});

test('issue 13 429 with Retry-After: 1: one wait of ~1 s, then triage completes normally', async (t) => {
  rig.llm.respond(() => ESCALATE);
  rig.llm.fail([{ status: 429, retryAfter: '1' }]);
  const sent = rig.llm.requests.length;
  const { tenantId, token } = await pipelineTenant(rig, NO_ANALYZERS);
  await ingest(rig, token, [attackAlert(5)]);
  const review = await firstReview(rig, tenantId);
  const asked = rig.llm.requests.slice(sent);
  assert.equal(asked.length, 2, 'the 429 and the retry');
  const [first, second] = asked;
  assert.ok(first && second);
  const waited = second.receivedAt - first.receivedAt;
  t.diagnostic(`retried ${waited} ms after the 429`);
  assert.ok(waited >= 1000, `retried after ${waited} ms, before Retry-After`);
  assert.ok(waited < 3000, `retried after ${waited} ms: more than the one wait asked for`);
  const triaged = await eventOf(rig, tenantId, review.investigation_id, 'triage.completed');
  assert.equal(triaged?.verdict, 'true_positive');
  assert.equal(triaged?.answer_attempts, 1);
  assert.equal(review.proposed_action, 'open_case');
  assert.doesNotMatch(review.rationale, /Automatic triage failed/);
});

test('issue 13 budget reached: no request leaves svc for that tenant, triage.failed llm_budget_exhausted, a review; a tenant without a budget is unaffected', async () => {
  rig.llm.respond(() => CLOSE);
  const sent = rig.llm.requests.length;
  const capped = await pipelineTenant(rig, { ...NO_ANALYZERS, daily_budget: { tokens: 1 } });
  const free = await pipelineTenant(rig, NO_ANALYZERS);
  const description = (who: string) => ({
    rule: {
      level: 10,
      id: '5712',
      description: `sshd: brute force against the ${who} tenant's bastion`,
      groups: ['sshd'],
    },
  });
  await ingest(rig, capped.token, [attackAlert(6, description('capped'))]);
  await ingest(rig, free.token, [attackAlert(7, description('unlimited'))]);
  await assertWentToHuman(rig, capped.tenantId, /llm_budget_exhausted/);
  await until('the free tenant closed', async () =>
    (await streamTypes(rig.db, free.tenantId)).includes('investigation.closed') ? true : undefined,
  );
  const prompts = rig.llm.requests.slice(sent).map(userMessage);
  assert.equal(prompts.length, 1, 'only the tenant without a budget asked the model');
  assert.match(String(prompts[0]), /unlimited tenant/);
  const capUse = await usageToday(capped.tenantId);
  assert.equal(capUse?.calls, 0);
  assert.ok((capUse?.refused_over_budget ?? 0) >= 1);
  assert.equal(capUse?.input_tokens, 0);
  const freeUse = await usageToday(free.tenantId);
  assert.equal(freeUse?.calls, 1);
  assert.equal(freeUse?.refused_over_budget, 0);
});

test('§9.5.5 LLM cache isolation through the pipeline: identical alerts and policy in two tenants ask the model twice; a repeat in A is answered from A’s cache', async () => {
  rig.llm.respond(() => CLOSE);
  // Alert ids and timestamps differ between investigations; the policy keeps them out of the
  // prompt, so every investigation below sends exactly the same prompt.
  const policy = { ...NO_ANALYZERS, never_send_fields: ['id', 'timestamp'] };
  const a = await pipelineTenant(rig, policy);
  const b = await pipelineTenant(rig, policy);
  const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();
  const shared = attackAlert(8, { timestamp: hoursAgo(3) });
  const sent = rig.llm.requests.length;

  const triaged = async (tenantId: string, nth: number) => {
    const id = await until(
      `investigation ${nth} of ${tenantId}`,
      async () => (await investigations(rig, tenantId))[nth - 1],
    );
    return until('triage.completed', () => eventOf(rig, tenantId, id, 'triage.completed'));
  };

  await ingest(rig, a.token, [shared]);
  assert.equal((await triaged(a.tenantId, 1)).cached, false, 'a miss for A');
  await ingest(rig, b.token, [shared]);
  assert.equal((await triaged(b.tenantId, 1)).cached, false, 'a miss for B after A');
  const asked = rig.llm.requests.slice(sent);
  assert.equal(asked.length, 2, 'the model was asked for each tenant');
  const [forA, forB] = asked;
  assert.ok(forA && forB);
  assert.deepEqual(forB.body, forA.body, 'the same prompt: only the tenant keys the cache');

  // Two hours later: a new investigation in A with the same content.
  await ingest(rig, a.token, [attackAlert(9, { timestamp: hoursAgo(1) })]);
  const repeat = await triaged(a.tenantId, 2);
  assert.equal(repeat.cached, true, 'a hit on A’s repeat');
  assert.equal(rig.llm.requests.length - sent, 2, 'the hit asked no model');
  assert.equal((await usageToday(a.tenantId))?.cache_hits, 1);
  assert.equal((await usageToday(b.tenantId))?.cache_hits, 0);
});

test('§5.7.5 isolation: jobs queued for tenant A that name B’s investigation and review write nothing for either tenant and are not retried', async () => {
  // B's triage is held at the model, so its investigation is mid-pipeline: a triage, enrich or
  // decide step that could see it would ask the model again or append its own events.
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  rig.llm.respond(async () => {
    await held;
    return ESCALATE;
  });
  try {
    const a = await pipelineTenant(rig, NO_ANALYZERS);
    const b = await pipelineTenant(rig, NO_ANALYZERS);
    const sent = rig.llm.requests.length;
    await ingest(rig, b.token, [attackAlert(10)]);
    await until('B’s triage at the model', async () =>
      rig.llm.requests.length > sent ? true : undefined,
    );
    const [bInvestigation] = await investigations(rig, b.tenantId);
    assert.ok(bInvestigation);
    const beforeA = await writes(rig, a.tenantId);
    const beforeB = await writes(rig, b.tenantId);

    await rig.db.app.withTenant(a.tenantId, (tx) =>
      enqueueJobs(
        tx,
        ['triage', 'enrich', 'decide'].map((jobType) => ({
          tenantId: a.tenantId,
          jobType,
          input: { investigation_id: bInvestigation },
        })),
      ),
    );
    await queueDrained(rig, a.tenantId);
    // A failed job would wait about e seconds for its retry; none may come back.
    await sleep(3000);
    assert.deepEqual(await queuedJobs(rig, a.tenantId), []);
    assert.deepEqual(await writes(rig, a.tenantId), beforeA);
    assert.deepEqual(await writes(rig, b.tenantId), beforeB);
    assert.equal(rig.llm.requests.length - sent, 1, 'only B’s own triage asked the model');

    release();
    const review = await firstReview(rig, b.tenantId);
    assert.deepEqual(
      (await streamTypes(rig.db, b.tenantId)).filter((t) => t !== 'alert.received'),
      [
        'investigation.opened',
        'triage.started',
        'triage.completed',
        'enrichment.completed',
        'decision.made',
        'review.requested',
      ],
    );

    // B's review approved with its act job not yet run: an act job of A naming it acts on
    // nothing; the same job queued for B opens the case (so the input itself was actionable).
    await rig.db.app.withTenant(b.tenantId, (tx) =>
      tx.query(
        `UPDATE pending_reviews SET decision = 'approved', decided_at = now() WHERE id = $1`,
        [review.id],
      ),
    );
    const caseCalls = rig.thehive.requests.length;
    const approvedB = await writes(rig, b.tenantId);
    const actOn = (tenantId: string) =>
      rig.db.app.withTenant(tenantId, (tx) =>
        enqueueJobs(tx, [{ tenantId, jobType: 'act', input: { review_id: review.id } }]),
      );
    await actOn(a.tenantId);
    await queueDrained(rig, a.tenantId);
    assert.equal(rig.thehive.requests.length, caseCalls, 'A’s act job reached no case component');
    assert.deepEqual(await writes(rig, a.tenantId), beforeA);
    assert.deepEqual(await writes(rig, b.tenantId), approvedB);

    await actOn(b.tenantId);
    await until('B’s case', async () =>
      (await streamTypes(rig.db, b.tenantId)).includes('case.opened') ? true : undefined,
    );
    const tag = `svc-ref:${review.investigation_id}`;
    assert.equal(rig.thehive.cases().filter((c) => c.tags.includes(tag)).length, 1);
    assert.deepEqual(await writes(rig, a.tenantId), beforeA);
  } finally {
    release();
  }
});

test('issue 13 act with a wrong TheHive credential (401): action.failed kind auth, audited case.open_failed, no case, no retry', async () => {
  rig.llm.respond(() => ESCALATE);
  const wrong = 'thehive-wrong-key';
  const { tenantId, token } = await pipelineTenant(rig, NO_ANALYZERS, {
    thehiveCredential: wrong,
  });
  await ingest(rig, token, [attackAlert(11)]);
  const review = await firstReview(rig, tenantId);
  const approved = await rig.admin.mssp.approveReview({
    params: { tenant_id: tenantId, review_id: review.id },
    body: { note: 'open a case' },
  });
  assert.equal(approved.status, 200);
  const failed = await until('action.failed', () =>
    eventOf(rig, tenantId, review.investigation_id, 'action.failed'),
  );
  assert.equal(failed.kind, 'auth');
  assert.equal(failed.review_id, review.id);
  assert.ok((await auditActions(rig, tenantId)).includes('case.open_failed'));
  await queueDrained(rig, tenantId);
  // A retried job would run again after about e seconds.
  await sleep(3500);
  const withWrongKey = rig.thehive.requests.filter((r) => r.authorization === `Bearer ${wrong}`);
  assert.equal(withWrongKey.length, 1, 'asked once, not retried');
  assert.deepEqual(await queuedJobs(rig, tenantId), []);
  const tag = `svc-ref:${review.investigation_id}`;
  assert.equal(rig.thehive.cases().filter((c) => c.tags.includes(tag)).length, 0);
  assert.ok(!(await streamTypes(rig.db, tenantId)).includes('case.opened'));
});

test('issue 13 act when TheHive answers 500 once: the job retries and exactly one case exists', async () => {
  rig.llm.respond(() => ESCALATE);
  const { tenantId, token } = await pipelineTenant(rig, NO_ANALYZERS);
  await ingest(rig, token, [attackAlert(12)]);
  const review = await firstReview(rig, tenantId);
  const calls = rig.thehive.requests.length;
  rig.thehive.failNext(1, { status: 500 });
  const approved = await rig.admin.mssp.approveReview({
    params: { tenant_id: tenantId, review_id: review.id },
    body: { note: 'open a case' },
  });
  assert.equal(approved.status, 200);
  await until('case.opened', () => eventOf(rig, tenantId, review.investigation_id, 'case.opened'));
  await queueDrained(rig, tenantId);
  const tag = `svc-ref:${review.investigation_id}`;
  assert.equal(rig.thehive.cases().filter((c) => c.tags.includes(tag)).length, 1);
  const sent = rig.thehive.requests.slice(calls);
  const lookups = sent.filter((r) => r.path.startsWith('/api/v1/query?name=svc-case-by-ref'));
  assert.equal(lookups.length, 2, 'the refused attempt and the retry');
  assert.equal(sent.filter((r) => r.method === 'POST' && r.path === '/api/v1/case').length, 1);
  const types = await streamTypes(rig.db, tenantId);
  assert.equal(types.filter((t) => t === 'case.opened').length, 1);
  assert.ok(!types.includes('action.failed'));
  assert.ok((await auditActions(rig, tenantId)).includes('case.open'));
});
