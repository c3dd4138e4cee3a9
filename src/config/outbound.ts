import Type from 'typebox';
import { OUTBOUND_HOST_PATTERN } from '../../contracts/outbound.ts';
import { cidrList, type Env, parseCidrs, settingReader } from './env.ts';

/** Internal targets tenant URLs may name after all (src/net/outbound-url.ts); default none. */
export interface OutboundConfig {
  allowCidrs: readonly string[];
  allowHosts: readonly string[];
  /** PEM bundle trusted for outbound HTTPS besides the system roots (a self-hosted model server). */
  caFile?: string | undefined;
}

const hostPattern = OUTBOUND_HOST_PATTERN;

export const OUTBOUND_SETTINGS = {
  SVC_OUTBOUND_ALLOW_CIDRS: {
    schema: cidrList,
    expected:
      'a comma-separated list of CIDRs tenant URLs may reach although internal, e.g. 10.20.0.0/16',
  },
  SVC_OUTBOUND_ALLOW_HOSTS: {
    schema: Type.String({ pattern: `^(${hostPattern}(\\s*,\\s*${hostPattern})*)?$` }),
    expected: 'a comma-separated list of host names or *.domain patterns, e.g. llm.corp.internal',
  },
  SVC_OUTBOUND_CA_FILE: {
    schema: Type.String({ minLength: 1, maxLength: 4096 }),
    expected: 'the path of a PEM file of CA certificates trusted for outbound HTTPS',
  },
} as const;

const read = settingReader(OUTBOUND_SETTINGS);

const caFile = (path: string | undefined) => (path === undefined ? {} : { caFile: path });

export function readOutbound(env: Env): OutboundConfig {
  return {
    allowCidrs: parseCidrs(
      read(env, 'SVC_OUTBOUND_ALLOW_CIDRS'),
      'SVC_OUTBOUND_ALLOW_CIDRS',
      OUTBOUND_SETTINGS.SVC_OUTBOUND_ALLOW_CIDRS.expected,
    ),
    allowHosts: (read(env, 'SVC_OUTBOUND_ALLOW_HOSTS') ?? '')
      .split(',')
      .map((h) => h.trim())
      .filter((h) => h !== ''),
    ...caFile(read(env, 'SVC_OUTBOUND_CA_FILE')),
  };
}
