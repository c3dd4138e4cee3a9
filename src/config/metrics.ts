import Type from 'typebox';
import { type Env, hostname, settingReader } from './env.ts';

/** The Prometheus listener (src/metrics/server.ts), apart from the API port. */
export interface MetricsConfig {
  host: string;
  /** Undefined when SVC_METRICS_PORT=0: no listener, nothing exposed. */
  port: number | undefined;
}

export const METRICS_SETTINGS = {
  SVC_METRICS_PORT: {
    schema: Type.Integer({ minimum: 0, maximum: 65535 }),
    expected: 'an integer port 1-65535, or 0 to turn the metrics listener off',
  },
  SVC_METRICS_HOST: { schema: hostname, expected: 'an IP address or hostname to listen on' },
} as const;

const read = settingReader(METRICS_SETTINGS);

export function readMetrics(env: Env): MetricsConfig {
  const port = read(env, 'SVC_METRICS_PORT') ?? 9464;
  return {
    // Loopback unless told otherwise: a laptop's scrape data stays on the laptop; the system
    // chart sets 0.0.0.0 so Prometheus reaches the pod on its IP.
    host: read(env, 'SVC_METRICS_HOST') ?? '127.0.0.1',
    port: port === 0 ? undefined : port,
  };
}
