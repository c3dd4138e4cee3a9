import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Hono } from 'hono';
import Type from 'typebox';
import Value from 'typebox/value';
import type { Route } from '../../contracts/route.ts';
import { Timestamp } from '../../contracts/timestamp.ts';
import { implement, type RouteResult } from '../../src/http/contract.ts';

/**
 * contracts/timestamp.ts: a timestamp is encoded once, where implement() writes the response
 * body; handlers and services hand over Dates. docs/api.md: every timestamp svc answers is
 * RFC 3339 in UTC with milliseconds.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const probe = {
  method: 'GET',
  path: '/probe',
  summary: 'a body with timestamps',
  responses: {
    200: Type.Object({
      at: Timestamp,
      maybe: Type.Union([Timestamp, Type.Null()]),
      items: Type.Array(Type.Object({ seen_at: Timestamp })),
    }),
  },
} as const satisfies Route;

test('contracts/timestamp.ts a handler answers a Date and the client reads the contract text', async () => {
  const app = new Hono();
  const at = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678));
  const seen = new Date(Date.UTC(1999, 11, 31, 23, 59, 59, 0));
  implement(
    app,
    probe,
  )(async () => ({
    status: 200,
    body: { at, maybe: null, items: [{ seen_at: seen }] },
  }));
  const res = await app.request('/probe');
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.equal(
    text,
    '{"at":"2026-01-02T03:04:05.678Z","maybe":null,"items":[{"seen_at":"1999-12-31T23:59:59.000Z"}]}',
  );
  assert.ok(
    Value.Check(probe.responses[200], JSON.parse(text)),
    'the text is what the schema says',
  );
});

/**
 * The type checker (`tsc`, which covers test/) proves a handler cannot answer a hand-made text
 * where the contract has a timestamp: should a body accept a string there again, the directive
 * below is unused and tsc fails.
 */
export const handMadeText: RouteResult<typeof probe> = {
  status: 200,
  // @ts-expect-error the body's timestamps are Dates; the text is made once, by implement()
  body: { at: '2026-01-02T03:04:05.678Z', maybe: null, items: [] },
};

/**
 * Where src/http and the domains still write a Date as text, and why none of it is a response
 * body a contract describes (each is kept so the check cannot pass by accident).
 */
const TEXT_ON_PURPOSE = new Map<string, string>([
  // The SSE `data:` payload is written by the stream itself, not by implement().
  ['src/http/event-stream.ts', 'server-sent event payload'],
  // A cursor is valid only if it round-trips exactly to the instant it names.
  ['src/http/cursor.ts', 'cursor check'],
  // The audit export is a file (CSV cells are text), not a contract body.
  ['src/http/mssp/audit.ts', 'CSV/JSONL export file'],
  // Audit `details` and lifecycle event details are stored JSON documents, not answers.
  ['src/domains/audit/audit-retention.ts', 'audit details'],
  ['src/domains/adapter/adapter-service.ts', 'audit details'],
  ['src/domains/sessions/session-service.ts', 'audit details'],
  ['src/domains/tenants/tenant-service.ts', 'audit details'],
  ['src/domains/provisioning/provisioning-service.ts', 'audit and lifecycle details'],
  // SQL parameters and the text PostgreSQL functions compare.
  ['src/domains/jobs/job-repository.ts', 'SQL parameter'],
  ['src/domains/sessions/session-repository.ts', 'SQL parameter'],
  // A UTC calendar day (`YYYY-MM-DD`), not an instant: usage and report day keys.
  ['src/domains/llm/llm-service.ts', 'UTC day key'],
  ['src/domains/investigations/investigation-service.ts', 'UTC day key'],
  ['src/domains/reports/report-service.ts', 'UTC day key'],
  // Outbound webhook payloads are documents svc sends, not contract bodies it answers.
  ['src/domains/notifications/notification-repository.ts', 'webhook payload'],
  ['src/domains/notifications/notification-service.ts', 'webhook payload'],
  // Projection rows fold event times into stored read models.
  ['src/domains/projections/analyzer-stats-projection.ts', 'projection row'],
  ['src/domains/projections/metrics-hourly-projection.ts', 'projection row'],
  ['src/domains/projections/investigations-projection.ts', 'projection row'],
  ['src/domains/projections/ioc-stats-projection.ts', 'projection row'],
  ['src/domains/projections/rule-stats-projection.ts', 'projection row'],
  ['src/domains/projections/investigation-iocs-projection.ts', 'projection row'],
  ['src/domains/projections/report-investigations-projection.ts', 'projection row'],
  ['src/domains/projections/report-reviews-projection.ts', 'projection row'],
]);

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(path.join(ROOT, dir), { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/'));
}

test('contracts/timestamp.ts routers and domain services leave timestamps to the contract boundary', async () => {
  const files = [...(await filesUnder('src/http')), ...(await filesUnder('src/domains'))];
  const offenders: string[] = [];
  for (const file of files.sort()) {
    if (TEXT_ON_PURPOSE.has(file)) continue;
    const text = await readFile(path.join(ROOT, file), 'utf8');
    if (/\.toISOString\(|\.toJSON\(/.test(text)) offenders.push(file);
  }
  assert.deepEqual(offenders, []);
});
