import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { JobRejectedError, runTenantJob } from '../../src/workers/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant, TENANT_ROW_FIXTURES } from '../support/fixtures.ts';

let db: TestDatabase;
let tenantA: string;
let tenantB: string;
before(async () => {
  db = await createTestDatabase();
  tenantA = await createTenant(db.pools.app);
  tenantB = await createTenant(db.pools.app);
  for (const t of [tenantA, tenantB]) {
    await db.app.withTenant(t, async (tx) => TENANT_ROW_FIXTURES.investigations?.(tx, t));
  }
});
after(() => db.drop());

test('§5.7.5 a job payload without tenant_id is refused before any database access', async () => {
  let ran = false;
  for (const payload of [
    { job_id: randomUUID(), job_type: 'triage' },
    { tenant_id: null, job_id: randomUUID(), job_type: 'triage' },
    { tenant_id: 'alpha', job_id: randomUUID(), job_type: 'triage' },
    { tenant_id: tenantA, job_type: 'triage' },
    null,
    'tenant_id',
  ]) {
    await assert.rejects(
      runTenantJob(db.app, payload, async () => {
        ran = true;
      }),
      (error: Error) => error instanceof JobRejectedError,
    );
  }
  assert.equal(ran, false);
});

test('§5.7.5 a job runs inside its tenant context and sees only that tenant', async () => {
  const jobId = randomUUID();
  const result = await runTenantJob(
    db.app,
    { tenant_id: tenantA, job_id: jobId, job_type: 'triage' },
    async ({ tx, actorId }) => {
      const { rows } = await tx.query<{ tenant_id: string }>(
        'SELECT tenant_id FROM investigations',
      );
      return { tenants: [...new Set(rows.map((r) => r.tenant_id))], actorId };
    },
  );
  assert.deepEqual(result, { tenants: [tenantA], actorId: `worker:${jobId}` });
});

test('§7 a worker query without tenant context returns zero rows', async () => {
  const { rowCount } = await db.app.withoutTenant((tx) => tx.query('SELECT * FROM investigations'));
  assert.equal(rowCount, 0);
});

test('§5.7.5 a job cannot write into another tenant than its own', async () => {
  await assert.rejects(
    runTenantJob(
      db.app,
      { tenant_id: tenantA, job_id: randomUUID(), job_type: 'enrich' },
      ({ tx }) =>
        tx.query(
          `INSERT INTO investigations (tenant_id, title, severity) VALUES ($1, 'x', 'low')`,
          [tenantB],
        ),
    ),
    /row-level security/,
  );
});
