import Type from 'typebox';
import { duration, durationExpected, durationMs, type Env, settingReader } from './env.ts';

export interface ProjectorConfig {
  enabled: boolean;
  sweepMs: number;
  concurrency: number;
}

export const PROJECTOR_SETTINGS = {
  SVC_PROJECTOR: {
    schema: Type.Union([Type.Literal('on'), Type.Literal('off')]),
    expected: 'on or off (run the projector inside svc serve)',
  },
  SVC_PROJECTOR_SWEEP: { schema: duration, expected: durationExpected },
  SVC_PROJECTOR_CONCURRENCY: {
    schema: Type.Integer({ minimum: 1, maximum: 64 }),
    expected: 'an integer 1-64 (tenants one projector folds at once)',
  },
} as const;

const read = settingReader(PROJECTOR_SETTINGS);

export function readProjector(env: Env): ProjectorConfig {
  return {
    enabled: (read(env, 'SVC_PROJECTOR') ?? 'on') === 'on',
    // At least a second apart: a zero sweep must not become a busy loop.
    sweepMs: Math.max(1_000, durationMs(read(env, 'SVC_PROJECTOR_SWEEP') ?? '5s')),
    // A fold is a handful of round trips per tenant: with two at a time, 50 busy tenants were
    // visited too rarely to keep up with ingest (docs/benchmarks.md "Ingest"); four overlap them.
    concurrency: read(env, 'SVC_PROJECTOR_CONCURRENCY') ?? 4,
  };
}
