// Issue 32: SVC_TENANT_PACKAGES, the tenant packages svc pulls from a registry by digest
// (docs/orchestrator.md "Tenant packages from a registry"). Every bad value stops the process
// with one line naming the variable, the entry and what is expected.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Compile } from 'typebox/compile';
import { SystemValues } from '../../contracts/system-values.ts';
import { ConfigError, loadConfig } from '../../src/config/index.ts';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const ref = (repository: string, hex = A) => `oci://${repository}@sha256:${hex}`;

test('issue 32 SVC_TENANT_PACKAGES: oci references pinned by digest, split on commas and spaces; unset means the bundled charts', () => {
  const unset = loadConfig({}).orchestrator;
  assert.deepEqual(unset.tenantPackages, []);
  assert.equal(unset.tenantPackagesCaFile, undefined);

  const one = ref('127.0.0.1:5000/acme-mssp/charts/svc-tenant');
  const two = ref('registry.example.test/svc/charts/svc-tenant', B);
  const read = loadConfig({
    SVC_TENANT_PACKAGES: ` ${one},\n ${two} `,
    SVC_TENANT_PACKAGES_CA_FILE: '/etc/svc/outbound-ca/ca.pem',
  }).orchestrator;
  assert.deepEqual(read.tenantPackages, [
    {
      reference: one,
      repository: '127.0.0.1:5000/acme-mssp/charts/svc-tenant',
      digest: `sha256:${A}`,
    },
    {
      reference: two,
      repository: 'registry.example.test/svc/charts/svc-tenant',
      digest: `sha256:${B}`,
    },
  ]);
  assert.equal(read.tenantPackagesCaFile, '/etc/svc/outbound-ca/ca.pem');
  // A repository at the registry's root is a reference too.
  assert.equal(
    loadConfig({ SVC_TENANT_PACKAGES: ref('registry.test/svc-tenant') }).orchestrator
      .tenantPackages[0]?.repository,
    'registry.test/svc-tenant',
  );
});

test('issue 32 SVC_TENANT_PACKAGES: a tag, no digest, another chart, a bad host or a repeat stops with one line naming the entry', () => {
  const good = ref('registry.test/acme/charts/svc-tenant');
  const cases: [string, RegExp][] = [
    [
      'oci://registry.test/acme/charts/svc-tenant:0.1.0',
      /^SVC_TENANT_PACKAGES: entry 1 "oci:\/\/registry\.test\/acme\/charts\/svc-tenant:0\.1\.0": it is not pinned by @sha256:<64 hex> \(a tag can move, so tags are not accepted\); expected oci:\/\/<host>\[:port\]\/<path>\/svc-tenant@sha256:<64 hex> references, separated by commas or spaces$/,
    ],
    [
      `${good}, oci://registry.test/acme/charts/svc-tenant:0.1.0@sha256:${A}`,
      /entry 2 .*its repository is not <host>\[:port\]\/<path>\/svc-tenant in lower case, without a tag/,
    ],
    [ref('registry.test/acme/charts/svc-system'), /entry 1 .*its repository is not .*svc-tenant/],
    [ref('Registry.Test/acme/charts/svc-tenant'), /entry 1 .*in lower case/],
    [
      `registry.test/acme/charts/svc-tenant@sha256:${A}`,
      /entry 1 .*it does not start with oci:\/\//,
    ],
    [`https://registry.test/acme/charts/svc-tenant@sha256:${A}`, /it does not start with oci:\/\//],
    [`oci://registry.test/acme/charts/svc-tenant@sha256:${A.slice(1)}`, /not pinned by @sha256/],
    [`oci://registry.test/acme/charts/svc-tenant@sha512:${A}${A}`, /not pinned by @sha256/],
    [`oci://registry.test/acme/charts/svc-tenant@sha256:${A.toUpperCase()}`, /not pinned/],
    [`${good} ${good}`, /^SVC_TENANT_PACKAGES: entry 2 ".*" is listed twice; expected/],
    [' , ,', /^SVC_TENANT_PACKAGES: no reference; expected/],
    [
      Array.from({ length: 33 }, (_, i) => ref(`r${i}.test/svc-tenant`)).join(','),
      /^SVC_TENANT_PACKAGES: more than 32 references/,
    ],
  ];
  for (const [value, message] of cases) {
    assert.throws(
      () => loadConfig({ SVC_TENANT_PACKAGES: value }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError, value);
        assert.match(error.message, message, value);
        assert.equal(error.message.split('\n').length, 1, 'one line');
        return true;
      },
    );
  }
});

test('issue 32 SVC_TENANT_PACKAGES: one source of tenant packages; the CA file only with packages', () => {
  const good = ref('registry.test/acme/charts/svc-tenant');
  assert.throws(() => loadConfig({ SVC_TENANT_PACKAGES: good, SVC_TENANT_CHARTS_DIR: '/charts' }), {
    name: 'ConfigError',
    message:
      'SVC_TENANT_PACKAGES and SVC_TENANT_CHARTS_DIR are both set; tenant packages come from one source: unset one',
  });
  assert.throws(() => loadConfig({ SVC_TENANT_PACKAGES_CA_FILE: '/ca.pem' }), {
    name: 'ConfigError',
    message: 'SVC_TENANT_PACKAGES_CA_FILE: set without SVC_TENANT_PACKAGES',
  });
});

test('issue 32 the system chart schema takes the same references as SVC_TENANT_PACKAGES', () => {
  const check = Compile(SystemValues.properties.tenants.properties.packages);
  assert.ok(check.Check([]));
  assert.ok(check.Check([ref('127.0.0.1:5000/acme/charts/svc-tenant')]));
  for (const bad of [
    ['oci://registry.test/acme/charts/svc-tenant:0.1.0'],
    [ref('registry.test/acme/charts/svc-system')],
    [ref('registry.test/svc-tenant'), ref('registry.test/svc-tenant')],
  ]) {
    assert.equal(check.Check(bad), false, JSON.stringify(bad));
  }
});
