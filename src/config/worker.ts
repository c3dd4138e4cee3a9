import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { LlmPrices } from '../../contracts/outbound.ts';
import {
  ConfigError,
  duration,
  durationExpected,
  durationMs,
  type Env,
  settingReader,
} from './env.ts';

export interface WorkerConfig {
  /** Run the job workers inside `svc serve` (`svc worker` always runs them). */
  enabled: boolean;
  /** Jobs one process runs at once. */
  concurrency: number;
  /** How long a new investigation gathers alerts before its triage job runs. */
  triageDelayMs: number;
  /** Per attempt of an LLM request. */
  llmTimeoutMs: number;
  /** USD per million tokens, by model; models not listed cost 0 (docs/llm.md). */
  llmPrices: Record<string, { input_per_mtok: number; output_per_mtok: number }>;
  /** How often a worker process looks for jobs of dead workers (docs/jobs.md). */
  reapEveryMs: number;
  /** A job locked less than this long is never taken from its worker, dead or alive. */
  reapGraceMs: number;
}

export const WORKER_SETTINGS = {
  SVC_WORKER: {
    schema: Type.Union([Type.Literal('on'), Type.Literal('off')]),
    expected: 'on or off (run the job workers inside svc serve)',
  },
  SVC_WORKER_CONCURRENCY: {
    schema: Type.Integer({ minimum: 1, maximum: 256 }),
    expected: 'an integer 1-256 (jobs one process runs at once)',
  },
  SVC_TRIAGE_DELAY: { schema: duration, expected: durationExpected },
  SVC_LLM_TIMEOUT: { schema: duration, expected: durationExpected },
  SVC_WORKER_REAP_EVERY: { schema: duration, expected: durationExpected },
  SVC_WORKER_REAP_GRACE: { schema: duration, expected: durationExpected },
  SVC_LLM_PRICES: {
    schema: Type.String({ minLength: 2, maxLength: 65536 }),
    expected: 'a JSON object {"<model>": {"input_per_mtok": <usd>, "output_per_mtok": <usd>}, ...}',
  },
} as const;

const read = settingReader(WORKER_SETTINGS);

function prices(text: string | undefined): WorkerConfig['llmPrices'] {
  if (text === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError(
      `SVC_LLM_PRICES: not JSON; expected ${WORKER_SETTINGS.SVC_LLM_PRICES.expected}`,
    );
  }
  if (!Compile(LlmPrices).Check(parsed)) {
    throw new ConfigError(`SVC_LLM_PRICES: expected ${WORKER_SETTINGS.SVC_LLM_PRICES.expected}`);
  }
  return parsed as WorkerConfig['llmPrices'];
}

export function readWorker(env: Env): WorkerConfig {
  return {
    enabled: (read(env, 'SVC_WORKER') ?? 'on') === 'on',
    concurrency: read(env, 'SVC_WORKER_CONCURRENCY') ?? 4,
    triageDelayMs: durationMs(read(env, 'SVC_TRIAGE_DELAY') ?? '10s'),
    llmTimeoutMs: Math.max(1_000, durationMs(read(env, 'SVC_LLM_TIMEOUT') ?? '60s')),
    llmPrices: prices(read(env, 'SVC_LLM_PRICES')),
    reapEveryMs: Math.max(1_000, durationMs(read(env, 'SVC_WORKER_REAP_EVERY') ?? '5s')),
    // A new worker takes its liveness lock just after it starts (src/db/job-queue-liveness.ts):
    // under a second of grace could take a job from a live worker whose lock is not there yet.
    reapGraceMs: Math.max(1_000, durationMs(read(env, 'SVC_WORKER_REAP_GRACE') ?? '10s')),
  };
}
