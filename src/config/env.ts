import { isIP } from 'node:net';
import Type, { type TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import Value from 'typebox/value';
import { DURATION_PATTERN } from '../../contracts/duration.ts';

/** Raised for any invalid or missing setting; its message is one line naming the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Env = Readonly<Record<string, string | undefined>>;

/** One environment variable: the shape it must have, and how an error names that shape. */
export interface Setting {
  schema: TSchema;
  expected: string;
}

export const hostname = Type.String({ pattern: '^[A-Za-z0-9.:\\[\\]-]{1,253}$' });
export const port = Type.Integer({ minimum: 1, maximum: 65535 });
/** A port to listen on, where 0 asks the system for a free one. */
export const anyPort = Type.Integer({ minimum: 0, maximum: 65535 });
export const headerName = Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$" });
const cidr = '(?:(?:\\d{1,3}\\.){3}\\d{1,3}/\\d{1,2}|[0-9A-Fa-f:]+/\\d{1,3})';
export const cidrList = Type.String({ pattern: `^(${cidr}(\\s*,\\s*${cidr})*)?$` });

export const duration = Type.String({ pattern: DURATION_PATTERN });
export const durationExpected = 'a duration such as 500ms, 30s, 15m, 24h or 30d';
const DURATION_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Milliseconds of a duration setting (the pattern above guarantees the shape). */
export function durationMs(text: string): number {
  const match = /^([0-9]+)(ms|s|m|h|d)$/.exec(text);
  if (!match) throw new ConfigError(`not a duration: ${text}`);
  return Number(match[1]) * DURATION_MS[match[2] as keyof typeof DURATION_MS];
}

const checkers = new WeakMap<TSchema, ReturnType<typeof Compile>>();

function checker(schema: TSchema): ReturnType<typeof Compile> {
  let compiled = checkers.get(schema);
  if (!compiled) {
    compiled = Compile(schema);
    checkers.set(schema, compiled);
  }
  return compiled;
}

/**
 * TypeBox converts loosely (`1.5` → 1, `0x10` → 16, `1e4` → 10000, `true` → 1 for an
 * integer): a number setting must be written as a plain decimal, so a typo is refused instead
 * of read as another value.
 */
function numeral(schema: TSchema, text: string): boolean {
  const type = (schema as { type?: unknown }).type;
  if (type === 'integer') return /^-?[0-9]+$/.test(text);
  if (type === 'number') return /^-?[0-9]+(\.[0-9]+)?$/.test(text);
  return true;
}

/**
 * A typed reader over one table of settings: unset or empty reads as undefined, anything
 * else must match the setting's schema or stops with one line naming the variable.
 */
export function settingReader<S extends Record<string, Setting>>(settings: S) {
  return <N extends keyof S & string>(
    env: Env,
    name: N,
  ): Type.Static<S[N]['schema']> | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    const setting = settings[name] as Setting;
    const text = raw.trim();
    const value: unknown = Value.Convert(setting.schema, text);
    if (!numeral(setting.schema, text) || !checker(setting.schema).Check(value)) {
      throw new ConfigError(`${name}: expected ${setting.expected}, got ${JSON.stringify(raw)}`);
    }
    return value as Type.Static<S[N]['schema']>;
  };
}

/** The CIDRs of a comma-separated list setting, each normalized to address/bits. */
export function parseCidrs(list: string | undefined, name: string, expected: string): string[] {
  return (list ?? '')
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '')
    .map((c) => parseCidr(c, name, expected));
}

/** The list's pattern only checks the shape; this checks the address and its prefix length. */
function parseCidr(text: string, name: string, expected: string): string {
  const [address = '', prefix = ''] = text.split('/');
  const family = isIP(address);
  const bits = Number(prefix);
  if (family === 0 || !Number.isInteger(bits) || bits < 0 || bits > (family === 4 ? 32 : 128)) {
    throw new ConfigError(`${name}: expected ${expected}, got ${JSON.stringify(text)}`);
  }
  return `${address}/${bits}`;
}
