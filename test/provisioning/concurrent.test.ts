import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RELEASE_NAME } from '../../src/orchestrator/release.ts';
import {
  createTenantVia,
  lifecycle,
  tenantConfig,
  uniqueSlug,
  useOrchestration,
  waitForState,
} from './support.ts';

const o = useOrchestration();

test('§9.4 two tenants provisioned concurrently, both in edge-proxy mode: distinct port pairs, each namespace holds only its own', {
  timeout: 400_000,
}, async () => {
  const slugs = [uniqueSlug('twin'), uniqueSlug('twin')];
  const ids = await Promise.all(
    slugs.map((slug) =>
      createTenantVia(o, tenantConfig(slug, { monitor_ingress: { mode: 'edge-proxy' } })),
    ),
  );
  await Promise.all(ids.map((id) => waitForState(o, id, 'provisioning')));

  const ports: Array<{ events: number; enrollment: number }> = [];
  for (const [i, id] of ids.entries()) {
    const slug = slugs[i] ?? '';
    const namespace = `tenant-${slug}`;
    // The pair is written back to the lifecycle record (spec §2.9 monitorIngress.edgePorts).
    const { rows } = await o.db.pools.mssp.query<{
      details: { ports: { events: number; enrollment: number } };
    }>(
      `SELECT details FROM tenant_lifecycle_events WHERE tenant_id = $1 AND step = 'edge_ports_allocated'`,
      [id],
    );
    const pair = rows[0]?.details.ports;
    assert.ok(pair, 'ports recorded');
    assert.equal(pair.enrollment, pair.events + 1);
    ports.push(pair);
    const res = await o.admin.mssp.getTenant({ params: { tenant_id: id } });
    assert.equal(res.status, 200);
    if (res.status === 200) assert.deepEqual(res.body.tenant.edge_ports, pair);

    // The release carries this tenant's identity and ports, nobody else's.
    const values = (await o.deps.helm.values({ release: RELEASE_NAME, namespace })) as {
      tenant: { id: string; slug: string };
      monitorIngress: { mode: string; edgePorts: { events: number; enrollment: number } };
    };
    assert.deepEqual([values.tenant.id, values.tenant.slug], [id, slug]);
    assert.deepEqual(
      [values.monitorIngress.mode, values.monitorIngress.edgePorts],
      ['edge-proxy', pair],
    );
    const services = await o.core.listNamespacedService({ namespace });
    const monitor = services.items.find((s) => s.spec?.ports?.some((p) => p.port === 1514));
    assert.equal(monitor?.spec?.type, 'ClusterIP', 'edge-proxy mode: no per-tenant load balancer');
    assert.deepEqual(monitor?.spec?.ports?.map((p) => p.port).sort(), [1514, 1515]);
    const secrets = await o.core.listNamespacedSecret({ namespace });
    for (const secret of secrets.items) {
      const owner = secret.metadata?.labels?.['tenant-id'];
      if (owner !== undefined) assert.equal(owner, id, `${secret.metadata?.name} belongs to ${id}`);
    }
    const other = ids[1 - i] ?? '';
    const bootstrap = await o.core.readNamespacedSecret({
      name: 'svc-adapter-bootstrap',
      namespace,
    });
    assert.equal(Buffer.from(bootstrap.data?.['tenant-id'] ?? '', 'base64').toString(), id);
    assert.notEqual(id, other);
    assert.deepEqual(
      (await lifecycle(o, id)).filter((s) => s.startsWith('error')),
      [],
      'no failed step',
    );
  }
  assert.notDeepEqual(ports[0], ports[1], 'each tenant has its own pair');
  assert.notEqual(ports[0]?.events, ports[1]?.enrollment);
  assert.notEqual(ports[1]?.events, ports[0]?.enrollment);
});
