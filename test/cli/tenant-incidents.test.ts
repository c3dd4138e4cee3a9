import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { seedUser, startTestApi, type TestApi } from '../support/api.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';

/**
 * `svc tenants incidents <id|slug>` (issue 12, "how to watch them"): a real child process
 * against the real API, listing what the projector made of a tenant's alerts.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PASSWORD = 'incidents-cli-password-1';
let db: TestDatabase;
let api: TestApi;
let email: string;

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  email = `cli-${randomBytes(4).toString('hex')}@mssp.test`;
  await seedUser(db, api.hasher, { email, role: 'analyst', password: PASSWORD });
});
after(async () => {
  await api.close();
  await db.drop();
});

function svc(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, SVC_URL: api.url, SVC_CLI_EMAIL: email, SVC_CLI_PASSWORD: PASSWORD },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** An incident as the projector leaves it (sql/0016 columns), written as the BYPASSRLS role. */
async function incident(tenantId: string, title: string, alerts: number, minutesAgo: number) {
  await db.pools.mssp.query(
    `INSERT INTO investigations (tenant_id, title, severity, source, source_ref, opened_at,
                                 updated_at, alert_count, last_alert_at, last_event_id)
     VALUES ($1, $2, 'high', 'wazuh', 'rule:5712/agent:001', now() - make_interval(mins => $3),
             now(), $4, now(), 1)`,
    [tenantId, title, minutesAgo, alerts],
  );
}

test('issue 12: svc tenants incidents lists a tenant’s incidents newest first with alert counts, and only that tenant’s', async () => {
  const slug = `inc-${randomBytes(3).toString('hex')}`;
  const tenant = await createTenant(db.pools.app, slug);
  const other = await createTenant(db.pools.app);
  await incident(tenant, 'sshd: brute force', 7, 60);
  await incident(tenant, 'Integrity checksum changed.', 1, 5);
  await incident(other, 'Another tenant’s incident', 99, 1);

  const text = await svc(['tenants', 'incidents', slug]);
  assert.equal(text.code, 0, text.stderr);
  const lines = text.stdout.trimEnd().split('\n');
  assert.match(lines[0] ?? '', /^OPENED\s+SEVERITY\s+STATUS\s+ALERTS\s+LAST ALERT\s+TITLE$/);
  assert.match(lines[1] ?? '', /high\s+open\s+1\s+.*Integrity checksum changed\.$/);
  assert.match(lines[2] ?? '', /high\s+open\s+7\s+.*sshd: brute force$/);
  assert.equal(lines.length, 3);
  assert.doesNotMatch(text.stdout, /Another tenant/);

  const json = await svc(['tenants', 'incidents', tenant, '--json', '--limit', '1']);
  assert.equal(json.code, 0, json.stderr);
  const body = JSON.parse(json.stdout) as { items: { title: string; alert_count: number }[] };
  assert.deepEqual(
    body.items.map((i) => [i.title, i.alert_count]),
    [['Integrity checksum changed.', 1]],
  );
});

test('issue 12: svc tenants incidents refuses a bad --limit (exit 2) and an unknown slug (exit 1)', async () => {
  const bad = await svc(['tenants', 'incidents', 'some-slug', '--limit', '0']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^svc: --limit must be an integer 1-200, got 0\n$/);
  const unknown = await svc(['tenants', 'incidents', 'no-such-tenant']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /No tenant has the slug no-such-tenant \(tenant_not_found\)/);
});
