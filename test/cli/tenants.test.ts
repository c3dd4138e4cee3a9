import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/db/embedded.ts';
import { BUNDLED_CHARTS_DIR } from '../../src/orchestrator/catalog.ts';
import { SYSTEM_VERSION } from '../../src/orchestrator/runtime.ts';
import { auditRows } from '../internal/support.ts';
import {
  type Orchestration,
  PASSWORD,
  tenantConfig,
  tenantRow,
  uniqueSlug,
  useOrchestration,
} from '../provisioning/support.ts';
import { seedUser } from '../support/api.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let chartsDir: string;
let email: string;
/** The tenant the create test brings to active; later tests read, upgrade and remove it. */
let tenant: { id: string; slug: string } | undefined;

/** The bundled tenant package as 0.1.0 and a copy as 0.2.0, so an upgrade has somewhere to go. */
async function chartVersions(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-cli-charts-'));
  for (const version of ['0.1.0', '0.2.0']) {
    const target = path.join(dir, `svc-tenant-${version}`);
    await cp(path.join(BUNDLED_CHARTS_DIR, 'svc-tenant'), target, { recursive: true });
    const chartFile = path.join(target, 'Chart.yaml');
    const chart = await readFile(chartFile, 'utf8');
    await writeFile(chartFile, chart.replace(/^version: .*$/m, `version: ${version}`));
  }
  return dir;
}

const o: Orchestration = useOrchestration(
  async () => {
    chartsDir = await chartVersions();
    return { chartsDir, installVersion: '0.1.0' };
  },
  async (live) => {
    await live.db.pools.admin.query(
      `INSERT INTO chart_compatibility (system_version, tenant_chart_version, status, notes)
       VALUES ($1, '0.2.0', 'supported', NULL)`,
      [SYSTEM_VERSION],
    );
    email = `cli-${randomBytes(4).toString('hex')}@mssp.test`;
    await seedUser(live.db, live.api.hasher, { email, role: 'mssp_admin', password: PASSWORD });
  },
);
// Registered after the orchestration's own `after` (hooks run in order): the charts outlive it.
after(() => rm(chartsDir, { recursive: true, force: true }));

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `svc tenants …` as a real child process against the test API. */
function svc(
  args: string[],
  options: { env?: Record<string, string | undefined>; stdin?: string } = {},
): Promise<Ran> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'tenants', ...args],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        SVC_URL: o.api.url,
        SVC_CLI_EMAIL: email,
        SVC_CLI_PASSWORD: PASSWORD,
        ...options.env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  child.stdin.end(options.stdin ?? '');
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function slugsListed(): Promise<string[]> {
  const res = await o.admin.mssp.listTenants({ query: { limit: 200 } });
  assert.equal(res.status, 200);
  return res.status === 200 ? res.body.items.map((t) => t.slug) : [];
}

/**
 * The tenant's adapter, run while `cli` waits: the real `svc adapter` for the tenant's Pod once
 * helm made it (test/provisioning/adapter-pod.ts). It keeps running until its Pod is replaced
 * or the orchestration closes. Gives up when the CLI exits first (its failure is the report).
 */
async function adapterWhile(slug: string, cli: Promise<Ran>): Promise<void> {
  const exited = new AbortController();
  void cli.finally(() => exited.abort());
  await o.runAdapter(slug, { signal: exited.signal, timeoutMs: 240_000 }).catch((error) => {
    if (!exited.signal.aborted) throw error;
  });
}

function activeTenant(): { id: string; slug: string } {
  assert.ok(tenant, 'the create --wait test brought a tenant to active');
  return tenant;
}

test('§9.4 a bad slug exits 2 before any request and creates nothing', async () => {
  const before = await slugsListed();
  const ran = await svc(['create', '--slug', 'Not_A_Label', '--name', 'Bad']);
  assert.equal(ran.code, 2, ran.stderr);
  assert.match(ran.stderr, /^svc: invalid slug "Not_A_Label"/);
  assert.equal(ran.stdout, '');
  assert.deepEqual(await slugsListed(), before);
});

test('§5.4 a wrong password exits 1 with the problem code invalid_credentials', async () => {
  const ran = await svc(['list'], { env: { SVC_CLI_PASSWORD: 'not the password at all' } });
  assert.equal(ran.code, 1, ran.stderr);
  assert.match(ran.stderr, /^svc: .+ \(invalid_credentials\)\n$/);
});

test('an unreachable SVC_URL exits 1 with a message naming SVC_URL', async () => {
  const url = `http://127.0.0.1:${await freePort()}`;
  const ran = await svc(['list'], { env: { SVC_URL: url } });
  assert.equal(ran.code, 1, ran.stderr);
  assert.match(
    ran.stderr,
    new RegExp(`^svc: cannot reach svc at SVC_URL=${url} \\(ECONNREFUSED\\)`),
  );
});

test('§9.4 create --wait prints each step and transition and exits 0 once the tenant is active', {
  timeout: 300_000,
}, async () => {
  const slug = uniqueSlug('cli');
  // The file gives the whole TenantConfig; --name overrides its display name.
  const cli = svc(
    ['create', '--config', '-', '--name', 'Acme via CLI', '--wait', '--timeout', '4m'],
    {
      stdin: JSON.stringify(tenantConfig(slug)),
    },
  );
  await adapterWhile(slug, cli);
  const ran = await cli;
  assert.equal(ran.code, 0, ran.stderr);
  const id = ran.stdout.trim();
  assert.match(id, UUID);
  tenant = { id, slug };
  const lines = ran.stderr.split('\n');
  const order = [
    `  ✓ namespace_created (tenant-${slug})`,
    `  ✓ package_installed (tenant-${slug}, chart 0.1.0)`,
    '  → pending → provisioning',
    '  ✓ package_ready',
    '  → provisioning → active',
    `✓ ${slug} is active`,
  ].map((prefix) => lines.findIndex((l) => l.startsWith(prefix)));
  assert.ok(
    order.every((i) => i >= 0),
    ran.stderr,
  );
  assert.deepEqual(
    order,
    [...order].sort((a, b) => a - b),
    ran.stderr,
  );
  // Stream and poll both saw every entry; each is printed once.
  assert.equal(lines.filter((l) => l.startsWith('  ✓ namespace_created')).length, 1);
  const row = await tenantRow(o, id);
  assert.equal(row?.state, 'active');
});

test('§4.2 list, get by slug and --json show the tenant; the password may come from stdin', async () => {
  const { id, slug } = activeTenant();
  const table = await svc(['list'], {
    env: { SVC_CLI_PASSWORD: undefined },
    stdin: `${PASSWORD}\n`,
  });
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^ID +SLUG +STATE +CHART +CREATED\n/);
  assert.match(
    table.stdout,
    new RegExp(
      `^${id}  ${slug} +active +0\\.1\\.0 +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ$`,
      'm',
    ),
  );

  const json = await svc(['list', '--state', 'active', '--json']);
  assert.equal(json.code, 0, json.stderr);
  const listed = JSON.parse(json.stdout) as { items: { id: string; state: string }[] };
  assert.ok(listed.items.some((t) => t.id === id));
  assert.ok(listed.items.every((t) => t.state === 'active'));

  const one = await svc(['get', slug, '--json']);
  assert.equal(one.code, 0, one.stderr);
  const body = JSON.parse(one.stdout) as {
    tenant: { id: string; display_name: string };
    lifecycle: unknown[];
  };
  assert.equal(body.tenant.id, id);
  assert.equal(body.tenant.display_name, 'Acme via CLI');
  assert.ok(body.lifecycle.length > 5);

  const human = await svc(['get', id]);
  assert.equal(human.code, 0, human.stderr);
  assert.match(human.stdout, new RegExp(`^slug +${slug}$`, 'm'));
  // Lifecycle in id order, whatever order the API lists it in: activation comes last.
  assert.match(
    human.stdout,
    /\nlifecycle:\n {2}• configuration recorded\n(.*\n)* {2}→ provisioning → active\n$/,
  );

  const missing = await svc(['get', 'no-such-tenant']);
  assert.deepEqual(
    [missing.code, missing.stderr],
    [1, 'svc: No tenant has the slug no-such-tenant (tenant_not_found)\n'],
  );
});

test('§9.2 upgrade to an unknown version exits 1 with chart_version_unknown; a supported one is followed to the end', {
  timeout: 300_000,
}, async () => {
  const { slug } = activeTenant();
  const unknown = await svc(['upgrade', slug, '--to', '7.0.0']);
  assert.equal(unknown.code, 1, unknown.stderr);
  assert.match(
    unknown.stderr,
    /^svc: Tenant package 7\.0\.0 is not available to this install \(chart_version_unknown\)\n$/,
  );

  const ran = await svc(['upgrade', slug, '--to', '0.2.0', '--wait', '--timeout', '4m']);
  assert.equal(ran.code, 0, ran.stderr);
  assert.equal(ran.stdout, `upgrade of ${slug} to 0.2.0 accepted (compatibility: supported)\n`);
  assert.match(ran.stderr, /^ {2}✓ upgrade_requested \(to 0\.2\.0\)$/m);
  assert.match(ran.stderr, /^ {2}✓ upgraded \(to 0\.2\.0\)$/m);
  assert.match(ran.stderr, new RegExp(`✓ ${slug} runs tenant package 0\\.2\\.0\n$`));
  // Only what happened after the request is shown, not the provisioning history again.
  assert.doesNotMatch(ran.stderr, /namespace_created/);
});

test('issue 15 suspend and resume --wait follow the data plane down and back; a second suspend exits 1 with invalid_state; a bad --reason exits 2 before any request', {
  timeout: 300_000,
}, async () => {
  const { id, slug } = activeTenant();
  const tooLong = await svc(['suspend', slug, '--reason', 'x'.repeat(501)]);
  assert.equal(tooLong.code, 2, tooLong.stderr);
  assert.match(tooLong.stderr, /^svc: --reason: expected 1-500 characters\n$/);
  assert.equal((await tenantRow(o, id))?.state, 'active');

  const suspended = await svc([
    'suspend',
    slug,
    '--reason',
    'invoice unpaid',
    '--wait',
    '--timeout',
    '2m',
  ]);
  assert.equal(suspended.code, 0, suspended.stderr);
  assert.match(suspended.stdout, new RegExp(`^${slug} is suspended;`));
  assert.match(suspended.stderr, /^ {2}→ active → suspended$/m);
  assert.match(suspended.stderr, /^ {2}✓ data_plane_suspended$/m);
  assert.match(
    suspended.stderr,
    new RegExp(`✓ ${slug} is suspended; its workloads are at zero replicas, its volumes kept\n$`),
  );
  assert.equal((await tenantRow(o, id))?.state, 'suspended');
  const audited = (await auditRows(o.db, id)).filter((r) => r.action === 'tenant.suspend');
  assert.deepEqual(
    audited.map((r) => [r.actor_id !== null, r.details.reason]),
    [[true, 'invoice unpaid']],
  );

  const again = await svc(['suspend', slug]);
  assert.equal(again.code, 1, again.stderr);
  assert.match(again.stderr, /\(invalid_state\)\n$/);

  const resumed = await svc(['resume', slug, '--wait', '--timeout', '2m', '--json']);
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.equal(
    (JSON.parse(resumed.stdout) as { tenant: { state: string } }).tenant.state,
    'active',
  );
  assert.match(resumed.stderr, /^ {2}✓ data_plane_resumed$/m);
  assert.equal((await tenantRow(o, id))?.state, 'active');
});

test('§3.1 decommission without --yes on a non-terminal stdin is refused with exit 2; with --yes it starts', async () => {
  const { id, slug } = activeTenant();
  const refused = await svc(['decommission', slug]);
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.stderr, /--yes/);
  assert.equal((await tenantRow(o, id))?.state, 'active');

  const ran = await svc(['decommission', slug, '--yes']);
  assert.equal(ran.code, 0, ran.stderr);
  assert.match(ran.stdout, new RegExp(`^${slug} is decommissioning;`));
  assert.notEqual((await tenantRow(o, id))?.state, 'active');
});

test('§9.4 create --wait gives up with exit 124 after --timeout; the tenant stays', {
  timeout: 60_000,
}, async () => {
  const slug = uniqueSlug('cli-late');
  const ran = await svc(['create', '--slug', slug, '--name', 'Late', '--wait', '--timeout', '1ms']);
  assert.equal(ran.code, 124, ran.stderr);
  assert.match(
    ran.stderr,
    new RegExp(`^svc: timed out after 1ms; ${slug} is (pending|provisioning)`, 'm'),
  );
  assert.ok((await slugsListed()).includes(slug));
});
