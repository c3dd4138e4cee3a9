import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { SvcClient } from '../../contracts/index.ts';
import type { TenantConfig } from '../../contracts/tenant-config.ts';
import { createSecretStore, type SecretStore } from '../../src/cluster/secrets.ts';
import { installSecretNames } from '../../src/domains/tenants/tenant-creation.ts';
import type { OutboundPolicy } from '../../src/net/outbound-url.ts';
import { tenantConfig, uniqueSlug, useOrchestration } from '../provisioning/support.ts';
import { problemCode, startTestApi, type TestApi } from '../support/api.ts';
import { signedInAs, TEST_HASH_PARAMS } from '../support/sign-in.ts';

const extraApis: TestApi[] = [];

// Registered first, so it runs before the orchestration closes (hooks run in order).
after(async () => {
  for (const api of extraApis) await api.close();
});
// The orchestrator is not started: what matters is what the API accepts and writes.
const o = useOrchestration({ run: false });

/** What a refused creation must not leave: tenant rows, audit rows, install-namespace Secrets. */
async function written() {
  const { rows } = await o.db.pools.mssp.query<{ tenants: number; audits: number }>(
    `SELECT (SELECT count(*)::int FROM tenants) AS tenants,
            (SELECT count(*)::int FROM audit_log WHERE action = 'tenant.create') AS audits`,
  );
  const secrets = await o.core.listNamespacedSecret({ namespace: o.installNamespace });
  return {
    ...rows[0],
    secrets: secrets.items
      .map((s) => s.metadata?.name ?? '')
      .filter((n) => n.startsWith('tenant-')),
  };
}

async function refused(
  client: SvcClient,
  body: unknown,
  expected: { status?: number; code?: string; path?: string },
): Promise<void> {
  const before = await written();
  const res = await client.mssp.createTenant({ body: body as TenantConfig });
  const label = JSON.stringify(body).slice(0, 160);
  assert.deepEqual(
    [res.status, problemCode(res)],
    [expected.status ?? 400, expected.code ?? 'validation_failed'],
    `${label} → ${JSON.stringify(res.body).slice(0, 400)}`,
  );
  if (expected.path) {
    const errors = (res.body as { errors?: Array<{ path: string }> }).errors ?? [];
    assert.ok(
      errors.some((e) => e.path === expected.path),
      `${label}: expected ${expected.path} in ${JSON.stringify(errors)}`,
    );
  }
  assert.deepEqual(await written(), before, `${label}: something was written`);
}

const withCases = (cases: Record<string, unknown>): TenantConfig =>
  ({ ...tenantConfig(uniqueSlug('res')), components: { cases } }) as TenantConfig;

test('issue 18 item 1 / §3.1: configurations that cannot run are refused with the field path and nothing written', async () => {
  const cases: Array<[unknown, string]> = [
    [withCases({ requests: { cpu: '1Gi' } }), '/components/cases/requests/cpu'],
    [withCases({ limits: { memory: '500m' } }), '/components/cases/limits/memory'],
    [
      withCases({ requests: { cpu: '2', memory: '1Gi' }, limits: { cpu: '1', memory: '2Gi' } }),
      '/components/cases/requests/cpu',
    ],
    // A request above the chart's default limit (1 CPU) is found after the merge with defaults.
    [withCases({ requests: { cpu: '1500m' } }), '/components/cases/requests/cpu'],
    [withCases({ requests: { cpu: '1000' }, limits: { cpu: '1000' } }), '/components'],
    [
      withCases({ limits: { memory: '99999999999999999999Gi' } }),
      '/components/cases/limits/memory',
    ],
    // 19 digits pass the grammar; the exact value is beyond what Kubernetes can represent.
    [withCases({ limits: { memory: '9999999999999999999Ei' } }), '/components/cases/limits/memory'],
    [
      withCases({ requests: { memory: '0' }, limits: { memory: '0' } }),
      '/components/cases/limits/memory',
    ],
    [withCases({ requests: { cpu: '0.0001' } }), '/components/cases/requests/cpu'],
    [
      {
        ...tenantConfig(uniqueSlug('port')),
        llm: { provider: 'openai', base_url: 'https://llm.example.com:70000/v1', model: 'm' },
      },
      '/llm/base_url',
    ],
    [
      {
        ...tenantConfig(uniqueSlug('port')),
        integrations: {
          items: [{ kind: 'siem', name: 'x', endpoint_url: 'https://siem.example.com:70000' }],
        },
      },
      '/integrations/items/0/endpoint_url',
    ],
    [
      { ...tenantConfig(uniqueSlug('long')), branding: undefined, display_name: 'D'.repeat(150) },
      '/display_name',
    ],
  ];
  for (const [body, path] of cases) {
    await refused(o.admin, JSON.parse(JSON.stringify(body)), { path });
  }
});

test('issue 18 item 1: a configuration within bounds is still accepted (the checks refuse only what cannot run)', async () => {
  const body = {
    ...withCases({
      requests: { cpu: '250m', memory: '768Mi' },
      limits: { cpu: '1', memory: '1.5Gi' },
    }),
    display_name: 'D'.repeat(100),
    branding: undefined,
  };
  const res = await o.admin.mssp.createTenant({ body: JSON.parse(JSON.stringify(body)) });
  assert.equal(res.status, 201, JSON.stringify(res.body));
});

const OUTBOUND: Array<[string, (url: string) => Partial<TenantConfig>, string]> = [
  ['llm', (url) => ({ llm: { provider: 'openai', base_url: url, model: 'm' } }), '/llm/base_url'],
  [
    'analyzer',
    (url) => ({ integrations: { external_analyzer_url: url } }),
    '/integrations/external_analyzer_url',
  ],
  [
    'integration',
    (url) => ({ integrations: { items: [{ kind: 'siem', name: 'main', endpoint_url: url }] } }),
    '/integrations/items/0/endpoint_url',
  ],
];

test('issue 18 item 2: outbound URLs naming loopback, link-local, metadata, cluster-internal or private targets are refused', async () => {
  const urls = [
    'https://127.0.0.1/v1',
    'https://[::1]/v1',
    'https://169.254.169.254/latest',
    'https://metadata.google.internal/computeMetadata/v1',
    'https://kubernetes.default.svc/api',
    'https://127.0.0.1:2379/v3',
    'https://10.0.0.7/',
    'https://100.64.1.1/',
    'https://[fd00:ec2::254]/',
    'https://[::ffff:169.254.169.254]/',
    'https://2130706433/',
    'https://0x7f.1/',
    'https://svc-api.svc-system.svc.cluster.local:8080/',
    'https://llm-gateway/',
  ];
  for (const url of urls) {
    for (const [, config, path] of OUTBOUND) {
      await refused(o.admin, { ...tenantConfig(uniqueSlug('ssrf')), ...config(url) }, { path });
    }
  }
  // http:// where the schema allows it (external analyzer, integrations): the same rule.
  for (const url of ['http://127.0.0.1:2379/', 'http://2130706433/', 'http://[::1]:8080/']) {
    for (const [, config, path] of OUTBOUND.slice(1)) {
      await refused(o.admin, { ...tenantConfig(uniqueSlug('ssrf')), ...config(url) }, { path });
    }
  }
});

async function apiWith(options: { secrets: SecretStore; outbound?: OutboundPolicy }) {
  const api = await startTestApi(o.db, { ...options, hash: { params: TEST_HASH_PARAMS } });
  extraApis.push(api);
  return signedInAs({ db: o.db, api }, 'mssp_admin');
}

test('issue 18 item 2: the install allows internal targets only through SVC_OUTBOUND_ALLOW_CIDRS / _HOSTS', async () => {
  const client = await apiWith({
    secrets: o.deps.secrets,
    outbound: { allowCidrs: ['10.20.0.0/16'], allowHosts: ['llm-gateway'] },
  });
  for (const url of ['https://10.20.0.9/v1', 'https://llm-gateway/v1']) {
    const res = await client.mssp.createTenant({
      body: { ...tenantConfig(uniqueSlug('allowed')), ...OUTBOUND[0]?.[1](url) } as TenantConfig,
    });
    assert.equal(res.status, 201, `${url}: ${JSON.stringify(res.body)}`);
  }
  // What the setting does not name stays refused.
  await refused(
    client,
    { ...tenantConfig(uniqueSlug('ssrf')), ...OUTBOUND[0]?.[1]('https://169.254.169.254/') },
    { path: '/llm/base_url' },
  );
});

test('issue 18 item 3: integration credentials that would share a Secret key are refused', async () => {
  const item = (name: string, kind = 'siem') => ({ kind, name, credential: `c-${name}` });
  await refused(
    o.admin,
    { ...tenantConfig(uniqueSlug('keys')), integrations: { items: [item('a b'), item('a/b')] } },
    { path: '/integrations/items/1/name' },
  );
  await refused(
    o.admin,
    { ...tenantConfig(uniqueSlug('keys')), integrations: { items: [item('main'), item('main')] } },
    { path: '/integrations/items/1/name' },
  );
  // kind (64) + "." + name (200) = 265 > 253: Kubernetes would answer 422 at the Secret write.
  await refused(
    o.admin,
    {
      ...tenantConfig(uniqueSlug('keys')),
      integrations: { items: [item('n'.repeat(200), `k${'x'.repeat(63)}`)] },
    },
    { path: '/integrations/items/0/name' },
  );
  // Names that stay distinct keep distinct keys.
  const res = await o.admin.mssp.createTenant({
    body: {
      ...tenantConfig(uniqueSlug('keys')),
      integrations: { items: [item('a b'), item('a-b', 'edr')] },
    } as TenantConfig,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
});

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

test('issue 18 item 8: cluster down during creation answers 503 cluster_unavailable, writes nothing, and the same request succeeds later', async () => {
  const file = path.join(tmpdir(), `svc-down-${randomBytes(4).toString('hex')}.yaml`);
  await writeFile(
    file,
    `apiVersion: v1
kind: Config
clusters: [{name: down, cluster: {server: "https://127.0.0.1:${await closedPort()}", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: down, context: {cluster: down, user: u}}]
current-context: down
`,
  );
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  const down = await apiWith({ secrets: createSecretStore(kc, o.installNamespace) });
  const body = tenantConfig(uniqueSlug('down'));
  await refused(down, body, { status: 503, code: 'cluster_unavailable' });
  const retry = await o.admin.mssp.createTenant({ body });
  assert.equal(retry.status, 201, JSON.stringify(retry.body));
});

test('issue 18 item 8: a cluster without the install namespace answers 503 install_namespace_missing; once it exists, the retry creates everything', async () => {
  const missing = `svc-missing-${randomBytes(3).toString('hex')}`;
  const secrets = createSecretStore(o.cluster.kubeConfig, missing);
  const client = await apiWith({ secrets });
  const body = tenantConfig(uniqueSlug('nons'));
  await refused(client, body, { status: 503, code: 'install_namespace_missing' });
  await o.core.createNamespace({ body: { metadata: { name: missing } } });
  try {
    const res = await client.mssp.createTenant({ body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    if (res.status !== 201) return;
    const names = installSecretNames(res.body.tenant.id);
    assert.deepEqual(Object.keys((await secrets.read(names.bootstrap)) ?? {}).length > 0, true);
    assert.deepEqual(await secrets.read(names.llm), { api_key: body.llm?.api_key });
  } finally {
    await o.core.deleteNamespace({ name: missing }).catch(() => undefined);
  }
});
