import type { AppDatabase } from '../../db/pools.ts';
import { createCortexClient } from '../../integrations/cortex/cortex-client.ts';
import { IntegrationError } from '../../integrations/integration-error.ts';
import type { IntegrationFetch } from '../../integrations/integration-http.ts';
import {
  type ResolvedEndpoint,
  resolveEndpoints,
  type SecretReader,
} from '../../integrations/tenant-endpoints.ts';
import { createTheHiveClient } from '../../integrations/thehive/thehive-client.ts';
import { findTenant } from '../tenants/tenant-repository.ts';
import { findIntegrations } from './pipeline-repository.ts';
import type { TenantComponents } from './pipeline-service.ts';

export interface ComponentDeps {
  db: Pick<AppDatabase, 'withTenant'>;
  installNamespace: string;
  /** Cluster Secrets; undefined when svc runs without a cluster (no component is reachable). */
  readSecret: SecretReader | undefined;
  /**
   * `inCluster` reaches the tenant package's own Services (internal addresses by design);
   * `outbound` reaches URLs the MSSP configured, under the outbound policy.
   */
  fetch: { inCluster: IntegrationFetch; outbound: IntegrationFetch };
}

/**
 * Where a tenant's case and analysis components are, read when a job needs them: the tenant's
 * newest configuration and its Secrets (docs/integrations.md).
 */
export function createTenantComponents(deps: ComponentDeps): TenantComponents {
  async function resolve(tenantId: string) {
    const readSecret = deps.readSecret;
    if (!readSecret)
      throw new IntegrationError(
        'unreachable',
        'svc runs without a cluster: the tenant components cannot be reached',
      );
    const found = await deps.db.withTenant(tenantId, async (tx) => ({
      tenant: await findTenant(tx, tenantId),
      integrations: await findIntegrations(tx, tenantId),
    }));
    if (!found.tenant) throw new IntegrationError('rejected', `tenant ${tenantId} does not exist`);
    return resolveEndpoints({ id: tenantId, slug: found.tenant.slug }, found.integrations, {
      installNamespace: deps.installNamespace,
      readSecret,
    });
  }
  const fetchFor = (endpoint: ResolvedEndpoint) =>
    endpoint.source === 'in-cluster' ? deps.fetch.inCluster : deps.fetch.outbound;
  return {
    async cases(tenantId) {
      const { cases } = await resolve(tenantId);
      return createTheHiveClient({
        baseUrl: cases.baseUrl,
        auth: cases.auth,
        fetch: fetchFor(cases),
      });
    },
    async analysis(tenantId) {
      const { analysis } = await resolve(tenantId);
      if ('unavailable' in analysis) return analysis;
      return createCortexClient({
        baseUrl: analysis.baseUrl,
        auth: analysis.auth,
        fetch: fetchFor(analysis),
      });
    },
  };
}
