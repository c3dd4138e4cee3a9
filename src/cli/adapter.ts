import { runAdapter } from '../adapter/main.ts';
import { readAdapterSettings } from '../adapter/settings.ts';
import { ConfigError } from '../config/index.ts';
import { createLogger } from '../log/index.ts';

/**
 * `svc adapter`: the per-tenant sidecar. It has no database and reads none of svc's own
 * configuration (no loadConfig): only the SVC_* variables of docs/adapter.md. A bad setting
 * stops it with exit 2 and one line naming the variable.
 */
export async function adapterCommand(): Promise<void> {
  try {
    const settings = readAdapterSettings(process.env);
    await runAdapter(settings, createLogger(settings.logLevel));
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`svc adapter: invalid configuration: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
}
