import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { createSystemGate, type SystemGate } from '../../src/db/system-gate.ts';
import { appendUncheckedEvent, type StoredEvent } from '../../src/domains/events/index.ts';
import { foldEvents } from '../../src/domains/projections/folds.ts';
import { noCheckpoints } from '../../src/domains/projections/projection-registry.ts';
import {
  createProjectionService,
  type ProjectionService,
} from '../../src/domains/projections/projection-service.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import {
  analyzerCompleted,
  openInvestigation,
  projectionRows,
  receiveAlert,
  seeded,
  wazuhAlert,
} from './support.ts';

let db: TestDatabase;
let system: SystemGate;
before(async () => {
  db = await createTestDatabase();
  system = createSystemGate(db.target);
});
after(async () => {
  await system.close();
  await db.drop();
});

const T0 = Date.UTC(2026, 10, 26, 9, 0, 0);
const minutes = (n: number) => new Date(T0 + n * 60_000);

function service(batchSize = 1_000): ProjectionService {
  return createProjectionService({ db: db.app, system, batchSize });
}

async function catchUp(tenantId: string, batchSize = 1_000): Promise<void> {
  const projections = service(batchSize);
  for (;;) {
    const outcome = await projections.foldNext(tenantId);
    assert.equal(outcome.kind, 'folded');
    if (outcome.kind === 'folded' && outcome.caughtUp) return;
  }
}

/** The next position of each investigation's stream (1 is its opening). */
const positions = new Map<string, number>();

async function open(tenantId: string, at = minutes(0)): Promise<string> {
  const alert = wazuhAlert({ ruleId: '5712', level: 10, at });
  const id = await openInvestigation(db.app, tenantId, alert, at);
  positions.set(id, 2);
  return id;
}

/** A pipeline event on the investigation's own stream, as the triage pipeline appends it. */
async function pipeline(
  tenantId: string,
  investigationId: string,
  type: string,
  payload: unknown,
  at: Date,
): Promise<string> {
  const seq = positions.get(investigationId) ?? 2;
  positions.set(investigationId, seq + 1);
  const event = await db.app.withTenant(tenantId, (tx) =>
    appendUncheckedEvent(tx, {
      tenantId,
      streamType: 'investigation',
      streamId: investigationId,
      streamSeq: seq,
      type,
      actor: 'worker',
      occurredAt: at,
      payload:
        typeof payload === 'object' && payload !== null
          ? { investigation_id: investigationId, ...payload }
          : payload,
    }),
  );
  return event.id;
}

interface Workflow {
  status: string;
  verdict: string | null;
  summary: string | null;
  resolved_at: Date | null;
  closed_at: Date | null;
  updated_at: Date;
  last_event_id: string;
}

async function workflow(tenantId: string, id: string): Promise<Workflow> {
  const { rows } = await db.pools.mssp.query<Workflow>(
    `SELECT status, verdict, summary, resolved_at, closed_at, updated_at, last_event_id::text
       FROM investigations WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id],
  );
  assert.ok(rows[0], 'the investigation row exists');
  return rows[0];
}

const completed = (verdict: string, rationale: string) => ({
  by: 'model',
  verdict,
  severity: 'high',
  confidence: 0.91,
  rationale,
  recommended_action: 'review',
});

test('issue 13 triage.started moves an open investigation to triaging; triage.completed sets verdict and summary (capped at 4,000 characters)', async () => {
  const t = await createTenant(db.pools.app);
  const inv = await open(t);
  await catchUp(t);
  const started = await pipeline(t, inv, 'triage.started', { attempt: 1 }, minutes(1));
  await catchUp(t);
  assert.deepEqual(await workflow(t, inv), {
    status: 'triaging',
    verdict: null,
    summary: null,
    resolved_at: null,
    closed_at: null,
    updated_at: minutes(1),
    last_event_id: started,
  });
  const rationale = `Brute force from one source. ${'x'.repeat(5_000)}`;
  const done = await pipeline(
    t,
    inv,
    'triage.completed',
    completed('true_positive', rationale),
    minutes(2),
  );
  await catchUp(t);
  const row = await workflow(t, inv);
  assert.deepEqual(
    { ...row, summary: undefined },
    {
      status: 'triaging',
      verdict: 'true_positive',
      summary: undefined,
      resolved_at: null,
      closed_at: null,
      updated_at: minutes(2),
      last_event_id: done,
    },
  );
  assert.equal(row.summary, rationale.slice(0, 4_000));
});

test('issue 13 triage.failed writes "Triage failed: <reason>" as the summary and leaves the status', async () => {
  const t = await createTenant(db.pools.app);
  const inv = await open(t);
  await pipeline(t, inv, 'triage.started', { attempt: 1 }, minutes(1));
  await pipeline(t, inv, 'triage.failed', { reason: 'llm budget exhausted' }, minutes(2));
  await catchUp(t);
  const row = await workflow(t, inv);
  assert.deepEqual(
    [row.status, row.summary, row.verdict],
    ['triaging', 'Triage failed: llm budget exhausted', null],
  );
});

test('issue 13 enrichment.completed, decision.made and review.approved move only updated_at and last_event_id', async () => {
  const t = await createTenant(db.pools.app);
  const inv = await open(t);
  await pipeline(t, inv, 'triage.completed', completed('benign', 'Scheduled scan.'), minutes(1));
  await catchUp(t);
  const beforeRow = await workflow(t, inv);
  await pipeline(
    t,
    inv,
    'enrichment.completed',
    { iocs: ['203.0.113.7'], results: [] },
    minutes(2),
  );
  await pipeline(t, inv, 'decision.made', { action: 'review', reason: 'policy' }, minutes(3));
  const last = await pipeline(
    t,
    inv,
    'review.approved',
    { review_id: randomUUID(), action: 'open_case' },
    minutes(4),
  );
  await catchUp(t);
  assert.deepEqual(await workflow(t, inv), {
    ...beforeRow,
    updated_at: minutes(4),
    last_event_id: last,
  });
});

test('issue 13 review.requested awaits review; case.opened resolves it with resolved_at = the event time', async () => {
  const t = await createTenant(db.pools.app);
  const inv = await open(t);
  const review = randomUUID();
  await pipeline(t, inv, 'triage.started', { attempt: 1 }, minutes(1));
  await pipeline(
    t,
    inv,
    'review.requested',
    { review_id: review, proposed_action: 'open_case', rationale: 'confirmed' },
    minutes(2),
  );
  await catchUp(t);
  assert.equal((await workflow(t, inv)).status, 'awaiting_review');
  await pipeline(t, inv, 'review.approved', { review_id: review, action: 'open_case' }, minutes(3));
  const opened = await pipeline(
    t,
    inv,
    'case.opened',
    { review_id: review, case_id: '~4096', case_number: 12 },
    minutes(4),
  );
  await catchUp(t);
  const row = await workflow(t, inv);
  assert.deepEqual(
    [row.status, row.resolved_at, row.closed_at, row.last_event_id],
    ['resolved', minutes(4), null, opened],
  );
});

test('issue 13 action.failed gives an approved-but-failed investigation back to the analysts (open) with the reason', async () => {
  const t = await createTenant(db.pools.app);
  const inv = await open(t);
  const review = randomUUID();
  await pipeline(
    t,
    inv,
    'review.requested',
    { review_id: review, proposed_action: 'open_case', rationale: 'confirmed' },
    minutes(1),
  );
  await pipeline(t, inv, 'review.approved', { review_id: review, action: 'open_case' }, minutes(2));
  await pipeline(
    t,
    inv,
    'action.failed',
    { review_id: review, action: 'open_case', kind: 'auth', reason: 'TheHive answered 401' },
    minutes(3),
  );
  await catchUp(t);
  const row = await workflow(t, inv);
  assert.deepEqual(
    [row.status, row.summary],
    ['open', 'Approved action failed: TheHive answered 401'],
  );
});

test('issue 13 investigation.closed closes with its verdict and closed_at = the event time', async () => {
  const t = await createTenant(db.pools.app);
  const inv = await open(t);
  await pipeline(t, inv, 'triage.completed', completed('inconclusive', 'Unclear.'), minutes(1));
  await pipeline(t, inv, 'decision.made', { action: 'close', reason: 'low level' }, minutes(2));
  await pipeline(
    t,
    inv,
    'investigation.closed',
    { verdict: 'false_positive', reason: 'auto_close_below_level', by: 'policy' },
    minutes(3),
  );
  await catchUp(t);
  const row = await workflow(t, inv);
  assert.deepEqual(
    [row.status, row.verdict, row.closed_at, row.summary],
    ['closed', 'false_positive', minutes(3), 'Unclear.'],
  );
});

test('issue 13 review.rejected closes with the analyst’s verdict, or reopens (clearing closed_at) when reopen is true', async () => {
  const t = await createTenant(db.pools.app);
  const closedOne = await open(t);
  const reopened = await open(t);
  const noVerdict = await open(t);
  for (const inv of [closedOne, reopened, noVerdict]) {
    await pipeline(t, inv, 'triage.completed', completed('true_positive', 'Bad.'), minutes(1));
    await pipeline(
      t,
      inv,
      'review.requested',
      { review_id: randomUUID(), proposed_action: 'open_case', rationale: 'Bad.' },
      minutes(2),
    );
  }
  const rejected = (verdict: string | undefined, reopen: boolean) => ({
    review_id: randomUUID(),
    action: 'open_case',
    ...(verdict ? { verdict } : {}),
    reopen,
  });
  await pipeline(t, closedOne, 'review.rejected', rejected('false_positive', false), minutes(3));
  await pipeline(t, noVerdict, 'review.rejected', rejected(undefined, false), minutes(3));
  await pipeline(t, reopened, 'review.rejected', rejected(undefined, false), minutes(3));
  await catchUp(t);
  const closed = await workflow(t, closedOne);
  assert.deepEqual(
    [closed.status, closed.verdict, closed.closed_at],
    ['closed', 'false_positive', minutes(3)],
  );
  const kept = await workflow(t, noVerdict);
  assert.deepEqual(
    [kept.status, kept.verdict],
    ['closed', 'true_positive'],
    'absent: verdict kept',
  );
  assert.equal((await workflow(t, reopened)).status, 'closed');
  // A second rejection that reopens leaves the closed state, even from closed.
  await pipeline(t, reopened, 'review.rejected', rejected('benign', true), minutes(4));
  await catchUp(t);
  const open_ = await workflow(t, reopened);
  assert.deepEqual(
    [open_.status, open_.verdict, open_.closed_at, open_.resolved_at],
    ['open', 'benign', null, null],
  );
});

// Each sequence ends in the given state whether folded one event per batch or all in one.
const ORDERS: { name: string; events: [string, Record<string, unknown>][]; status: string }[] = [
  {
    name: 'triage.started after investigation.closed does not reopen',
    events: [
      ['investigation.closed', { verdict: 'benign', reason: 'r', by: 'policy' }],
      ['triage.started', { attempt: 2 }],
    ],
    status: 'closed',
  },
  {
    name: 'review.requested after case.opened stays resolved',
    events: [
      ['case.opened', { review_id: randomUUID(), case_id: '~1', case_number: 1 }],
      ['review.requested', { review_id: randomUUID(), proposed_action: 'open_case' }],
    ],
    status: 'resolved',
  },
  {
    name: 'investigation.closed after case.opened stays resolved, without closed_at',
    events: [
      ['case.opened', { review_id: randomUUID(), case_id: '~1', case_number: 1 }],
      ['investigation.closed', { verdict: 'benign', reason: 'r', by: 'analyst' }],
    ],
    status: 'resolved',
  },
  {
    name: 'triage.started from awaiting_review stays awaiting_review (only open starts triage)',
    events: [
      ['review.requested', { review_id: randomUUID(), proposed_action: 'close_investigation' }],
      ['triage.started', { attempt: 2 }],
    ],
    status: 'awaiting_review',
  },
  {
    name: 'a reopened investigation can be triaged again',
    events: [
      ['investigation.closed', { verdict: 'benign', reason: 'r', by: 'policy' }],
      ['review.rejected', { review_id: randomUUID(), action: 'close_investigation', reopen: true }],
      ['triage.started', { attempt: 1 }],
    ],
    status: 'triaging',
  },
];

for (const order of ORDERS) {
  test(`issue 13 statuses never go back from closed/resolved: ${order.name}`, async () => {
    const t = await createTenant(db.pools.app);
    const stepwise = await open(t);
    const batched = await open(t);
    await catchUp(t);
    let minute = 1;
    for (const [type, payload] of order.events) {
      await pipeline(t, stepwise, type, payload, minutes(minute));
      await catchUp(t);
      await pipeline(t, batched, type, payload, minutes(minute++));
    }
    await catchUp(t);
    const a = await workflow(t, stepwise);
    const b = await workflow(t, batched);
    assert.equal(a.status, order.status);
    const comparable = (w: Workflow) => ({ ...w, last_event_id: undefined });
    assert.deepEqual(comparable(b), comparable(a), 'one batch folds as event by event');
    if (order.status === 'resolved') assert.equal(a.closed_at, null);
  });
}

test('issue 13 opened, alerted and triaged in one batch ends right; updated_at never goes back', async () => {
  const t = await createTenant(db.pools.app);
  const inv = await open(t, minutes(0));
  const alert = wazuhAlert({ ruleId: '5712', level: 13, at: minutes(5) });
  await receiveAlert(db.app, t, inv, alert, minutes(5));
  await pipeline(t, inv, 'triage.started', { attempt: 1 }, minutes(6));
  await pipeline(t, inv, 'triage.completed', completed('true_positive', 'Real.'), minutes(7));
  // A late event with an earlier time (a clock behind) does not move updated_at back.
  const late = await pipeline(
    t,
    inv,
    'review.requested',
    { review_id: randomUUID(), proposed_action: 'open_case', rationale: 'Real.' },
    minutes(3),
  );
  await catchUp(t);
  const { rows } = await db.pools.mssp.query(
    `SELECT status, verdict, summary, severity, alert_count, last_alert_at, updated_at,
            last_event_id::text FROM investigations WHERE tenant_id = $1 AND id = $2`,
    [t, inv],
  );
  assert.deepEqual(rows, [
    {
      status: 'awaiting_review',
      verdict: 'true_positive',
      summary: 'Real.',
      severity: 'critical',
      alert_count: 1,
      last_alert_at: minutes(5),
      updated_at: minutes(7),
      last_event_id: late,
    },
  ]);
});

test('issue 13 malformed pipeline payloads are skipped, never stall the tenant', async () => {
  const t = await createTenant(db.pools.app);
  const inv = await open(t);
  await pipeline(t, inv, 'triage.completed', completed('benign', 'Fine.'), minutes(1));
  await catchUp(t);
  // Unreadable parts: no verdict from 'maybe' or a number, no summary from a non-string, a
  // reopen that is not `true`; a payload that is no object still names its stream.
  await pipeline(t, inv, 'triage.completed', { verdict: 'maybe', rationale: 42 }, minutes(2));
  await pipeline(t, inv, 'review.requested', null, minutes(3));
  await pipeline(t, inv, 'review.rejected', { verdict: 7, reopen: 'yes' }, minutes(4));
  await pipeline(t, inv, 'triage.failed', { reason: ['x'] }, minutes(5));
  await pipeline(t, inv, 'case.opened', 'not an object', minutes(6));
  // An id that is no UUID on a stream that is not an investigation's: nothing to fold into.
  const stray = await db.app.withTenant(t, (tx) =>
    appendUncheckedEvent(tx, {
      tenantId: t,
      streamType: 'review',
      streamId: randomUUID(),
      streamSeq: 1,
      type: 'investigation.closed',
      occurredAt: minutes(7),
      payload: { investigation_id: 'not-a-uuid', verdict: 'benign' },
    }),
  );
  await catchUp(t);
  const row = await workflow(t, inv);
  assert.deepEqual(
    [row.status, row.verdict, row.summary, row.closed_at, row.updated_at],
    ['closed', 'benign', 'Triage failed', minutes(4), minutes(6)],
  );
  const { rows } = await db.pools.mssp.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM projection_checkpoints
      WHERE tenant_id = $1 AND projection = 'investigations' AND last_event_id = $2`,
    [t, stray.id],
  );
  assert.equal(rows[0]?.n, 1, 'the checkpoint passed every event');
});

test('issue 13 a second opening of the investigation in the batch drops the pipeline moves before it (the opening resets them)', () => {
  const inv = randomUUID();
  let id = 0;
  const event = (type: string, payload: unknown): StoredEvent => ({
    id: String(++id),
    tenantId: randomUUID(),
    streamType: 'investigation',
    streamId: inv,
    streamSeq: id,
    type,
    payload,
    actor: 'worker',
    occurredAt: minutes(id),
    recordedAt: minutes(id),
  });
  const opening = { investigation_id: inv, title: 't', severity: 'low' };
  const none = noCheckpoints();
  const before = foldEvents(
    [event('investigation.opened', opening), event('investigation.closed', { verdict: 'benign' })],
    none,
  );
  assert.deepEqual(
    before.investigations.workflow.map((w) => [w.outcomes.open.status, w.verdict]),
    [['closed', 'benign']],
  );
  const reopened = foldEvents(
    [
      event('investigation.opened', opening),
      event('investigation.closed', { verdict: 'benign' }),
      event('investigation.opened', opening),
    ],
    none,
  );
  assert.deepEqual(reopened.investigations.workflow, []);
});

const PIPELINE_TYPES = [
  'triage.started',
  'triage.completed',
  'triage.failed',
  'enrichment.completed',
  'decision.made',
  'review.requested',
  'review.approved',
  'review.rejected',
  'investigation.closed',
  'case.opened',
  // The analyst's work (docs/investigations.md), on the same stream.
  'investigation.assigned',
  'note.added',
  'investigation.reopened',
  'investigation.severity_changed',
] as const;
/** MSSP users the random mix assigns investigations to (the column references users). */
const ASSIGNEES: string[] = [];
const VERDICT_VALUES = ['true_positive', 'false_positive', 'benign', 'inconclusive'];

function pick<T>(random: () => number, values: readonly T[]): T {
  return values[Math.floor(random() * values.length)] as T;
}

function randomPayload(type: string, random: () => number): unknown {
  if (random() < 0.05) return pick(random, [null, { verdict: 'maybe', reopen: 1 }, []]);
  const review_id = randomUUID();
  switch (type) {
    case 'triage.started':
      return { attempt: 1 + Math.floor(random() * 3) };
    case 'triage.completed':
      return completed(pick(random, VERDICT_VALUES), `rationale ${random()}`);
    case 'triage.failed':
      return { reason: pick(random, ['timeout', 'budget exhausted', 'invalid answer']) };
    case 'enrichment.completed':
      return { iocs: ['203.0.113.7'], results: [{ analyzer: 'abuseipdb', malicious: false }] };
    case 'decision.made':
      return { action: pick(random, ['close', 'review']), reason: 'policy' };
    case 'review.requested':
      return {
        review_id,
        proposed_action: pick(random, ['open_case', 'close_investigation']),
        rationale: 'r',
      };
    case 'review.approved':
      return { review_id, action: 'open_case' };
    case 'review.rejected':
      return {
        review_id,
        action: 'open_case',
        ...(random() < 0.5 ? { verdict: pick(random, VERDICT_VALUES) } : {}),
        reopen: random() < 0.4,
      };
    case 'investigation.closed':
      return { verdict: pick(random, VERDICT_VALUES), reason: 'r', by: 'policy' };
    case 'investigation.assigned':
      return {
        assignee_id: random() < 0.3 ? null : pick(random, ASSIGNEES),
        previous_assignee_id: null,
      };
    case 'note.added':
      return { note_id: review_id, body: 'n', visibility: pick(random, ['internal', 'shared']) };
    case 'investigation.reopened':
      return { reason: 'r' };
    case 'investigation.severity_changed':
      return {
        from: 'info',
        to: pick(random, ['info', 'low', 'medium', 'high', 'critical']),
        reason: 'r',
      };
    default:
      return { review_id, case_id: `~${Math.floor(random() * 1e6)}`, case_number: 1 };
  }
}

/** Openings, alerts, analyzer runs and pipeline events in a random order and random times. */
async function randomMix(tenantId: string, count: number, random: () => number): Promise<void> {
  const investigations: string[] = [];
  for (let i = 0; i < count; i++) {
    const at = minutes(Math.floor(random() * 600));
    const roll = random();
    if (investigations.length === 0 || roll < 0.08) {
      investigations.push(await open(tenantId, at));
    } else if (roll < 0.2) {
      const alert = wazuhAlert({ ruleId: '5710', level: Math.floor(random() * 16), at });
      await receiveAlert(db.app, tenantId, pick(random, investigations), alert, at);
    } else if (roll < 0.24) {
      await analyzerCompleted(db.app, tenantId, {
        analyzer: 'abuseipdb',
        durationMs: 100,
        success: true,
        at,
      });
    } else {
      const type = pick(random, PIPELINE_TYPES);
      await pipeline(tenantId, pick(random, investigations), type, randomPayload(type, random), at);
    }
    // Folds now and then, in batches of varied sizes, so batches cut the mix anywhere.
    if (random() < 0.25) await service(pick(random, [1, 2, 5, 40])).foldNext(tenantId);
  }
}

test('§2.3 issue 13 rebuild equals incremental for a random mix of pipeline events across tenants, and resets drifted workflow columns', async () => {
  const tenants = [
    await createTenant(db.pools.app),
    await createTenant(db.pools.app),
    await createTenant(db.pools.app),
  ];
  for (const n of [1, 2])
    ASSIGNEES.push(
      await db.app.withoutTenant(async (tx) => {
        const { rows } = await tx.query<{ id: string }>(
          `INSERT INTO users (email, role) VALUES ($1, 'analyst') RETURNING id`,
          [`mix-${n}-${randomUUID().slice(0, 8)}@mssp.test`],
        );
        return rows[0]?.id ?? '';
      }),
    );
  const random = seeded(13);
  for (const t of tenants) await randomMix(t, 250, random);
  const incremental: Record<string, unknown> = {};
  for (const t of tenants) {
    await catchUp(t, 3);
    incremental[t] = await projectionRows(db, t);
  }
  // The mix reaches every status, verdicts and summaries: the comparison below is not vacuous.
  const { rows } = await db.pools.mssp.query<{
    status: string;
    verdicts: number;
    summaries: number;
  }>(
    `SELECT status, count(verdict)::int AS verdicts, count(summary)::int AS summaries
       FROM investigations WHERE tenant_id = ANY($1::uuid[]) GROUP BY status ORDER BY status`,
    [tenants],
  );
  assert.deepEqual(
    rows.map((r) => r.status),
    ['awaiting_review', 'closed', 'open', 'resolved', 'triaging'],
  );
  assert.ok(rows.some((r) => r.verdicts > 0) && rows.some((r) => r.summaries > 0));
  // The analyst's work reached the rows too: assignees and pinned severities.
  const work = await db.pools.mssp.query<{ assigned: number; pinned: number }>(
    `SELECT count(assignee_id)::int AS assigned, count(*) FILTER (WHERE severity_pinned)::int AS pinned
       FROM investigations WHERE tenant_id = ANY($1::uuid[])`,
    [tenants],
  );
  assert.ok((work.rows[0]?.assigned ?? 0) > 0 && (work.rows[0]?.pinned ?? 0) > 0);
  // Drift in the workflow columns (a bug, a hand edit): the rebuild refolds them from the store.
  await db.pools.mssp.query(
    `UPDATE investigations SET status = 'closed', verdict = 'benign', summary = 'drift',
            closed_at = now(), resolved_at = now(), assignee_id = NULL,
            severity_pinned = NOT severity_pinned WHERE tenant_id = ANY($1::uuid[])`,
    [tenants],
  );
  for (const t of tenants) await service().rebuild(t);
  for (const t of tenants) assert.deepEqual(await projectionRows(db, t), incremental[t]);
});
