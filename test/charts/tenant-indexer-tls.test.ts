import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';
import {
  INDEXER_ADMIN_DN,
  INDEXER_NODE_DN,
  INDEXER_TLS_SECRET,
} from '../../src/orchestrator/indexer-pki.ts';
import { INDEXER_SECURITY_SECRET } from '../../src/orchestrator/indexer-security.ts';
import { sampleTenantValues } from '../fixtures/tenant-values.ts';

// The monitor subchart (docs/charts-tenant.md "Indexer TLS and users"): the indexer serves svc's
// per-tenant certificate from the paths its rendered opensearch.yml names, with the DNs svc
// issues; its security configuration is svc's Secret; the manager (filebeat) and the dashboard
// verify it against the tenant CA and mount no key.

const chart = fileURLToPath(new URL('../../charts/svc-tenant', import.meta.url));
const scratch = await mkdtemp(join(tmpdir(), 'svc-tenant-indexer-tls-'));
after(() => rm(scratch, { recursive: true, force: true }));

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are walked loosely, like kubectl does
type Manifest = any;

const valuesFile = join(scratch, 'values.json');
await writeFile(valuesFile, JSON.stringify(sampleTenantValues()));
const { stdout } = await promisify(execFile)(
  'helm',
  ['template', 'svc-tenant', chart, '--namespace', 'tenant-acme', '-f', valuesFile],
  { maxBuffer: 32 * 1024 * 1024 },
);
const objects: Manifest[] = parseAllDocuments(stdout)
  .map((d) => d.toJS())
  .filter(Boolean);
const find = (kind: string, name: string): Manifest => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  assert.ok(found, `${kind}/${name}`);
  return found;
};
const podOf = (kind: string, name: string) => find(kind, name).spec.template.spec;
const indexerPod = podOf('StatefulSet', 'monitor-indexer');
const indexer = indexerPod.containers[0];
const opensearch = parse(find('ConfigMap', 'monitor-indexer-config').data['opensearch.yml']);

/** The Secret key a container sees at `file`, through its mounts and the pod's volumes. */
function secretKeyAt(pod: Manifest, container: Manifest, file: string) {
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.volumes.find((v: Manifest) => v.name === mount.name);
    if (!volume?.secret) continue;
    const items: { key: string; path: string }[] | undefined = volume.secret.items;
    const keyOf = (path: string) => (items ? items.find((i) => i.path === path)?.key : path);
    if (mount.subPath && mount.mountPath === file)
      return { secret: volume.secret.secretName, key: keyOf(mount.subPath) };
    if (!mount.subPath && dirname(file) === mount.mountPath)
      return {
        secret: volume.secret.secretName,
        key: keyOf(file.slice(mount.mountPath.length + 1)),
      };
  }
  return undefined;
}

test('the indexer’s opensearch.yml names pem files that are exactly the keys of svc-indexer-tls', () => {
  const K = INDEXER_TLS_SECRET.keys;
  const expected: Record<string, string> = {
    'plugins.security.ssl.http.pemcert_filepath': K.node,
    'plugins.security.ssl.http.pemkey_filepath': K.nodeKey,
    'plugins.security.ssl.http.pemtrustedcas_filepath': K.ca,
    'plugins.security.ssl.transport.pemcert_filepath': K.node,
    'plugins.security.ssl.transport.pemkey_filepath': K.nodeKey,
    'plugins.security.ssl.transport.pemtrustedcas_filepath': K.ca,
  };
  for (const [setting, key] of Object.entries(expected)) {
    assert.deepEqual(
      secretKeyAt(indexerPod, indexer, opensearch[setting]),
      { secret: INDEXER_TLS_SECRET.name, key },
      setting,
    );
  }
  assert.equal(opensearch['plugins.security.ssl.http.enabled'], true);
  // The opensearch.yml itself is where the image reads it.
  const config = indexer.volumeMounts.find((m: Manifest) => m.name === 'config');
  assert.equal(config.mountPath, '/usr/share/wazuh-indexer/opensearch.yml');
  assert.equal(config.subPath, 'opensearch.yml');
  // The admin pair is in the pod for securityadmin.sh, beside the CA.
  assert.deepEqual(
    secretKeyAt(indexerPod, indexer, '/usr/share/wazuh-indexer/certs/admin-key.pem'),
    { secret: INDEXER_TLS_SECRET.name, key: K.adminKey },
  );
});

test('nodes_dn and admin_dn are the subjects svc puts in the node and admin certificates', () => {
  assert.deepEqual(opensearch['plugins.security.nodes_dn'], [INDEXER_NODE_DN]);
  assert.deepEqual(opensearch['plugins.security.authcz.admin_dn'], [INDEXER_ADMIN_DN]);
  assert.equal(opensearch['plugins.security.allow_default_init_securityindex'], true);
});

test('the security plugin’s users, roles and mapping are svc’s Secret, each file where the image loads it', () => {
  for (const file of Object.values(INDEXER_SECURITY_SECRET.keys)) {
    assert.deepEqual(
      secretKeyAt(indexerPod, indexer, `/usr/share/wazuh-indexer/opensearch-security/${file}`),
      { secret: INDEXER_SECURITY_SECRET.name, key: file },
      file,
    );
  }
});

test('the manager (filebeat) and the dashboard verify the indexer against the tenant CA and mount no key', () => {
  const manager = podOf('StatefulSet', 'monitor-manager');
  const managerEnv = Object.fromEntries(
    manager.containers[0].env.map((e: Manifest) => [e.name, e.value]),
  );
  assert.equal(managerEnv.FILEBEAT_SSL_VERIFICATION_MODE, 'full');
  assert.deepEqual(
    secretKeyAt(manager, manager.containers[0], managerEnv.SSL_CERTIFICATE_AUTHORITIES),
    { secret: INDEXER_TLS_SECRET.name, key: INDEXER_TLS_SECRET.keys.ca },
  );
  const dashboard = podOf('Deployment', 'monitor-dashboard');
  assert.deepEqual(
    secretKeyAt(dashboard, dashboard.containers[0], '/usr/share/wazuh-dashboard/certs/root-ca.pem'),
    { secret: INDEXER_TLS_SECRET.name, key: INDEXER_TLS_SECRET.keys.ca },
  );
  // Only the indexer holds private keys: every other pod's svc-indexer-tls volume is the CA alone.
  for (const o of objects.filter((x) => x.spec?.template?.spec)) {
    if (o.metadata.name === 'monitor-indexer') continue;
    for (const v of o.spec.template.spec.volumes ?? []) {
      if (v.secret?.secretName !== INDEXER_TLS_SECRET.name) continue;
      assert.deepEqual(
        v.secret.items.map((i: Manifest) => i.key),
        [INDEXER_TLS_SECRET.keys.ca],
        `${o.kind}/${o.metadata.name}`,
      );
    }
  }
});
