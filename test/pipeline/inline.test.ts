import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { TriagePolicy } from '../../contracts/triage-policy.ts';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import { createIngestService } from '../../src/domains/ingest/ingest-service.ts';
import type { AlertBatch } from '../../src/domains/ingest/ingest-types.ts';
import { createIngestRateLimiter } from '../../src/domains/ingest/rate-limit.ts';
import { upsertPolicy } from '../../src/domains/llm/llm-repository.ts';
import {
  createPipelineService,
  type PipelineService,
} from '../../src/domains/pipeline/pipeline-service.ts';
import { ProjectionLagError } from '../../src/domains/pipeline/pipeline-types.ts';
import { createProjectionService } from '../../src/domains/projections/projection-service.ts';
import { wazuhAlert } from '../internal/ingest-support.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

// docs/pipeline.md "Inline steps": when the tenant's policy allows no analyzer, the triage job
// writes enrichment and the decision in the transaction that records its own result, instead of
// two more jobs and queue hops. Driven here at the service with no projector and no workers, so
// whether the investigation is projected is the test's choice, not a race.

let db: TestDatabase;
let pipeline: PipelineService;
let system: SystemGate;

before(async () => {
  db = await createTestDatabase();
  system = createSystemGate(db.target);
  pipeline = createPipelineService({
    db: db.app,
    // Every policy below settles triage itself (rules 1–3): a model call is a failure here.
    llm: {
      complete: () => Promise.reject(new Error('the policy decides: no model may be asked')),
    },
    components: {
      cases: () => Promise.reject(new Error('no case is opened by triage')),
      analysis: () => Promise.reject(new Error('no analyzer is allowed')),
    },
  });
});
after(async () => {
  await system.close();
  await db.drop();
});

/** A tenant with `policy`, and one investigation opened by an ingest batch of `level` alerts. */
async function opened(policy: TriagePolicy, level: number) {
  const tenantId = await createTenant(db.pools.app);
  await db.app.withTenant(tenantId, (tx) =>
    upsertPolicy(tx, {
      tenant_id: tenantId,
      policy,
      updated_at: new Date(),
      updated_by: null,
    }),
  );
  const ingest = createIngestService({
    db: db.app,
    limiter: createIngestRateLimiter({ rate: 1_000, burst: 1_000 }, Date.now),
    triageDelayMs: 0,
  });
  await ingest.ingest(tenantId, {
    alerts: [
      wazuhAlert({
        id: `${Date.now()}.1`,
        timestamp: new Date().toISOString(),
        rule: {
          level,
          id: '5712',
          description: 'sshd: brute force',
          groups: ['syslog', 'sshd'],
        },
        data: { srcip: '45.33.32.156' },
      }),
    ] as AlertBatch['alerts'],
    checkpoint: { search_after: [Date.now(), `doc-${randomUUID()}`], index: 'wazuh-alerts-*' },
  });
  const { rows } = await db.pools.mssp.query<{ id: string }>(
    `SELECT stream_id AS id FROM events WHERE tenant_id = $1 AND type = 'investigation.opened'`,
    [tenantId],
  );
  const investigationId = rows[0]?.id;
  assert.ok(investigationId);
  return { tenantId, investigationId };
}

async function pipelineEvents(tenantId: string) {
  const { rows } = await db.pools.mssp.query<{ type: string; actor: string }>(
    `SELECT type, actor FROM events
      WHERE tenant_id = $1 AND stream_type = 'investigation' AND type <> 'alert.received'
        AND type <> 'investigation.opened'
      ORDER BY id`,
    [tenantId],
  );
  return rows;
}

async function queued(tenantId: string): Promise<string[]> {
  const { rows } = await db.pools.admin.query<{ task: string }>(
    `SELECT t.identifier AS task
       FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
      WHERE j.payload->>'tenant_id' = $1 ORDER BY j.id`,
    [tenantId],
  );
  return rows.map((r) => r.task);
}

const run = (tenantId: string, job = randomUUID()) => ({
  tenantId,
  actorId: `worker:${job}`,
  lastAttempt: false,
});

test('issue 33 inline steps: with no analyzer allowed, the triage job writes enrichment and a closing decision itself: one actor, no enrich or decide job', async () => {
  // Level 2 is below the default auto-close level 3: the policy closes it.
  const { tenantId, investigationId } = await opened({ analyzers: [] }, 2);
  const triage = run(tenantId);
  await pipeline.triage(triage, investigationId);

  const events = await pipelineEvents(tenantId);
  assert.deepEqual(
    events.map((e) => e.type),
    [
      'triage.started',
      'triage.completed',
      'enrichment.completed',
      'decision.made',
      'investigation.closed',
    ],
  );
  assert.deepEqual(
    new Set(events.map((e) => e.actor)),
    new Set([triage.actorId]),
    'every step was written by the triage job',
  );
  // Only the triage job ingest queued is left (nothing runs it here): no next step was queued.
  assert.deepEqual(await queued(tenantId), ['triage']);
  const { rows } = await db.pools.mssp.query<{ payload: Record<string, unknown> }>(
    `SELECT payload FROM events WHERE tenant_id = $1 AND type = 'enrichment.completed'`,
    [tenantId],
  );
  assert.deepEqual(rows[0]?.payload.results, []);
  assert.equal(rows[0]?.payload.note, 'no analyzers allowed by the triage policy');
  assert.deepEqual(rows[0]?.payload.iocs, [
    { type: 'ip', value: '45.33.32.156' },
    { type: 'ip', value: '203.0.113.7' },
  ]);

  // A re-run (a retry after a lost acknowledgement) finds triage done and writes nothing twice.
  await pipeline.triage(run(tenantId), investigationId);
  await pipeline.decide(run(tenantId), investigationId);
  assert.equal((await pipelineEvents(tenantId)).length, events.length);
});

test('issue 33 inline steps: a review before the investigation is projected is left to a decide job; nothing of the decision is written early', async () => {
  const { tenantId, investigationId } = await opened(
    { analyzers: [], always_escalate_rule_groups: ['sshd'] },
    10,
  );
  const triage = run(tenantId);
  await pipeline.triage(triage, investigationId);
  assert.deepEqual(
    (await pipelineEvents(tenantId)).map((e) => e.type),
    ['triage.started', 'triage.completed', 'enrichment.completed'],
  );
  assert.deepEqual(await queued(tenantId), ['triage', 'decide']);
  // The decide job itself still refuses until the projector has folded the investigation …
  await assert.rejects(pipeline.decide(run(tenantId), investigationId), ProjectionLagError);
  assert.equal((await pipelineEvents(tenantId)).length, 3, 'the refusal wrote nothing');

  // … and writes the review once it has.
  const projections = createProjectionService({ db: db.app, system });
  for (;;) {
    const fold = await projections.foldNext(tenantId);
    if (fold.kind === 'folded' && fold.caughtUp) break;
  }
  const decide = run(tenantId);
  await pipeline.decide(decide, investigationId);
  const events = await pipelineEvents(tenantId);
  assert.deepEqual(
    events.map((e) => e.type),
    [
      'triage.started',
      'triage.completed',
      'enrichment.completed',
      'decision.made',
      'review.requested',
    ],
  );
  assert.equal(events[3]?.actor, decide.actorId);
  const { rows } = await db.pools.mssp.query<{ proposed_action: string }>(
    'SELECT proposed_action FROM pending_reviews WHERE tenant_id = $1',
    [tenantId],
  );
  assert.deepEqual(rows, [{ proposed_action: 'open_case' }]);
});

test('issue 33 inline steps: a tenant whose policy allows an analyzer still gets its enrich job', async () => {
  const { tenantId, investigationId } = await opened(
    { analyzers: ['AbuseIPDB_1_0'], always_escalate_rule_groups: ['sshd'] },
    10,
  );
  await pipeline.triage(run(tenantId), investigationId);
  assert.deepEqual(
    (await pipelineEvents(tenantId)).map((e) => e.type),
    ['triage.started', 'triage.completed'],
  );
  assert.deepEqual(await queued(tenantId), ['triage', 'enrich']);
});
