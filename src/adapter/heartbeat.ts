import type { Logger } from '../log/index.ts';
import { pause } from './backoff.ts';
import type { InternalClient } from './svc-client.ts';
import { authorized, type TokenSource } from './token.ts';

/** The configuration is re-read every this many heartbeats (and with the first). */
const CONFIG_EVERY = 10;

export type StatusValue = string | number | boolean | null;

export interface HeartbeatDeps {
  client: InternalClient;
  tokens: TokenSource;
  version: string;
  intervalMs: number;
  /** The flat status map sent with each heartbeat (ingest, indexer, lag…). */
  status: () => Record<string, StatusValue>;
  logger: Logger;
  signal: AbortSignal;
}

/**
 * The heartbeat (spec §6.2): the first one at start — its arrival activates a provisioning
 * tenant — then one every interval, independent of ingest, so a tenant whose indexer is still
 * starting is activated all the same. A failed heartbeat is logged and the next one comes on
 * schedule; there is nothing to catch up.
 */
export function createHeartbeat(deps: HeartbeatDeps) {
  const { client, tokens, logger } = deps;
  const state = {
    /** The last heartbeat reached svc and was answered 200. */
    ok: false,
    tenantState: undefined as string | undefined,
    configRevision: undefined as number | undefined,
  };

  async function readConfig(): Promise<void> {
    const res = await authorized(tokens, (headers) => client.config({ headers }));
    if (res.status !== 200) {
      logger.warn(
        { status: res.status, code: res.body.code },
        'svc refused the configuration read',
      );
      return;
    }
    const revision = res.body.config_revision;
    if (revision !== state.configRevision) {
      logger.info(
        {
          config_revision: revision,
          previous: state.configRevision ?? null,
          integrations: res.body.integrations.map((i) => `${i.kind}/${i.name}`),
        },
        state.configRevision === undefined ? 'configuration loaded' : 'configuration changed',
      );
      state.configRevision = revision;
    }
  }

  async function beat(n: number): Promise<void> {
    try {
      const status = { ...deps.status(), config_revision: state.configRevision ?? null };
      const res = await authorized(tokens, (headers) =>
        client.health({ body: { version: deps.version, status }, headers }),
      );
      if (res.status !== 200) {
        state.ok = false;
        logger.warn({ status: res.status, code: res.body.code }, 'svc refused the heartbeat');
        return;
      }
      if (!state.ok) logger.info({ tenant_state: res.body.tenant_state }, 'heartbeat answered');
      state.ok = true;
      if (res.body.activated) logger.info('the tenant is active (first heartbeat)');
      state.tenantState = res.body.tenant_state;
      if (n % CONFIG_EVERY === 0) await readConfig();
    } catch (error) {
      if (state.ok) logger.warn({ err: (error as Error).message }, 'heartbeat failed');
      else logger.debug({ err: (error as Error).message }, 'heartbeat failed');
      state.ok = false;
    }
  }

  return {
    state,
    async run(): Promise<void> {
      for (let n = 0; !deps.signal.aborted; n++) {
        await beat(n);
        if (!(await pause(deps.intervalMs, deps.signal))) return;
      }
    },
  };
}

export type Heartbeat = ReturnType<typeof createHeartbeat>;
