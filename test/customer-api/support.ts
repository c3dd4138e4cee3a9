import assert from 'node:assert/strict';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import type { Transaction } from '../../src/db/tenant-context.ts';
import { seedUser, type TestApi } from '../support/api.ts';
import type { TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

export const PASSWORD = 'correct horse battery';

/** Everything one tenant was seeded with, so a test can look for any of it in a response. */
export interface SeededTenant {
  id: string;
  slug: string;
  /** Appears in every seeded title, name and value of this tenant. */
  marker: string;
  viewer: { id: string; email: string };
  /** Ids and free texts of every seeded row, for "must not appear" probes. */
  secrets: string[];
  investigations: string[];
  audit: string[];
}

async function one(tx: Transaction, sql: string, values: unknown[]): Promise<string> {
  const { rows } = await tx.query<{ id: string }>(sql, values);
  const id = rows[0]?.id;
  assert.ok(id, sql);
  return id;
}

// status, severity, opened_at offset from the base instant, resolved/closed days ago.
// Three share one opened_at and two differ only in microseconds, so pagination must order by
// (opened_at, id) at full precision to see each exactly once.
const INVESTIGATIONS: [string, string, string, number | null, number | null][] = [
  ['open', 'critical', '0', null, null],
  ['open', 'high', '0', null, null],
  ['triaging', 'high', '0', null, null],
  ['awaiting_review', 'medium', '0.000100', null, null],
  ['resolved', 'low', '0.000200', 1, null],
  ['closed', 'info', '10 seconds', 10, 9],
  ['open', 'low', '20 seconds', null, null],
];

async function investigations(tx: Transaction, t: string, marker: string): Promise<string[]> {
  const ids: string[] = [];
  for (const [i, [status, severity, offset, resolved, closed]] of INVESTIGATIONS.entries()) {
    ids.push(
      await one(
        tx,
        `INSERT INTO investigations
           (tenant_id, title, summary, status, severity, source, opened_at, resolved_at, closed_at)
         VALUES ($1, $2, $3, $4, $5, 'monitor',
                 date_trunc('second', now()) - interval '1 hour' + $6::interval,
                 now() - make_interval(days => $7), now() - make_interval(days => $8))
         RETURNING id`,
        [
          t,
          `${marker} incident ${i}`,
          `${marker} summary`,
          status,
          severity,
          offset,
          resolved,
          closed,
        ],
      ),
    );
  }
  return ids;
}

// Two await a decision; one expired unanswered and one was decided, so neither counts.
async function reviews(tx: Transaction, t: string, inv: string[]): Promise<string[]> {
  const rows: [string | undefined, string | null, boolean][] = [
    [inv[3], null, false],
    [inv[1], '1 day', false],
    [inv[2], '-1 hour', false],
    [inv[0], null, true],
  ];
  const ids: string[] = [];
  for (const [investigation, expires, decided] of rows) {
    ids.push(
      await one(
        tx,
        `INSERT INTO pending_reviews (tenant_id, investigation_id, proposed_action, rationale, risk,
           requested_by, expires_at, decision, decided_at)
         VALUES ($1, $2, 'isolate_host', 'beaconing', 'high', 'worker:triage',
                 now() + $3::interval, $4, $5)
         RETURNING id`,
        [t, investigation, expires, decided ? 'approved' : null, decided ? new Date() : null],
      ),
    );
  }
  return ids;
}

// Three events in the last 24 hours and one two days old.
async function events(tx: Transaction, t: string, marker: string): Promise<string[]> {
  const ids: string[] = [];
  for (const age of ['1 hour', '2 hours', '3 hours', '2 days']) {
    ids.push(
      await one(
        tx,
        `INSERT INTO events (tenant_id, stream_type, stream_id, stream_seq, type, payload, occurred_at)
         VALUES ($1, 'investigation', gen_random_uuid(), 1, 'investigation.updated', $2,
                 now() - $3::interval)
         RETURNING id::text`,
        [t, JSON.stringify({ note: marker }), age],
      ),
    );
  }
  return ids;
}

/** Midnight UTC `daysAgo` days before today, as an ISO string. */
export function utcDay(daysAgo: number, hour = 0): string {
  const today = new Date().toISOString().slice(0, 10);
  return new Date(
    Date.parse(`${today}T00:00:00Z`) - daysAgo * 86_400_000 + hour * 3_600_000,
  ).toISOString();
}

async function metrics(tx: Transaction, t: string, scale: number): Promise<void> {
  const rows: [string, string, number][] = [
    [utcDay(0), 'alerts.ingested', 5],
    [utcDay(0), 'incidents.opened', 1],
    [utcDay(1), 'alerts.ingested', 2],
    [utcDay(1, 1), 'alerts.ingested', 3],
    [utcDay(10), 'alerts.ingested', 100],
  ];
  for (const [bucket, metric, value] of rows) {
    await tx.query(
      'INSERT INTO metrics_hourly (tenant_id, bucket, metric, value) VALUES ($1, $2, $3, $4)',
      [t, bucket, metric, value * scale],
    );
  }
}

// Twelve rules (the report ranks ten) and three indicators; `scale` lets B outrank A.
async function stats(tx: Transaction, t: string, marker: string, scale: number): Promise<void> {
  for (let i = 1; i <= 12; i++) {
    await tx.query(
      `INSERT INTO rule_stats (tenant_id, rule_id, rule_name, fired, true_positives, last_fired_at)
       VALUES ($1, $2, $3, $4, 1, now())`,
      [t, `${marker}-rule-${i}`, `${marker} rule ${i}`, i * scale],
    );
  }
  for (let i = 1; i <= 3; i++) {
    await tx.query(
      `INSERT INTO ioc_stats (tenant_id, ioc_type, ioc_value, hits, malicious_verdicts,
         first_seen_at, last_seen_at)
       VALUES ($1, 'domain', $2, $3, $4, now() - interval '3 days', now())`,
      [t, `${marker.toLowerCase()}-${i}.example`, i * scale, i - 1],
    );
  }
}

// One row per principal, plus MSSP staff acting as the tenant (acting_as set), which the
// customer must see flagged as impersonation (spec §2.6, §5.8 notes).
async function audit(tx: Transaction, t: string, marker: string, staff: string) {
  const rows: [string, string, string, string | null, string][] = [
    ['System', 'system:orchestrator', 'tenant.create', null, '3 days'],
    ['Worker', 'worker:job-1', 'investigation.update', null, '2 days'],
    ['User', staff, 'user.impersonate', t, '1 hour'],
    ['User', staff, 'investigation.approve', t, '1 hour'],
    ['User', staff, 'settings.update', t, '1 hour'],
  ];
  const ids: string[] = [];
  for (const [principal, actor, action, actingAs, age] of rows) {
    ids.push(
      await one(
        tx,
        `INSERT INTO audit_log (id, "timestamp", tenant_id, actor_principal, actor_id, action,
           resource_type, resource_id, acting_as, details)
         VALUES (gen_random_uuid(), date_trunc('second', now()) - $7::interval, $1, $2, $3, $4,
                 'tenant', $8, $5, $6)
         RETURNING id`,
        [t, principal, actor, action, actingAs, JSON.stringify({ reason: marker }), age, t],
      ),
    );
  }
  return ids;
}

async function branding(tx: Transaction, t: string, marker: string): Promise<void> {
  await tx.query(
    `INSERT INTO branding_configs (tenant_id, app_name, logo_url, primary_color, secondary_color)
     VALUES ($1, $2, 'https://cdn.example/logo.png', '#112233', '#abcdef')`,
    [t, `${marker} Portal`],
  );
}

/**
 * A tenant with rows in every table the tenant family reads, written as svc_app inside the
 * tenant's own context (RLS WITH CHECK would refuse anything else), and a customer_viewer.
 */
export async function seedTenant(
  db: TestDatabase,
  api: TestApi,
  slug: string,
  options: { staffId: string; scale?: number; branded?: boolean },
): Promise<SeededTenant> {
  const id = await createTenant(db.pools.app, slug);
  const marker = slug.toUpperCase();
  const scale = options.scale ?? 1;
  const seeded = await db.app.withTenant(id, async (tx) => {
    const inv = await investigations(tx, id, marker);
    const rev = await reviews(tx, id, inv);
    const evt = await events(tx, id, marker);
    await metrics(tx, id, scale);
    await stats(tx, id, marker, scale);
    const aud = await audit(tx, id, marker, options.staffId);
    if (options.branded !== false) await branding(tx, id, marker);
    return { inv, rev, evt, aud };
  });
  const email = `viewer@${slug}.test`;
  const viewerId = await seedUser(db, api.hasher, {
    email,
    role: 'customer_viewer',
    tenantId: id,
    password: PASSWORD,
  });
  return {
    id,
    slug,
    marker,
    viewer: { id: viewerId, email },
    secrets: [id, marker, viewerId, ...seeded.inv, ...seeded.rev, ...seeded.aud],
    investigations: seeded.inv,
    audit: seeded.aud,
  };
}

/**
 * Bounds every call, body included: a stream answered where a refusal was expected fails the
 * test instead of hanging it.
 */
function boundedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  return fetch(input, { ...init, signal: AbortSignal.timeout(10_000) });
}

/** An SDK client without credentials. */
export function anonymous(api: TestApi): SvcClient {
  return createSvcClient({
    baseUrl: api.url,
    headers: { origin: api.origin },
    fetch: boundedFetch,
  });
}

/** An SDK client signed in with a session cookie, as the customer portal is. */
export async function signedIn(api: TestApi, email: string): Promise<SvcClient> {
  const svc = anonymous(api);
  const res = await svc.auth.login({ body: { email, password: PASSWORD } });
  assert.equal(res.status, 200, `sign-in of ${email}`);
  return svc;
}

/** An SDK client presenting a tenant bearer token and no cookie. */
export async function withTenantToken(
  api: TestApi,
  userId: string,
  tenantId: string,
): Promise<SvcClient> {
  const { token } = await api.tokens.mintTenantUser({ userId, tenantId });
  return bearer(api, token);
}

/** An SDK client presenting any bearer token and no cookie. */
export function bearer(api: TestApi, token: string): SvcClient {
  return createSvcClient({
    baseUrl: api.url,
    headers: { authorization: `Bearer ${token}` },
    cookies: false,
    fetch: boundedFetch,
  });
}

/** Fails naming the first secret of another tenant found anywhere in a response body. */
export function assertNoneOf(body: unknown, secrets: string[], where: string): void {
  const text = JSON.stringify(body).toLowerCase();
  for (const secret of secrets) {
    assert.ok(!text.includes(secret.toLowerCase()), `${where} leaks ${secret}`);
  }
}

/** The body matches its contract schema exactly (closed objects: no extra fields). */
export function assertMatches(schema: TSchema | null | undefined, body: unknown, where: string) {
  assert.ok(schema, `${where} declares a schema`);
  const check = Compile(schema);
  assert.ok(check.Check(body), `${where}: ${JSON.stringify([...check.Errors(body)].slice(0, 3))}`);
}

/** The `errors[].path` members of a validation_failed problem (docs/errors.md). */
export function errorPaths(res: { body: unknown }): string[] {
  const errors = (res.body as { errors?: { path: string }[] } | undefined)?.errors ?? [];
  return errors.map((e) => e.path);
}
