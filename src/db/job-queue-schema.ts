import pg from 'pg';

/** The schema graphile-worker keeps its queue in (its default name). */
export const JOB_QUEUE_SCHEMA = 'graphile_worker';

/**
 * Installs or upgrades the job queue's schema as svc_admin (its own numbered migrations, which
 * the library keeps), then lets svc_app use it: workers and the transactions that enqueue run
 * as svc_app. The queue holds ids only (tenant, job, investigation), never tenant data, and is
 * install-scoped, so it has no RLS (docs/jobs.md).
 */
export async function installJobQueueSchema(admin: pg.ClientConfig): Promise<void> {
  // Loaded here: the library is large and only migrations and workers need it.
  const { Logger, runMigrations } = await import('graphile-worker');
  const quiet = new Logger(() => () => undefined);
  const pool = new pg.Pool({ ...admin, max: 1 });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  try {
    await runMigrations({ pgPool: pool, schema: JOB_QUEUE_SCHEMA, logger: quiet });
    await pool.query(`
      GRANT USAGE ON SCHEMA ${JOB_QUEUE_SCHEMA} TO svc_app;
      GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${JOB_QUEUE_SCHEMA} TO svc_app;
      GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA ${JOB_QUEUE_SCHEMA} TO svc_app;
      GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${JOB_QUEUE_SCHEMA} TO svc_app;
      REVOKE ALL ON SCHEMA ${JOB_QUEUE_SCHEMA} FROM PUBLIC;`);
    // Enqueueing ranks a job among its tenant's waiting ones (src/domains/jobs/job-repository.ts,
    // fairness): this index keeps that count to the tenant's own waiting jobs.
    await pool.query(`
      CREATE INDEX IF NOT EXISTS svc_jobs_waiting_by_tenant
        ON ${JOB_QUEUE_SCHEMA}._private_jobs ((payload->>'tenant_id'))
        WHERE locked_at IS NULL`);
    // graphile-worker enables RLS on its private tables (no policy: only their owner may use
    // them). svc_app runs the queue, so it gets a policy on each; none of them is tenant data.
    await pool.query(`
      DO $$
      DECLARE t record;
      BEGIN
        FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                  WHERE n.nspname = '${JOB_QUEUE_SCHEMA}' AND c.relkind = 'r' AND c.relrowsecurity
        LOOP
          EXECUTE format('DROP POLICY IF EXISTS svc_app_queue ON ${JOB_QUEUE_SCHEMA}.%I', t.relname);
          EXECUTE format('CREATE POLICY svc_app_queue ON ${JOB_QUEUE_SCHEMA}.%I TO svc_app USING (true) WITH CHECK (true)', t.relname);
        END LOOP;
      END
      $$`);
  } finally {
    await pool.end();
  }
}
