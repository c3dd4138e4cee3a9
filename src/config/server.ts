import path from 'node:path';
import Type from 'typebox';
import { anyPort, cidrList, type Env, hostname, parseCidrs, settingReader } from './env.ts';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** Where svc listens, what it logs, where it keeps files, and which proxies it trusts. */
export interface ServerConfig {
  host: string;
  port: number;
  dataDir: string;
  logLevel: LogLevel;
  trustedProxyCidrs: string[];
}

export const SERVER_SETTINGS = {
  SVC_HOST: { schema: hostname, expected: 'an IP address or hostname to listen on' },
  // 0: any free port, logged once bound (tests that run several svc processes side by side).
  SVC_PORT: { schema: anyPort, expected: 'an integer port 0-65535 (0: any free port)' },
  SVC_DATA_DIR: { schema: Type.String({ minLength: 1 }), expected: 'a directory path' },
  SVC_LOG_LEVEL: {
    schema: Type.Union(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    ),
    expected: 'one of fatal, error, warn, info, debug, trace, silent',
  },
  SVC_TRUSTED_PROXY_CIDRS: {
    schema: cidrList,
    expected: 'a comma-separated list of CIDRs, e.g. 10.0.0.0/8,127.0.0.1/32',
  },
} as const;

const read = settingReader(SERVER_SETTINGS);

export function readServer(env: Env, cwd: string): ServerConfig {
  return {
    host: read(env, 'SVC_HOST') ?? '127.0.0.1',
    port: read(env, 'SVC_PORT') ?? 8080,
    dataDir: path.resolve(cwd, read(env, 'SVC_DATA_DIR') ?? '.svc'),
    logLevel: read(env, 'SVC_LOG_LEVEL') ?? 'info',
    trustedProxyCidrs: parseCidrs(
      read(env, 'SVC_TRUSTED_PROXY_CIDRS'),
      'SVC_TRUSTED_PROXY_CIDRS',
      SERVER_SETTINGS.SVC_TRUSTED_PROXY_CIDRS.expected,
    ),
  };
}
