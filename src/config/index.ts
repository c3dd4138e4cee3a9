import { AUTH_SETTINGS, type AuthConfig, type AuthMode, readAuth, readAuthMode } from './auth.ts';
import { CLI_SETTINGS } from './cli.ts';
import { DATABASE_SETTINGS, type DatabaseConfig, readDatabase } from './database.ts';
import type { Env, Setting } from './env.ts';
import { INGEST_SETTINGS, type IngestConfig, readIngest } from './ingest.ts';
import { INSTALL_SETTINGS, type InstallConfig, readInstall, readPlacement } from './install.ts';
import { METRICS_SETTINGS, type MetricsConfig, readMetrics } from './metrics.ts';
import {
  ORCHESTRATOR_SETTINGS,
  type OrchestratorConfig,
  readOrchestrator,
} from './orchestrator.ts';
import { OUTBOUND_SETTINGS, type OutboundConfig, readOutbound } from './outbound.ts';
import { PROJECTOR_SETTINGS, type ProjectorConfig, readProjector } from './projector.ts';
import { readServer, SERVER_SETTINGS, type ServerConfig } from './server.ts';
import { readTokenKey, TOKEN_KEY_SETTINGS, type TokenKeyConfig } from './token-key.ts';
import { readWorker, WORKER_SETTINGS, type WorkerConfig } from './worker.ts';

export type { AuthConfig, AuthMode } from './auth.ts';
export {
  AUDIT_CREDENTIAL_KEYS,
  CREDENTIAL_KEYS,
  type Credential,
  type DatabaseConfig,
  type DatabaseCredentials,
  type DatabaseRole,
  type ServiceRole,
} from './database.ts';
export { ConfigError, durationMs } from './env.ts';
export type { IngestConfig } from './ingest.ts';
export type { InstallConfig } from './install.ts';
export type { MetricsConfig } from './metrics.ts';
export { type OrchestratorConfig, parseImage } from './orchestrator.ts';
export type { ProjectorConfig } from './projector.ts';
export type { TokenKeyConfig } from './token-key.ts';
export type { WorkerConfig } from './worker.ts';

export interface Config extends ServerConfig {
  authMode: AuthMode;
  auth: AuthConfig;
  tokenKey: TokenKeyConfig;
  /** Namespace of the install (spec §1 item 1), where per-tenant Secrets wait. */
  installNamespace: string;
  /**
   * svc's own ServiceAccount in the install namespace (the chart's serviceAccount.name): the
   * subject of the RoleBinding the orchestrator makes in each tenant namespace.
   */
  serviceAccount: string;
  database: DatabaseConfig;
  install: InstallConfig;
  orchestrator: OrchestratorConfig;
  projector: ProjectorConfig;
  worker: WorkerConfig;
  outbound: OutboundConfig;
  ingest: IngestConfig;
  metrics: MetricsConfig;
}

/** Every environment variable svc reads; the README's configuration table mirrors this. */
export const SETTINGS = {
  ...SERVER_SETTINGS,
  ...AUTH_SETTINGS,
  ...TOKEN_KEY_SETTINGS,
  ...INSTALL_SETTINGS,
  ...ORCHESTRATOR_SETTINGS,
  ...PROJECTOR_SETTINGS,
  ...WORKER_SETTINGS,
  ...OUTBOUND_SETTINGS,
  ...INGEST_SETTINGS,
  ...METRICS_SETTINGS,
  ...CLI_SETTINGS,
  ...DATABASE_SETTINGS,
} as const satisfies Record<string, Setting>;

/** Reads and validates the whole configuration; throws ConfigError on the first bad value. */
export function loadConfig(env: Env = process.env, cwd = process.cwd()): Config {
  return {
    ...readServer(env, cwd),
    authMode: readAuthMode(env),
    auth: readAuth(env),
    tokenKey: readTokenKey(env),
    ...readPlacement(env),
    database: readDatabase(env),
    install: readInstall(env),
    orchestrator: readOrchestrator(env),
    projector: readProjector(env),
    worker: readWorker(env),
    outbound: readOutbound(env),
    ingest: readIngest(env),
    metrics: readMetrics(env),
  };
}
