import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { ALERT_TIMESTAMP_PATTERN } from '../../contracts/internal.ts';
import { ConfigError, loadConfig } from '../../src/config/index.ts';
import {
  alertStreamId,
  parseAlertTimestamp,
  severityOf,
} from '../../src/domains/ingest/alert-identity.ts';
import { createIngestRateLimiter } from '../../src/domains/ingest/rate-limit.ts';

// Issue 12 / contract-12: the ingest rules that need no database — the alert's stream id, the
// severity scale, Wazuh's timestamps, the token bucket and its two settings.

test('contract-12 alertStreamId: SHA-256 of "wazuh-alert:<id>" as a version-8 RFC 9562 uuid, stable', () => {
  const id = alertStreamId('1764164701.1234567');
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(alertStreamId('1764164701.1234567'), id);
  assert.notEqual(alertStreamId('1764164701.1234568'), id);
  const digest = createHash('sha256').update('wazuh-alert:1764164701.1234567').digest('hex');
  const hex = id.replaceAll('-', '');
  // Only the version nibble and the two variant bits differ from the digest's first 16 bytes.
  assert.equal(hex.slice(0, 12), digest.slice(0, 12));
  assert.equal(hex.slice(13, 16), digest.slice(13, 16));
  assert.equal(hex.slice(18, 32), digest.slice(18, 32));
  assert.equal(
    Number.parseInt(hex[16] ?? '', 16) & 0x3,
    Number.parseInt(digest[16] ?? '', 16) & 0x3,
  );
});

test('contract-12 severity from rule.level: 0–3 info, 4–6 low, 7–9 medium, 10–12 high, 13–16 critical', () => {
  const scale = Array.from({ length: 17 }, (_, level) => severityOf(level));
  assert.deepEqual(scale, [
    ...Array(4).fill('info'),
    ...Array(3).fill('low'),
    ...Array(3).fill('medium'),
    ...Array(3).fill('high'),
    ...Array(4).fill('critical'),
  ]);
});

test("contract-12 timestamps: Wazuh's +0000 and RFC 3339 are read to the millisecond; impossible ones are not", () => {
  const pattern = new RegExp(ALERT_TIMESTAMP_PATTERN);
  const good: [string, string][] = [
    ['2026-11-26T13:45:01.123+0000', '2026-11-26T13:45:01.123Z'],
    ['2026-11-26T13:45:01.123+00:00', '2026-11-26T13:45:01.123Z'],
    ['2026-11-26T13:45:01Z', '2026-11-26T13:45:01.000Z'],
    ['2026-11-26T15:45:01.5+0200', '2026-11-26T13:45:01.500Z'],
    ['2026-11-26T08:15:01.123456-0530', '2026-11-26T13:45:01.123Z'],
    ['2024-02-29T00:00:00+0000', '2024-02-29T00:00:00.000Z'],
    ['2026-12-31T23:59:59-2359', '2027-01-01T23:58:59.000Z'],
  ];
  for (const [text, iso] of good) {
    assert.ok(pattern.test(text), `pattern admits ${text}`);
    assert.equal(new Date(parseAlertTimestamp(text) ?? Number.NaN).toISOString(), iso, text);
  }
  // Admitted by the pattern, refused by the calendar or the range once in UTC.
  for (const text of [
    '2026-02-29T00:00:00+0000',
    '2026-04-31T00:00:00Z',
    '1970-01-01T00:30:00+0100',
    '9999-12-31T23:59:59-0001',
  ]) {
    assert.ok(pattern.test(text), `pattern admits ${text}`);
    assert.equal(parseAlertTimestamp(text), undefined, text);
  }
  // Refused by both.
  for (const text of [
    'yesterday',
    '2026-11-26 13:45:01+0000',
    '2026-11-26T13:45:01',
    '2026-13-01T00:00:00Z',
    '2026-11-26T24:00:00Z',
    '2026-11-26T13:60:00Z',
    '2026-11-26T13:45:61Z',
    '2026-11-26T13:45:01+2400',
    '2026-11-26T13:45:01+00:0',
    '1969-12-31T23:59:59Z',
    '2026-11-26T13:45:01.1234567890Z',
  ]) {
    assert.equal(pattern.test(text), false, `pattern refuses ${text}`);
    assert.equal(parseAlertTimestamp(text), undefined, text);
  }
});

test('issue 12 token bucket: a batch takes its alerts or is refused whole with the wait; buckets are per tenant; refunds return tokens', () => {
  let now = 0;
  const limiter = createIngestRateLimiter({ rate: 100, burst: 1000 }, () => now);
  assert.deepEqual(limiter.take('a', 600), { ok: true });
  assert.deepEqual(limiter.take('a', 500), { ok: false, retryAfterSeconds: 1 });
  assert.deepEqual(limiter.take('b', 1000), { ok: true }, 'b has its own bucket');
  assert.deepEqual(limiter.take('a', 400), { ok: true });
  assert.deepEqual(limiter.take('a', 250), { ok: false, retryAfterSeconds: 3 });
  now += 2_000;
  assert.deepEqual(limiter.take('a', 250), { ok: false, retryAfterSeconds: 1 });
  now += 500;
  assert.deepEqual(limiter.take('a', 250), { ok: true });
  limiter.refund('a', 250);
  assert.deepEqual(limiter.take('a', 250), { ok: true });
  // Refill stops at the burst, and a clock stepping back refills nothing.
  now += 3_600_000;
  assert.deepEqual(limiter.take('a', 1000), { ok: true });
  now -= 60_000;
  assert.deepEqual(limiter.take('a', 1), { ok: false, retryAfterSeconds: 1 });
});

test('issue 12 SVC_INGEST_RATE / SVC_INGEST_BURST: defaults 10000 and 20000; only plain decimal integers in range', () => {
  assert.deepEqual(loadConfig({}).ingest, { rate: 10_000, burst: 20_000 });
  assert.deepEqual(loadConfig({ SVC_INGEST_RATE: '250', SVC_INGEST_BURST: '500' }).ingest, {
    rate: 250,
    burst: 500,
  });
  for (const [name, value] of [
    ['SVC_INGEST_RATE', '1.5'],
    ['SVC_INGEST_RATE', '0x10'],
    ['SVC_INGEST_RATE', '1e4'],
    ['SVC_INGEST_RATE', '0'],
    ['SVC_INGEST_RATE', '-5'],
    ['SVC_INGEST_RATE', 'true'],
    ['SVC_INGEST_RATE', '1000001'],
    ['SVC_INGEST_BURST', '499'],
    ['SVC_INGEST_BURST', '10000001'],
    ['SVC_INGEST_BURST', '05000'],
  ] as const) {
    assert.throws(
      () => loadConfig({ [name]: value }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message.startsWith(`${name}: expected an integer`) &&
        error.message.endsWith(`got ${JSON.stringify(value)}`),
      `${name}=${value}`,
    );
  }
});
