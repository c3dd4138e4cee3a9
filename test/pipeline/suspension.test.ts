import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { auditRows } from '../internal/support.ts';
import {
  attackAlert,
  ingest,
  type PipelineRig,
  pipelineTenant,
  startPipelineRig,
  streamTypes,
  until,
} from './support.ts';

// Issue 15 "Suspension": no LLM spend for a suspended tenant, and nothing lost. Real API, real
// workers on the PostgreSQL queue, the stand-in LLM counting the requests it gets.

let rig: PipelineRig;
before(async () => {
  // Long enough for the suspension to land before the triage job comes due.
  rig = await startPipelineRig({ env: { SVC_TRIAGE_DELAY: '3s' } });
});
after(async () => {
  await rig.close();
});

async function parkedJobs(tenantId: string): Promise<string[]> {
  const { rows } = await rig.db.pools.mssp.query<{ job_type: string }>(
    'SELECT job_type FROM parked_jobs WHERE tenant_id = $1 ORDER BY id',
    [tenantId],
  );
  return rows.map((r) => r.job_type);
}

test('issue 15 a triage job of a suspended tenant makes no model call: it is parked, and the resume puts it back so triage completes', async () => {
  rig.llm.respond(() =>
    JSON.stringify({
      verdict: 'false_positive',
      severity: 'low',
      confidence: 0.97,
      rationale: 'The customer’s own scanner.',
      recommended_action: 'close',
    }),
  );
  const { tenantId, token } = await pipelineTenant(rig, { analyzers: [] });
  const calls = rig.llm.requests.length;
  await ingest(rig, token, [attackAlert(1)]);
  const suspended = await rig.admin.mssp.suspend({ params: { tenant_id: tenantId }, body: {} });
  assert.equal(suspended.status, 200);

  await until('the triage job parked', async () =>
    (await parkedJobs(tenantId)).length > 0 ? true : undefined,
  );
  // Give a wrongly running job every chance to reach the model.
  await sleep(1_500);
  assert.equal(rig.llm.requests.length, calls, 'no model call while suspended');
  assert.deepEqual(await parkedJobs(tenantId), ['triage']);
  assert.ok(!(await streamTypes(rig.db, tenantId)).includes('triage.completed'));

  const resumed = await rig.admin.mssp.resume({ params: { tenant_id: tenantId }, body: {} });
  assert.equal(resumed.status, 200);
  const resume = (await auditRows(rig.db, tenantId)).find((r) => r.action === 'tenant.resume');
  assert.equal(resume?.details.requeued_jobs, 1);
  await until('the investigation closed after the resume', async () =>
    (await streamTypes(rig.db, tenantId)).includes('investigation.closed') ? true : undefined,
  );
  assert.equal(rig.llm.requests.length, calls + 1, 'one model call, after the resume');
  assert.deepEqual(await parkedJobs(tenantId), []);
});
