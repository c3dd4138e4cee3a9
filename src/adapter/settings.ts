import { readFileSync } from 'node:fs';
import path from 'node:path';
import Type from 'typebox';
import { Uuid } from '../../contracts/route.ts';
import { ConfigError, type Env, hostname, settingReader } from '../config/env.ts';
import type { LogLevel } from '../config/server.ts';

/** Everything `svc adapter` runs from, read once from the environment (docs/adapter.md). */
export interface AdapterSettings {
  /** svc's base URL, without a trailing slash. */
  apiUrl: string;
  tenantId: string;
  /** The mounted `svc-adapter-bootstrap` Secret (`tenant-id`, `credential`). */
  bootstrapDir: string | undefined;
  /** The mounted adapter token, rewritten by svc's weekly refresh; may not exist yet. */
  tokenFile: string | undefined;
  indexer: IndexerSettings;
  batchSize: number;
  pollMs: number;
  /** How long after its ingest stamp a document may become searchable and still be read once. */
  lateMs: number;
  heartbeatMs: number;
  port: number;
  host: string;
  logLevel: LogLevel;
}

export interface IndexerSettings {
  url: string;
  /** Index pattern searched, e.g. `wazuh-alerts-*`. */
  index: string;
  usernameFile: string | undefined;
  passwordFile: string | undefined;
  /** PEM bundle trusted for the indexer's TLS certificate (else the system store). */
  ca: string | undefined;
}

const httpUrl = Type.String({ pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$', maxLength: 2048 });
const filePath = Type.String({ minLength: 1, maxLength: 4096 });
const seconds = Type.Number({ exclusiveMinimum: 0, maximum: 86_400 });

export const ADAPTER_SETTINGS = {
  SVC_API_URL: {
    schema: httpUrl,
    expected: 'an http(s) URL of svc, e.g. http://svc.svc-system:8080',
  },
  SVC_TENANT_ID: { schema: Uuid, expected: "the tenant's uuid" },
  SVC_BOOTSTRAP_DIR: { schema: filePath, expected: 'a directory path' },
  SVC_TOKEN_FILE: { schema: filePath, expected: 'a file path' },
  SVC_INDEXER_URL: {
    schema: httpUrl,
    expected: 'an http(s) URL of the indexer, e.g. https://monitor-indexer:9200',
  },
  SVC_INDEXER_USERNAME_FILE: { schema: filePath, expected: 'a file path' },
  SVC_INDEXER_PASSWORD_FILE: { schema: filePath, expected: 'a file path' },
  SVC_INDEXER_CA_FILE: { schema: filePath, expected: 'a file path' },
  SVC_INDEXER_INDEX: {
    // An index pattern goes into the URL path: no slashes, no query, no spaces.
    schema: Type.String({ pattern: '^[a-z0-9*][a-z0-9*._,+-]{0,254}$' }),
    expected: 'an index pattern such as wazuh-alerts-*',
  },
  SVC_INGEST_BATCH: {
    schema: Type.Integer({ minimum: 1, maximum: 500 }),
    expected: 'an integer 1-500',
  },
  SVC_POLL_SECONDS: { schema: seconds, expected: 'a positive number of seconds, e.g. 2 or 0.5' },
  SVC_LATE_WINDOW_SECONDS: {
    schema: Type.Number({ minimum: 1, maximum: 86_400 }),
    expected: 'a number of seconds from 1 to 86400, e.g. 900',
  },
  SVC_HEARTBEAT_SECONDS: {
    schema: seconds,
    expected: 'a positive number of seconds, e.g. 30',
  },
  SVC_ADAPTER_PORT: {
    schema: Type.Integer({ minimum: 0, maximum: 65535 }),
    expected: 'an integer port 0-65535 (0: any free port)',
  },
  SVC_ADAPTER_HOST: { schema: hostname, expected: 'an IP address or hostname to listen on' },
  SVC_LOG_LEVEL: {
    schema: Type.Union(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    ),
    expected: 'one of fatal, error, warn, info, debug, trace, silent',
  },
} as const;

const read = settingReader(ADAPTER_SETTINGS);

function required<T>(name: string, value: T | undefined): T {
  if (value === undefined) throw new ConfigError(`${name}: required`);
  return value;
}

/** A file the adapter cannot run without is checked now, so a typo stops it at start. */
function readable(name: string, file: string | undefined): string | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`${name}: cannot read ${file}: ${(error as NodeJS.ErrnoException).code}`);
  }
}

/** Strict: an unset required variable or a malformed one is a ConfigError naming it. */
export function readAdapterSettings(env: Env, cwd = process.cwd()): AdapterSettings {
  const apiUrl = required('SVC_API_URL', read(env, 'SVC_API_URL'));
  const tenantId = required('SVC_TENANT_ID', read(env, 'SVC_TENANT_ID'));
  const indexerUrl = required('SVC_INDEXER_URL', read(env, 'SVC_INDEXER_URL'));
  const bootstrapDir = read(env, 'SVC_BOOTSTRAP_DIR');
  const tokenFile = read(env, 'SVC_TOKEN_FILE');
  if (bootstrapDir === undefined && tokenFile === undefined) {
    throw new ConfigError(
      'SVC_BOOTSTRAP_DIR: required unless SVC_TOKEN_FILE is set (the adapter needs a way to a token)',
    );
  }
  const usernameFile = read(env, 'SVC_INDEXER_USERNAME_FILE');
  const passwordFile = read(env, 'SVC_INDEXER_PASSWORD_FILE');
  if ((usernameFile === undefined) !== (passwordFile === undefined)) {
    throw new ConfigError(
      'SVC_INDEXER_USERNAME_FILE and SVC_INDEXER_PASSWORD_FILE: set both (basic auth) or neither',
    );
  }
  readable('SVC_INDEXER_USERNAME_FILE', usernameFile);
  readable('SVC_INDEXER_PASSWORD_FILE', passwordFile);
  const resolve = (file: string | undefined) =>
    file === undefined ? undefined : path.resolve(cwd, file);
  return {
    apiUrl: apiUrl.replace(/\/+$/, ''),
    tenantId: tenantId.toLowerCase(),
    bootstrapDir: resolve(bootstrapDir),
    tokenFile: resolve(tokenFile),
    indexer: {
      url: indexerUrl.replace(/\/+$/, ''),
      index: read(env, 'SVC_INDEXER_INDEX') ?? 'wazuh-alerts-*',
      usernameFile: resolve(usernameFile),
      passwordFile: resolve(passwordFile),
      ca: readable('SVC_INDEXER_CA_FILE', read(env, 'SVC_INDEXER_CA_FILE')),
    },
    batchSize: read(env, 'SVC_INGEST_BATCH') ?? 500,
    // Half a second: a caught-up alert waits half a poll on average before it is read, and
    // the ingest benchmark's p99 target (indexer to visible incident < 2 s) has no room for 2 s.
    pollMs: Math.round((read(env, 'SVC_POLL_SECONDS') ?? 0.5) * 1000),
    // 15 minutes: a refresh that stalls, a bulk retried after a node restart, a shard that
    // recovers; far beyond the seconds a healthy indexer takes to make a write searchable.
    lateMs: Math.round((read(env, 'SVC_LATE_WINDOW_SECONDS') ?? 900) * 1000),
    heartbeatMs: Math.round((read(env, 'SVC_HEARTBEAT_SECONDS') ?? 30) * 1000),
    port: read(env, 'SVC_ADAPTER_PORT') ?? 8080,
    host: read(env, 'SVC_ADAPTER_HOST') ?? '0.0.0.0',
    logLevel: read(env, 'SVC_LOG_LEVEL') ?? 'info',
  };
}
