import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import { createTestNamespace } from '../../testcluster/harness.ts';
import { problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { getTestCluster } from '../support/cluster.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTenant } from '../support/fixtures.ts';
import { TEST_HASH_PARAMS } from '../support/sign-in.ts';
import { adapterToken, bearer, issue, setState } from './support.ts';

let db: TestDatabase;
let api: TestApi;
let svc: SvcClient;
let tenantA: string;
let tenantB: string;
let namespace: string;
let core: CoreV1Api;
/** Every secret value of this file; none may appear anywhere in a config response. */
const secretValues: string[] = [];

function secretValue(): string {
  const value = `s3cr3t-${randomBytes(12).toString('hex')}`;
  secretValues.push(value, Buffer.from(value).toString('base64'));
  return value;
}

/**
 * A real cluster Secret holding the value, and the reference to it in tenant_secrets, as the
 * provisioning flow writes them (spec §9.4 steps 3 and 5).
 */
async function secretFor(tenantId: string, name: string, version: number): Promise<string> {
  await core.createNamespacedSecret({
    namespace,
    body: { metadata: { name }, stringData: { token: secretValue() } },
  });
  return db.app.withTenant(tenantId, async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO tenant_secrets (tenant_id, purpose, namespace, name, version)
       VALUES ($1, $2, $3, $2, $4) RETURNING id`,
      [tenantId, name, namespace, version],
    );
    return rows[0]?.id ?? '';
  });
}

async function integration(
  tenantId: string,
  row: {
    kind: string;
    name: string;
    endpoint_url: string | null;
    settings?: object;
    thresholds?: object;
    enabled?: boolean;
    secret_id?: string | null;
  },
): Promise<string> {
  return db.app.withTenant(tenantId, async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO integration_configs
         (tenant_id, kind, name, endpoint_url, settings, thresholds, enabled, secret_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
      [
        tenantId,
        row.kind,
        row.name,
        row.endpoint_url,
        JSON.stringify(row.settings ?? {}),
        JSON.stringify(row.thresholds ?? {}),
        row.enabled ?? true,
        row.secret_id ?? null,
      ],
    );
    return rows[0]?.id ?? '';
  });
}

async function branding(tenantId: string, appName: string) {
  await db.app.withTenant(tenantId, (tx) =>
    tx.query(
      `INSERT INTO branding_configs (tenant_id, app_name, primary_color, secondary_color)
       VALUES ($1, $2, '#112233', '#abcdef')`,
      [tenantId, appName],
    ),
  );
}

const ids: Record<string, string> = {};

before(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { hash: { params: TEST_HASH_PARAMS } });
  svc = createSvcClient({ baseUrl: api.url });
  const cluster = getTestCluster();
  core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  namespace = await createTestNamespace(cluster, 'adapter-config');
  tenantA = await createTenant(db.pools.app, 'alpha');
  tenantB = await createTenant(db.pools.app, 'bravo');
  await setState(db, tenantA, 'active');
  await setState(db, tenantB, 'active');
  const siemSecret = await secretFor(tenantA, 'alpha-siem', 3);
  ids.siem = await integration(tenantA, {
    kind: 'siem',
    name: 'primary',
    endpoint_url: 'https://siem.alpha.test',
    settings: { index: 'alerts-*' },
    thresholds: { min_severity: 7 },
    secret_id: siemSecret,
  });
  ids.ticketing = await integration(tenantA, {
    kind: 'ticketing',
    name: 'helpdesk',
    endpoint_url: null,
    enabled: false,
  });
  await branding(tenantA, 'Alpha SOC');
  // The bootstrap secret is one more value that must never come back.
  secretValues.push((await issue(db, tenantA)).secret);
  const bravoSecret = await secretFor(tenantB, 'bravo-siem', 1);
  ids.bravo = await integration(tenantB, {
    kind: 'siem',
    name: 'bravo-only',
    endpoint_url: 'https://siem.bravo.test',
    secret_id: bravoSecret,
  });
  await branding(tenantB, 'Bravo Security');
});
after(async () => {
  await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
  await api.close();
  await db.drop();
});

/** Every string in a JSON value, keys included. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => [k, ...strings(v)]);
  }
  return [];
}

test("§4.4 config: the token's tenant's integrations with secret references, and its app name", async () => {
  const res = await svc.internal.config({ headers: bearer(await adapterToken(api, tenantA)) });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.deepEqual(res.body, {
    tenant_id: tenantA,
    config_revision: 1,
    app_name: 'Alpha SOC',
    integrations: [
      {
        id: ids.siem,
        kind: 'siem',
        name: 'primary',
        endpoint_url: 'https://siem.alpha.test',
        settings: { index: 'alerts-*' },
        thresholds: { min_severity: 7 },
        enabled: true,
        secret: { namespace, name: 'alpha-siem', version: 3 },
      },
      {
        id: ids.ticketing,
        kind: 'ticketing',
        name: 'helpdesk',
        endpoint_url: null,
        settings: {},
        thresholds: {},
        enabled: false,
        secret: null,
      },
    ],
  });
});

test('§2.3 config carries secret references only: no secret value, hash or credential anywhere', async () => {
  const res = await svc.internal.config({ headers: bearer(await adapterToken(api, tenantA)) });
  assert.equal(res.status, 200);
  const text = JSON.stringify(res.body);
  const { rows } = await db.pools.mssp.query<{ credential_hash: string }>(
    'SELECT credential_hash FROM adapter_credentials WHERE tenant_id = $1',
    [tenantA],
  );
  const forbidden = [...secretValues, ...rows.map((r) => r.credential_hash)];
  assert.ok(forbidden.length >= 5);
  for (const value of forbidden) assert.ok(!text.includes(value), 'a secret value leaked');
  for (const s of strings(res.body)) assert.doesNotMatch(s, /s3cr3t/);
  // The reference is enough for the adapter: it names the Secret that holds the value.
  const integration = res.status === 200 ? res.body.integrations[0] : undefined;
  const secret = await core.readNamespacedSecret({
    namespace: integration?.secret?.namespace ?? '',
    name: integration?.secret?.name ?? '',
  });
  const value = Buffer.from(secret.data?.token ?? '', 'base64').toString();
  assert.ok(secretValues.includes(value));
});

test("§9.5.5 an adapter token for A never reads B's config; a tenant_id parameter is refused", async () => {
  const tokenA = await adapterToken(api, tenantA);
  const own = await svc.internal.config({ headers: bearer(tokenA) });
  const text = JSON.stringify(own.body);
  for (const leak of [tenantB, 'bravo', ids.bravo ?? 'missing', 'Bravo Security']) {
    assert.ok(!text.includes(leak), `A's config shows ${leak}`);
  }
  const named = await svc.internal.config({
    query: { tenant_id: tenantB } as never,
    headers: bearer(tokenA),
  });
  assert.deepEqual([named.status, problemCode(named)], [400, 'validation_failed']);
  const b = await svc.internal.config({ headers: bearer(await adapterToken(api, tenantB)) });
  assert.deepEqual(
    b.status === 200 && [b.body.tenant_id, b.body.app_name, b.body.integrations.map((i) => i.id)],
    [tenantB, 'Bravo Security', [ids.bravo]],
  );
});

test('§4.4 a tenant with nothing configured gets an empty config; a deleted tenant gets 401', async () => {
  const bare = await createTenant(db.pools.app);
  const res = await svc.internal.config({ headers: bearer(await adapterToken(api, bare)) });
  assert.deepEqual(res.body, {
    tenant_id: bare,
    config_revision: 1,
    app_name: null,
    integrations: [],
  });
  await setState(db, bare, 'soft-deleted');
  const gone = await svc.internal.config({ headers: bearer(await adapterToken(api, bare)) });
  assert.deepEqual([gone.status, problemCode(gone)], [401, 'invalid_token']);
});
