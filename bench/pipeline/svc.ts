import { generateKeyPairSync } from 'node:crypto';
import pg from 'pg';
import {
  type Core,
  composeCore,
  composePipeline,
  composeProjector,
  composeServices,
  composeWorkers,
} from '../../src/app/compose.ts';
import { type Config, loadConfig } from '../../src/config/index.ts';
import type { DatabaseTarget } from '../../src/db/target.ts';
import { clientConfig } from '../../src/db/target.ts';
import type { IngestService } from '../../src/domains/ingest/ingest-service.ts';
import { createJobSuspensionGate } from '../../src/domains/tenants/tenant-suspension.ts';
import { createLogger } from '../../src/log/index.ts';
import { pipelineJobs } from '../../src/workers/jobs/pipeline-jobs.ts';
import type { JobHandler } from '../../src/workers/runtime.ts';
import { BENCH_HASH } from '../api/servers.ts';
import type { Recorder } from './timing.ts';

/** Settings that tune the workers and the model calls pass through from the environment. */
const TUNABLE = /^SVC_(WORKER_|LLM_TIMEOUT|LLM_PRICES)/;

/**
 * svc's configuration as an install would set it for a model server on the loopback: the
 * install defaults (SVC_LLM_*) name the stand-in, its CA is trusted for outbound HTTPS, the
 * loopback is allowed outbound, and triage starts as soon as an investigation opens.
 */
function benchConfig(llm: { baseUrl: string; caFile: string }): Config {
  const passed = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => TUNABLE.test(name)),
  ) as Record<string, string>;
  const pem = generateKeyPairSync('ed25519')
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  const config = loadConfig({
    ...passed,
    SVC_LLM_PROVIDER: 'openai',
    SVC_LLM_BASE_URL: llm.baseUrl,
    SVC_LLM_MODEL: 'bench-model',
    SVC_OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8',
    SVC_OUTBOUND_CA_FILE: llm.caFile,
    SVC_TRIAGE_DELAY: '0s',
  });
  return { ...config, authMode: 'internal', tokenKey: { kind: 'pem', pem } };
}

export interface Workers {
  stop(): Promise<void>;
}

export interface BenchSvc {
  config: Config;
  /**
   * The API side's core (svc serve's pool of 10): ingest opens the investigations, and the
   * projector folds them (a review needs its investigation projected).
   */
  core: Core;
  ingest: IngestService;
  /** svc_mssp, for the bench's own reads. */
  mssp: pg.Pool;
  /**
   * A `svc worker` process's parts: a core with a pool of concurrency + 2 (src/cli/worker.ts)
   * and composeWorkers over it, running the pipeline's jobs (or `jobs`) timed by `recorder`.
   */
  startWorkers(
    concurrency: number,
    recorder: Recorder,
    jobs?: Record<string, JobHandler>,
  ): Promise<Workers>;
  close(): Promise<void>;
}

export async function startSvc(
  target: DatabaseTarget,
  llm: { baseUrl: string; caFile: string },
): Promise<BenchSvc> {
  const config = benchConfig(llm);
  const logger = createLogger('warn');
  const core = await composeCore({ config, logger, target, hashParams: BENCH_HASH });
  const projector = await composeProjector(core, { run: true });
  const mssp = new pg.Pool({ ...clientConfig(target, 'mssp'), max: 2 });
  return {
    config,
    core,
    ingest: composeServices(core).ingest,
    mssp,
    async startWorkers(concurrency, recorder, jobs) {
      const workerCore = await composeCore({
        config,
        logger,
        target,
        hashParams: BENCH_HASH,
        poolSize: concurrency + 2,
      });
      // No cluster: no Secrets (the stand-in wants no key) and no tenant components (analyzers
      // are off by the default policy, and nothing is approved, so no case is opened).
      const table =
        jobs ??
        pipelineJobs(
          composePipeline(workerCore, { kubeConfig: undefined }),
          createJobSuspensionGate({ db: workerCore.db }),
        );
      try {
        const workers = await composeWorkers(workerCore, {
          concurrency,
          jobs: recorder.instrument(table),
        });
        return {
          async stop() {
            await workers.stop();
            await workerCore.close();
          },
        };
      } catch (error) {
        await workerCore.close();
        throw error;
      }
    },
    async close() {
      await mssp.end();
      await projector.stop();
      await core.close();
    },
  };
}
