import Type from 'typebox';
import { type Env, headerName, settingReader } from './env.ts';

export type AuthMode = 'internal' | 'proxy';

export interface AuthConfig {
  /** Host of the MSSP console, e.g. mssp.example.com (spec §2.9 ingress.hostnames.mssp). */
  msspHostname: string | undefined;
  /** Wildcard host of customer portals, e.g. *.customers.example.com. */
  customerHostname: string | undefined;
  trustedHeaderUser: string;
  trustedHeaderEmail: string;
  trustedHeaderGroups: string;
  /** Login attempts allowed per client IP, and per email, in each 15-minute window. */
  loginRateLimitPerIp: number;
  loginRateLimitPerEmail: number;
  /** Password hashes computed at once (64 MiB each), and attempts allowed to wait for one. */
  hashConcurrency: number;
  hashQueue: number;
  /** The platform_admin created on the first start of an empty embedded install. */
  bootstrapAdminEmail: string;
}

export const AUTH_SETTINGS = {
  SVC_AUTH_MODE: {
    schema: Type.Union([Type.Literal('internal'), Type.Literal('proxy')]),
    expected: 'internal or proxy',
  },
  SVC_MSSP_HOSTNAME: {
    schema: Type.String({ pattern: '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(:[0-9]{1,5})?$' }),
    expected: 'a lower-case hostname, e.g. mssp.example.com',
  },
  SVC_CUSTOMER_HOSTNAME: {
    schema: Type.String({ pattern: '^\\*\\.[a-z0-9]([a-z0-9.-]{0,249}[a-z0-9])?(:[0-9]{1,5})?$' }),
    expected: 'a wildcard hostname pattern, e.g. *.customers.example.com',
  },
  SVC_TRUSTED_HEADER_USER: { schema: headerName, expected: 'an HTTP header name' },
  SVC_TRUSTED_HEADER_EMAIL: { schema: headerName, expected: 'an HTTP header name' },
  SVC_TRUSTED_HEADER_GROUPS: { schema: headerName, expected: 'an HTTP header name' },
  SVC_LOGIN_RATE_LIMIT_IP: {
    schema: Type.Integer({ minimum: 1, maximum: 100000 }),
    expected: 'an integer 1-100000 (attempts per IP per 15 minutes)',
  },
  SVC_LOGIN_RATE_LIMIT_EMAIL: {
    schema: Type.Integer({ minimum: 1, maximum: 100000 }),
    expected: 'an integer 1-100000 (attempts per email per 15 minutes)',
  },
  SVC_HASH_CONCURRENCY: {
    schema: Type.Integer({ minimum: 1, maximum: 64 }),
    expected: 'an integer 1-64 (password hashes computed at once)',
  },
  SVC_HASH_QUEUE: {
    schema: Type.Integer({ minimum: 0, maximum: 10000 }),
    expected: 'an integer 0-10000 (login attempts waiting for a hash slot)',
  },
  SVC_BOOTSTRAP_ADMIN_EMAIL: {
    schema: Type.String({ pattern: '^[^@\\sA-Z]+@[^@\\sA-Z]+$' }),
    expected: 'a lower-case email address',
  },
} as const;

const read = settingReader(AUTH_SETTINGS);

export function readAuthMode(env: Env): AuthMode {
  return read(env, 'SVC_AUTH_MODE') ?? 'internal';
}

export function readAuth(env: Env): AuthConfig {
  return {
    msspHostname: read(env, 'SVC_MSSP_HOSTNAME'),
    customerHostname: read(env, 'SVC_CUSTOMER_HOSTNAME'),
    trustedHeaderUser: read(env, 'SVC_TRUSTED_HEADER_USER') ?? 'X-Forwarded-User',
    trustedHeaderEmail: read(env, 'SVC_TRUSTED_HEADER_EMAIL') ?? 'X-Forwarded-Email',
    trustedHeaderGroups: read(env, 'SVC_TRUSTED_HEADER_GROUPS') ?? 'X-Forwarded-Groups',
    loginRateLimitPerIp: read(env, 'SVC_LOGIN_RATE_LIMIT_IP') ?? 100,
    loginRateLimitPerEmail: read(env, 'SVC_LOGIN_RATE_LIMIT_EMAIL') ?? 20,
    hashConcurrency: read(env, 'SVC_HASH_CONCURRENCY') ?? 2,
    hashQueue: read(env, 'SVC_HASH_QUEUE') ?? 32,
    bootstrapAdminEmail: read(env, 'SVC_BOOTSTRAP_ADMIN_EMAIL') ?? 'admin@localhost',
  };
}
