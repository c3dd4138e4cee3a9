import { createHash } from 'node:crypto';

/**
 * The event stream of one Wazuh alert: a UUID made from SHA-256 of `wazuh-alert:<source id>`
 * (RFC 9562 version 8, "custom": the first 16 bytes of the digest with the version nibble and
 * the variant bits set). The same alert always lands on the same stream, and the events table's
 * unique (tenant_id, stream_id, stream_seq) key then stores it at most once per tenant, however
 * often the adapter delivers it.
 */
export function alertStreamId(sourceId: string): string {
  const bytes = createHash('sha256').update(`wazuh-alert:${sourceId}`, 'utf8').digest();
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x80;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export type Severity = 'info' | 'low' | 'medium' | 'high' | 'critical';

/** Severity order, lowest first, for "raise to the max" folds. */
export const SEVERITIES: readonly Severity[] = ['info', 'low', 'medium', 'high', 'critical'];

/** Wazuh `rule.level` (0–16) → svc severity: 0–3 info, 4–6 low, 7–9 medium, 10–12 high, 13–16 critical. */
export function severityOf(level: number): Severity {
  if (level >= 13) return 'critical';
  if (level >= 10) return 'high';
  if (level >= 7) return 'medium';
  if (level >= 4) return 'low';
  return 'info';
}

/**
 * Wazuh writes `2026-11-26T13:45:01.123+0000` (offset without a colon); RFC 3339 writes
 * `+00:00` or `Z`. Both are read here; the contract's pattern (contracts/internal.ts) admits the
 * same shapes, this adds what a pattern cannot say: a real calendar day.
 */
const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):?(\d{2}))$/;

/** 1970-01-01 to 9999-12-31 in UTC: what every timestamp svc answers with can spell. */
const LATEST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * Milliseconds since the epoch of an alert timestamp, or undefined when it is not one (wrong
 * shape, no such day or time, an offset beyond ±23:59, or outside 1970–9999 once in UTC).
 * Precision is the millisecond: digits beyond it are dropped, as Wazuh never writes them.
 */
export function parseAlertTimestamp(text: string): number | undefined {
  const m = TIMESTAMP.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const ms = Number((m[7] ?? '').padEnd(3, '0').slice(0, 3));
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return undefined;
  const local = new Date(0);
  local.setUTCFullYear(year, month - 1, day);
  local.setUTCHours(hour, minute, second, ms);
  // setUTCFullYear rolls 2026-02-30 over into March: a changed day means no such day.
  if (local.getUTCDate() !== day || local.getUTCMonth() !== month - 1) return undefined;
  let offsetMinutes = 0;
  if (m[8] !== undefined) {
    const hours = Number(m[9]);
    const minutes = Number(m[10]);
    if (hours > 23 || minutes > 59) return undefined;
    offsetMinutes = (m[8] === '-' ? -1 : 1) * (hours * 60 + minutes);
  }
  const at = local.getTime() - offsetMinutes * 60_000;
  return at >= 0 && at <= LATEST_MS ? at : undefined;
}
