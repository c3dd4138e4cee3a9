import Type from 'typebox';
import { ConfigError, type Env, settingReader } from './env.ts';

/** The per-tenant alert ingest limit (docs/ingest.md): a token bucket over alerts. */
export interface IngestConfig {
  /** Alerts per second a tenant's bucket refills by. */
  rate: number;
  /** Alerts a tenant may send at once after a quiet spell (the bucket's size). */
  burst: number;
}

/** A batch holds up to 500 alerts: a smaller bucket would refuse a full batch for ever. */
const MIN_BURST = 500;
const MAX_RATE = 1_000_000;
const MAX_BURST = 10_000_000;

/**
 * Digits only: a TypeBox Integer would first be converted (`1.5` → 1, `0x10` → 16, `1e4` →
 * 10000, `true` → 1), which reads a typo as a different limit instead of refusing it.
 */
const decimal = Type.String({ pattern: '^[1-9][0-9]{0,7}$' });

export const INGEST_SETTINGS = {
  SVC_INGEST_RATE: {
    schema: decimal,
    expected: `an integer 1-${MAX_RATE} (alerts per second per tenant)`,
  },
  SVC_INGEST_BURST: {
    schema: decimal,
    expected: `an integer ${MIN_BURST}-${MAX_BURST} (alerts a tenant may send at once)`,
  },
} as const;

const read = settingReader(INGEST_SETTINGS);

function within(
  env: Env,
  name: keyof typeof INGEST_SETTINGS,
  min: number,
  max: number,
): number | undefined {
  const text = read(env, name);
  if (text === undefined) return undefined;
  const value = Number(text);
  if (value < min || value > max) {
    throw new ConfigError(
      `${name}: expected ${INGEST_SETTINGS[name].expected}, got ${JSON.stringify(env[name])}`,
    );
  }
  return value;
}

export function readIngest(env: Env): IngestConfig {
  return {
    rate: within(env, 'SVC_INGEST_RATE', 1, MAX_RATE) ?? 10_000,
    burst: within(env, 'SVC_INGEST_BURST', MIN_BURST, MAX_BURST) ?? 20_000,
  };
}
