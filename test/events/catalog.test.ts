import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Compile } from 'typebox/compile';
import { EVENT_CATALOG, EVENT_TYPES, type EventType, isEventType } from '../../contracts/events.ts';
import { catalogSection } from '../../scripts/event-catalog.ts';
import {
  attackAlert,
  ingest,
  type PipelineRig,
  pipelineTenant,
  startPipelineRig,
  until,
} from '../pipeline/support.ts';

/**
 * The event catalog (contracts/events.ts; docs/events.md "Catalog"): every event svc writes is a
 * catalog type with a payload its schema accepts, every event name the code uses is one, and
 * every catalog type has a writer. The compiler already refuses an unknown name at a typed
 * append, fold or subscription; this catches the rest (payloads built as JSON text on the hot
 * ingest path, SQL, names in plain strings) and the catalog's own dead entries.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const check = Object.fromEntries(
  EVENT_TYPES.map((type) => [type, Compile(EVENT_CATALOG[type].payload)]),
) as Record<EventType, ReturnType<typeof Compile>>;

function files(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
}

/**
 * Whether a file touches the event store or its streams: it imports the catalog, the event
 * repository, the projections' event helpers, the pipeline's stream reader or the web's
 * subscription hook, or it has SQL on the `events` table. Other dotted names (audit actions
 * such as `investigation.close`, webhook event names) live elsewhere and are not events.
 */
function touchesEvents(source: string): boolean {
  return (
    /from '[^']*(?:contracts\/events|contracts\/event-types|domains\/events\/|events\/event-repository|projections\/event-fields|projections\/projection-types|pipeline\/pipeline-repository|shared\/events)\.ts'/.test(
      source,
    ) ||
    /\b(?:FROM|INTO|UPDATE)\s+events\b/.test(source) ||
    // A list of stream event names for a subscription (web/mssp/tenant-states.ts).
    /\b[A-Z_]+_EVENT_TYPES\s*(?::[^=]*)?=\s*\[/.test(source)
  );
}

const NAME = `'([a-z_]+(?:\\.[a-z_]+)+)'`;
/** The places an event name is passed to a writer, a reader or a subscription. */
const USES: RegExp[] = [
  // `type: 'x'` (an append), `.type === 'x'`, SQL `type = 'x'` / `type <> 'x'`.
  new RegExp(`\\btype\\s*(?::|===|!==|==|!=|=|<>)\\s*${NAME}`, 'g'),
  // The pipeline's stream helpers, the folds' typed payload reader.
  new RegExp(`\\b(?:has|last|append|payloadOf)\\(\\s*[^()']*?${NAME}`, 'g'),
];
/** Lists of event names: a projection's Set, named lists, SQL `type IN (…)`, typed arrays. */
const LISTS: RegExp[] = [
  /new Set(?:<[^>]*>)?\(\s*\[([^\]]*)\]/g,
  /\b[A-Z_]*(?:EVENTS|EVENT_TYPES)\b[^=\n]*=\s*\[([^\]]*)\]/g,
  /\btype\s+IN\s*\(([^)]*)\)/g,
  /\[([^\]]*)\]\s*satisfies\s+(?:readonly\s+)?EventType\[\]/g,
];

interface Use {
  file: string;
  name: string;
}

/** Every event name the code under `dirs` uses, by file. */
function eventNamesUsed(dirs: string[]): Use[] {
  const uses: Use[] = [];
  for (const file of dirs.flatMap(files)) {
    const source = readFileSync(path.join(ROOT, file), 'utf8');
    if (!touchesEvents(source)) continue;
    for (const pattern of USES)
      for (const m of source.matchAll(pattern)) if (m[1]) uses.push({ file, name: m[1] });
    for (const pattern of LISTS)
      for (const m of source.matchAll(pattern))
        for (const item of (m[1] ?? '').matchAll(new RegExp(NAME, 'g')))
          if (item[1]) uses.push({ file, name: item[1] });
  }
  return uses;
}

test('Catalog (b): every event name src/ and web/ pass to a writer, a reader or a subscription is a catalog type', () => {
  const uses = eventNamesUsed(['src', 'web']);
  const unknown = uses.filter((u) => !isEventType(u.name)).map((u) => `${u.file}: ${u.name}`);
  assert.deepEqual(unknown, [], 'names the catalog (contracts/events.ts) lacks');
  // The scan sees the places it is meant to see (so it cannot pass by finding nothing).
  const seen = new Set(uses.map((u) => `${u.file}: ${u.name}`));
  for (const expected of [
    'src/domains/pipeline/pipeline-service.ts: case.opened',
    'src/domains/ingest/ingest-service.ts: alert.received',
    'src/domains/projections/analyzer-stats-projection.ts: analyzer.completed',
    'src/domains/events/event-repository.ts: alert.received',
    'web/mssp/tenant-states.ts: tenant.lifecycle.drift',
  ])
    assert.ok(seen.has(expected), `the scan misses ${expected}`);
});

test('Catalog (b): only tests and benchmarks append without the catalog (appendUncheckedEvent)', () => {
  const offenders = ['src', 'web']
    .flatMap(files)
    .filter((file) => file !== 'src/domains/events/event-repository.ts')
    .filter((file) => file !== 'src/domains/events/index.ts')
    .filter((file) => readFileSync(path.join(ROOT, file), 'utf8').includes('appendUncheckedEvent'));
  assert.deepEqual(offenders, []);
});

/**
 * The kinds the lifecycle trigger (sql/0010) copies to the stream as `tenant.lifecycle.<kind>`:
 * the last CHECK on tenant_lifecycle_events.kind among the migrations.
 */
function lifecycleKinds(): string[] {
  const migrations = readdirSync(path.join(ROOT, 'sql'))
    .filter((f) => /^\d{4}_.*\.sql$/.test(f))
    .sort();
  let kinds: string[] = [];
  for (const file of migrations) {
    const sql = readFileSync(path.join(ROOT, 'sql', file), 'utf8');
    for (const m of sql.matchAll(/CHECK \(kind IN \(([^)]*)\)\)/g)) {
      const listed = [...(m[1] ?? '').matchAll(/'([a-z_]+)'/g)].map((k) => k[1] ?? '');
      if (listed.includes('transition')) kinds = listed;
    }
  }
  return kinds;
}

/** The catalog types some writer in src/ appends (a typed append names its type literally). */
function writtenTypes(): Set<string> {
  const writers = files('src/domains').filter((file) => {
    if (file.startsWith('src/domains/projections/')) return false;
    const source = readFileSync(path.join(ROOT, file), 'utf8');
    return /\b(?:appendEvent|appendToStream|appendStreamStarts)\b/.test(source);
  });
  const written = new Set<string>();
  for (const file of writers) {
    const source = readFileSync(path.join(ROOT, file), 'utf8');
    for (const m of source.matchAll(new RegExp(NAME, 'g')))
      if (m[1] && isEventType(m[1])) written.add(m[1]);
  }
  for (const kind of lifecycleKinds()) written.add(`tenant.lifecycle.${kind}`);
  return written;
}

test('Catalog (c): every catalog type has a writer (no dead entries)', () => {
  const written = writtenTypes();
  const dead = EVENT_TYPES.filter((type) => !written.has(type));
  assert.deepEqual(dead, [], 'catalog types nothing appends');
  assert.ok(lifecycleKinds().includes('drift'), 'the lifecycle kinds are read from sql/');
});

test('Catalog: docs/events.md lists the catalog as contracts/events.ts describes it', () => {
  const doc = readFileSync(path.join(ROOT, 'docs/events.md'), 'utf8');
  assert.ok(
    doc.includes(catalogSection()),
    'docs/events.md "Catalog" is out of date: run `npx tsx scripts/event-catalog.ts --write`',
  );
});

/** Every event of the rig's database, as svc_mssp reads it (no tenant context). */
async function storedEvents(rig: PipelineRig) {
  const { rows } = await rig.db.pools.mssp.query<{
    id: string;
    type: string;
    stream_type: string;
    payload: unknown;
  }>('SELECT id, type, stream_type, payload FROM events ORDER BY id');
  return rows;
}

async function streamOf(rig: PipelineRig, tenantId: string): Promise<string[]> {
  const { rows } = await rig.db.pools.mssp.query<{ type: string }>(
    `SELECT type FROM events WHERE tenant_id = $1 AND stream_type = 'investigation' ORDER BY id`,
    [tenantId],
  );
  return rows.map((r) => r.type);
}

/** Waits until the tenant's investigation streams hold `type`. */
function streamHas(rig: PipelineRig, tenantId: string, type: EventType) {
  return until(`${type} for ${tenantId}`, async () =>
    (await streamOf(rig, tenantId)).includes(type) ? true : undefined,
  );
}

async function firstReview(rig: PipelineRig, tenantId: string) {
  return until('a review', async () => {
    const res = await rig.admin.mssp.tenantReviews({ params: { tenant_id: tenantId } });
    return res.status === 200 ? res.body.items[0] : undefined;
  });
}

const answer = (verdict: string, confidence: number, action: string) =>
  JSON.stringify({
    verdict,
    severity: 'medium',
    confidence,
    rationale: 'Catalog test answer.',
    recommended_action: action,
  });

test('Catalog (a): the real pipeline and the analyst desk write only catalog events, each payload valid against its schema', async () => {
  const rig = await startPipelineRig();
  try {
    // Escalation with a malicious analyzer verdict, approved: a case opens in TheHive.
    rig.llm.respond(() => answer('true_positive', 0.9, 'escalate'));
    const escalated = await pipelineTenant(rig);
    await ingest(rig, escalated.token, [attackAlert(1), attackAlert(2)]);
    const review = await firstReview(rig, escalated.tenantId);
    const approved = await rig.admin.mssp.approveReview({
      params: { tenant_id: escalated.tenantId, review_id: review.id },
      body: { note: 'catalog' },
    });
    assert.equal(approved.status, 200);
    await streamHas(rig, escalated.tenantId, 'case.opened');

    // A confident false positive closes by itself; a rule level below the policy's closes
    // without a model (triage by policy).
    rig.llm.respond(() => answer('false_positive', 0.97, 'close'));
    const quiet = await pipelineTenant(rig, { analyzers: [] });
    await ingest(rig, quiet.token, [attackAlert(3)]);
    await ingest(
      rig,
      quiet.token,
      [attackAlert(4, { rule: { level: 2, id: '530', description: 'Quiet rule', groups: [] } })],
      2,
    );
    await until('both closed by the pipeline', async () => {
      const types = await streamOf(rig, quiet.tenantId);
      return types.filter((t) => t === 'investigation.closed').length === 2 ? true : undefined;
    });

    // An unsure false positive asks to close: one approval closes it (by review), one
    // rejection sends it back to the analysts.
    rig.llm.respond(() => answer('false_positive', 0.4, 'review'));
    const unsure = await pipelineTenant(rig, { analyzers: [] });
    await ingest(rig, unsure.token, [attackAlert(5)]);
    const closure = await firstReview(rig, unsure.tenantId);
    assert.equal(closure.proposed_action, 'close_investigation');
    const closedByReview = await rig.admin.mssp.approveReview({
      params: { tenant_id: unsure.tenantId, review_id: closure.id },
      body: { note: 'agreed' },
    });
    assert.equal(closedByReview.status, 200);
    await streamHas(rig, unsure.tenantId, 'investigation.closed');
    const desk = await pipelineTenant(rig, { analyzers: [] });
    await ingest(rig, desk.token, [attackAlert(6)]);
    const toReject = await firstReview(rig, desk.tenantId);
    const rejected = await rig.admin.mssp.rejectReview({
      params: { tenant_id: desk.tenantId, review_id: toReject.id },
      body: { note: 'look again' },
    });
    assert.equal(rejected.status, 200);
    await streamHas(rig, desk.tenantId, 'review.rejected');

    // Triage fails (two malformed answers); the case component refuses the approved case.
    rig.llm.respond(() => 'not an answer');
    const failing = await pipelineTenant(rig, { analyzers: [] }, { thehiveCredential: 'wrong' });
    await ingest(rig, failing.token, [attackAlert(7)]);
    const failed = await firstReview(rig, failing.tenantId);
    await rig.admin.mssp.approveReview({
      params: { tenant_id: failing.tenantId, review_id: failed.id },
      body: { note: 'open it' },
    });
    await streamHas(rig, failing.tenantId, 'action.failed');

    // The analyst's work on the reopened investigation (docs/investigations.md).
    const me = await rig.admin.auth.me();
    assert.equal(me.status, 200);
    if (me.status !== 200) return;
    const target = { tenant_id: desk.tenantId, id: toReject.investigation_id };
    const version = async () => {
      const res = await rig.admin.mssp.incident({ params: target });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.status === 200 ? res.body.incident.version : -1;
    };
    const steps = [
      (version: number) =>
        rig.admin.mssp.assignIncident({
          params: target,
          body: { assignee_id: me.body.identity.user_id, version },
        }),
      (version: number) =>
        rig.admin.mssp.addIncidentNote({
          params: target,
          body: { body: 'Checked the **scanner** list.', visibility: 'shared', version },
        }),
      (version: number) =>
        rig.admin.mssp.changeIncidentSeverity({
          params: target,
          body: { severity: 'low', reason: 'internal scanner', version },
        }),
      (version: number) =>
        rig.admin.mssp.closeIncident({
          params: target,
          body: { verdict: 'false_positive', reason: 'known scanner', version },
        }),
      (version: number) =>
        rig.admin.mssp.reopenIncident({
          params: target,
          body: { reason: 'it came back', version },
        }),
    ];
    for (const step of steps) {
      const res = await step(await version());
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }

    const events = await storedEvents(rig);
    const problems: string[] = [];
    for (const event of events) {
      if (!isEventType(event.type)) {
        problems.push(`${event.id} ${event.type}: not in the catalog`);
        continue;
      }
      if (event.stream_type !== EVENT_CATALOG[event.type].stream)
        problems.push(`${event.id} ${event.type}: on a ${event.stream_type} stream`);
      const schema = check[event.type];
      if (!schema.Check(event.payload))
        problems.push(
          `${event.id} ${event.type}: ${[...schema.Errors(event.payload)]
            .map((e) => `${e.instancePath} ${e.message}`)
            .join('; ')} in ${JSON.stringify(event.payload).slice(0, 300)}`,
        );
    }
    assert.deepEqual(problems, []);
    // Every type the pipeline and the desk write was seen here (the lifecycle kinds depend on
    // the orchestrator, which this rig does not run).
    const seen = new Set(events.map((e) => e.type));
    const missing = EVENT_TYPES.filter((t) => !t.startsWith('tenant.lifecycle.') && !seen.has(t));
    assert.deepEqual(missing, [], 'catalog types this run did not produce');
    const closedBy = events
      .filter((e) => e.type === 'investigation.closed')
      .map((e) => (e.payload as { by: string }).by);
    assert.deepEqual([...new Set(closedBy)].sort(), ['analyst', 'pipeline', 'review']);
    const triagedBy = events
      .filter((e) => e.type === 'triage.completed')
      .map((e) => (e.payload as { by: string }).by);
    assert.deepEqual([...new Set(triagedBy)].sort(), ['model', 'policy']);
  } finally {
    await rig.close();
  }
});
