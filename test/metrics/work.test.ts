import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { composeCore, composeServices } from '../../src/app/compose.ts';
import { loadConfig } from '../../src/config/index.ts';
import { enqueueJobs } from '../../src/domains/jobs/job-repository.ts';
import type { JobSpec } from '../../src/domains/jobs/job-types.ts';
import { createLogger } from '../../src/log/index.ts';
import { createMetricsRegistry } from '../../src/metrics/registry.ts';
import type { MetricsListener } from '../../src/metrics/server.ts';
import type { JobRun } from '../../src/workers/runtime.ts';
import { startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { type LlmStandIn, startLlmStandIn } from '../support/llm-stand-in.ts';
import { loopbackCertificate } from '../support/loopback-tls.ts';
import { metricsListener, type Scrape, scrape } from './support.ts';

// Issue 15 "Metrics": job queue depth and job durations through the real worker runtime
// (graphile-worker over PostgreSQL), and LLM tokens and cost by tenant through the composed
// LLM service against a local server speaking the provider's protocol.

let db: TestDatabase;
let api: TestApi;
let listener: MetricsListener;
let tenant: string;
/** Lets the `metrics_hold` job finish; replaced for each run. */
let release: () => void = () => undefined;
const held: JobRun[] = [];
/** Runs of `metrics_ok` (a refused job would count as a success without one). */
const done: JobRun[] = [];

/**
 * What the process logged at warn or above (the queue reports each failed attempt there), so
 * an assertion on error counts can say which attempt failed and why.
 */
const logged: string[] = [];
const warnings = new Writable({
  write(chunk, _encoding, done) {
    logged.push(String(chunk).trim());
    done();
  },
});
const why = () => `the process logged:\n${logged.join('\n') || '(nothing)'}`;

before(async () => {
  db = await createTestDatabase();
  tenant = await createTenant(db.pools.app);
  api = await startTestApi(db, {
    logger: createLogger('warn', warnings),
    workers: {
      jobs: {
        metrics_ok: async (run) => {
          done.push(run);
        },
        metrics_fail: async () => {
          throw new Error('this job always fails');
        },
        metrics_hold: (run) => {
          held.push(run);
          return new Promise<void>((resolve) => {
            release = resolve;
          });
        },
      },
      schedules: [],
      pollIntervalMs: 100,
    },
  });
  listener = await metricsListener(api.metrics);
});
after(async () => {
  release();
  await listener.close();
  await api.close();
  await db.drop();
});

function enqueue(jobType: string, extra: Partial<JobSpec> = {}): Promise<void> {
  return db.app.withTenant(tenant, (tx) =>
    enqueueJobs(tx, [{ tenantId: tenant, jobType, input: {}, ...extra }]),
  );
}

async function until(what: string, check: (s: Scrape) => boolean): Promise<Scrape> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const scraped = await scrape(listener);
    if (check(scraped)) return scraped;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const runs = (s: Scrape, task: string, outcome: string) =>
  s.value('svc_job_duration_seconds_count', { task, outcome });
const queued = (s: Scrape, task: string, state: string) =>
  s.value('svc_job_queue_jobs', { task, state });

test('issue 15 metrics: a job run through the worker runtime counts one successful attempt of its task', async () => {
  const before = await scrape(listener);
  await enqueue('metrics_ok');
  const after = await until(
    'metrics_ok ran and left the queue',
    (s) =>
      runs(s, 'metrics_ok', 'success') > runs(before, 'metrics_ok', 'success') &&
      queued(s, 'metrics_ok', 'locked') === 0,
  );
  assert.equal(runs(after, 'metrics_ok', 'success') - runs(before, 'metrics_ok', 'success'), 1);
  assert.equal(runs(after, 'metrics_ok', 'error'), 0, why());
  assert.equal(done.length, 1);
  // The attempt's time lands in a bucket: the +Inf bucket holds every attempt.
  assert.equal(
    after.value('svc_job_duration_seconds_bucket', {
      task: 'metrics_ok',
      outcome: 'success',
      le: '+Inf',
    }),
    runs(after, 'metrics_ok', 'success'),
  );
  assert.equal(queued(after, 'metrics_ok', 'ready') + queued(after, 'metrics_ok', 'locked'), 0);
});

test('issue 15 metrics: a job on its last attempt counts one error and one permanent failure, and shows as failed in the queue', async () => {
  const before = await scrape(listener);
  await enqueue('metrics_fail', { maxAttempts: 1 });
  // The queue records the failure just after reporting it: wait for both.
  const after = await until(
    'metrics_fail failed',
    (s) =>
      s.value('svc_jobs_failed_total', { task: 'metrics_fail' }) > 0 &&
      queued(s, 'metrics_fail', 'locked') === 0,
  );
  assert.equal(
    runs(after, 'metrics_fail', 'error') - runs(before, 'metrics_fail', 'error'),
    1,
    why(),
  );
  assert.equal(runs(after, 'metrics_fail', 'success'), 0);
  assert.equal(after.value('svc_jobs_failed_total', { task: 'metrics_fail' }), 1);
  assert.equal(
    queued(after, 'metrics_fail', 'failed') - queued(before, 'metrics_fail', 'failed'),
    1,
  );
});

test('issue 15 metrics: queue depth by task and state — ready (no worker takes it), scheduled, locked while running', async () => {
  const before = await scrape(listener);
  // No worker of this process knows the task: it waits, ready.
  await enqueue('metrics_nobody');
  await enqueue('metrics_ok', { runAt: new Date(Date.now() + 3_600_000) });
  await enqueue('metrics_hold');
  // The queue locks a job before its handler starts, so a scrape taken after the handler has
  // started sees it locked (a scrape taken while waiting may predate the lock).
  await until('metrics_hold running', () => held.length === 1);
  const running = await scrape(listener);
  assert.equal(
    queued(running, 'metrics_nobody', 'ready') - queued(before, 'metrics_nobody', 'ready'),
    1,
  );
  assert.equal(
    queued(running, 'metrics_ok', 'scheduled') - queued(before, 'metrics_ok', 'scheduled'),
    1,
  );
  assert.equal(queued(running, 'metrics_hold', 'locked'), 1);
  const { rows } = await db.pools.admin.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM graphile_worker.jobs',
  );
  assert.equal(running.value('svc_job_queue_jobs'), rows[0]?.n);

  release();
  // The queue deletes a finished job just after reporting it: the gauge follows within a poll.
  const finished = await until(
    'metrics_hold done and gone',
    (s) => runs(s, 'metrics_hold', 'success') === 1 && queued(s, 'metrics_hold', 'locked') === 0,
  );
  assert.equal(queued(finished, 'metrics_hold', 'ready'), 0);
});

test('issue 15 metrics: LLM tokens (input, output) and cost in USD by tenant, as recorded in llm_usage; a cached answer adds nothing', async (t) => {
  const tls = await loopbackCertificate();
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-metrics-llm-'));
  const caFile = path.join(dir, 'ca.pem');
  await writeFile(caFile, tls.cert);
  const llm: LlmStandIn = await startLlmStandIn({ tls });
  const metrics = createMetricsRegistry();
  const core = await composeCore({
    config: {
      ...loadConfig({
        SVC_LLM_PROVIDER: 'openai',
        SVC_LLM_BASE_URL: llm.openaiBaseUrl,
        SVC_LLM_MODEL: 'metrics-model',
        SVC_LLM_PRICES: JSON.stringify({
          'metrics-model': { input_per_mtok: 3, output_per_mtok: 15 },
        }),
        SVC_OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8',
        SVC_OUTBOUND_CA_FILE: caFile,
      }),
      dataDir: dir,
    },
    logger: createLogger('silent'),
    target: db.target,
    db: db.app,
    metrics,
  });
  const llmListener = await metricsListener(metrics);
  t.after(async () => {
    await llmListener.close();
    await core.close();
    await llm.close();
    await rm(dir, { recursive: true, force: true });
  });
  const services = composeServices(core);
  const other = await createTenant(db.pools.app);
  const usage = async (id: string) => {
    const { rows } = await db.pools.mssp.query<{ i: string; o: string; c: string }>(
      `SELECT coalesce(sum(input_tokens), 0) AS i, coalesce(sum(output_tokens), 0) AS o,
              coalesce(sum(cost_usd), 0) AS c FROM llm_usage WHERE tenant_id = $1`,
      [id],
    );
    return { input: Number(rows[0]?.i), output: Number(rows[0]?.o), cost: Number(rows[0]?.c) };
  };
  const ask = {
    purpose: 'triage',
    system: 'You triage security alerts.',
    user: 'Alert: 40 failed logins for root on db-01 from 203.0.113.7',
    maxTokens: 200,
  };
  const before = await scrape(llmListener);
  const answer = await services.llm.complete(tenant, ask);
  assert.equal(answer.kind, 'answer');
  if (answer.kind !== 'answer') return;
  assert.equal(answer.cached, false);
  const after = await scrape(llmListener);
  const moved = (name: string, labels: Record<string, string>) =>
    after.value(name, labels) - before.value(name, labels);
  const recorded = await usage(tenant);
  assert.ok(recorded.input > 0 && recorded.output > 0);
  assert.equal(moved('svc_llm_tokens_total', { tenant, kind: 'input' }), recorded.input);
  assert.equal(moved('svc_llm_tokens_total', { tenant, kind: 'output' }), recorded.output);
  assert.equal(recorded.input, answer.usage.inputTokens);
  const cost = moved('svc_llm_cost_usd_total', { tenant });
  assert.ok(Math.abs(cost - answer.costUsd) < 1e-12);
  assert.ok(Math.abs(cost - (recorded.input * 3 + recorded.output * 15) / 1e6) < 1e-9);
  assert.equal(after.value('svc_llm_tokens_total', { tenant: other }), 0);

  // The same prompt again: answered from the cache, no tokens spent, nothing counted.
  const cached = await services.llm.complete(tenant, ask);
  assert.equal(cached.kind === 'answer' && cached.cached, true);
  const again = await scrape(llmListener);
  assert.equal(
    again.value('svc_llm_tokens_total', { tenant }),
    after.value('svc_llm_tokens_total', { tenant }),
  );
  assert.equal(llm.requests.length, 1);
});
