import { integrationSecretKey } from '../domains/tenants/config-secrets.ts';
import { installSecretNames } from '../domains/tenants/tenant-creation.ts';
import { IntegrationError } from './integration-error.ts';
import type { IntegrationAuth } from './integration-http.ts';

/**
 * Where a tenant's case component (TheHive) and analysis component (Cortex) are, and with which
 * credential svc calls them. docs/integrations.md states the rule; in short, per component:
 *
 * 1. the first configured integration of kind `thehive` (resp. `cortex`) with an `endpoint_url`:
 *    that URL, its credential (Secret `tenant-<id>-integrations`, key `<kind>.<name>`) as a
 *    bearer API key;
 * 2. analysis only: `integrations.external_analyzer_url`, which replaces the in-namespace
 *    component (the tenant package then runs none), with the credential of the first `cortex`
 *    item without a URL; without one the analysis component is unavailable;
 * 3. the tenant package's own Service in `tenant-<slug>`, with the admin login whose password
 *    the package's bootstrap Secret `svc-bootstrap` holds (the copy in the tenant namespace is the
 *    one the running components were installed with).
 */

export interface TenantRef {
  id: string;
  slug: string;
}

/** What a stored configuration item or an `integration_configs` row both provide. */
export interface IntegrationItem {
  kind: string;
  name: string;
  endpoint_url?: string | null | undefined;
}

export interface StoredIntegrations {
  external_analyzer_url?: string | null | undefined;
  items?: IntegrationItem[] | undefined;
}

export interface SecretRef {
  namespace: string;
  name: string;
  key: string;
}

export type EndpointSource = 'integration' | 'external-analyzer' | 'in-cluster';

export interface EndpointPlan {
  baseUrl: string;
  source: EndpointSource;
  credential:
    | { auth: 'bearer'; secret: SecretRef }
    | { auth: 'basic'; user: string; secret: SecretRef };
}

export interface EndpointsPlan {
  cases: EndpointPlan;
  /** A reason instead of a plan when the analysis component cannot be reached. */
  analysis: EndpointPlan | { unavailable: string };
}

/** The tenant package's Services (charts/svc-tenant/charts/{cases,analysis}/templates/server.yaml). */
export const CASES_SERVICE = { name: 'cases', port: 9000 } as const;
export const ANALYSIS_SERVICE = { name: 'analysis', port: 9001 } as const;
/** The package's credential Secret in the tenant namespace (src/orchestrator/render.ts). */
export const COMPONENT_SECRET = 'svc-bootstrap';
/** TheHive 5's built-in administrator. */
export const CASES_ADMIN_USER = 'admin@thehive.local';
/** The login svc uses on the in-namespace Cortex (docs/integrations.md "Preconditions"). */
export const ANALYSIS_ADMIN_USER = 'admin';

function serviceUrl(slug: string, service: { name: string; port: number }): string {
  return `http://${service.name}.tenant-${slug}.svc:${service.port}`;
}

function itemSecret(tenantId: string, installNamespace: string, item: IntegrationItem): SecretRef {
  return {
    namespace: installNamespace,
    name: installSecretNames(tenantId).integrations,
    key: integrationSecretKey(item.kind, item.name),
  };
}

const withUrl = (items: IntegrationItem[], kind: string) =>
  items.find((i) => i.kind === kind && typeof i.endpoint_url === 'string' && i.endpoint_url !== '');

export function planEndpoints(
  tenant: TenantRef,
  integrations: StoredIntegrations | undefined,
  installNamespace: string,
): EndpointsPlan {
  const items = integrations?.items ?? [];
  const inCluster = (
    service: { name: string; port: number },
    user: string,
    key: string,
  ): EndpointPlan => ({
    baseUrl: serviceUrl(tenant.slug, service),
    source: 'in-cluster',
    credential: {
      auth: 'basic',
      user,
      secret: { namespace: `tenant-${tenant.slug}`, name: COMPONENT_SECRET, key },
    },
  });
  const external = (item: IntegrationItem, source: EndpointSource, url: string): EndpointPlan => ({
    baseUrl: url,
    source,
    credential: { auth: 'bearer', secret: itemSecret(tenant.id, installNamespace, item) },
  });

  const thehive = withUrl(items, 'thehive');
  const cases = thehive
    ? external(thehive, 'integration', thehive.endpoint_url as string)
    : inCluster(CASES_SERVICE, CASES_ADMIN_USER, 'cases-admin-password');

  const cortex = withUrl(items, 'cortex');
  const externalAnalyzer = integrations?.external_analyzer_url ?? '';
  let analysis: EndpointsPlan['analysis'];
  if (cortex) {
    analysis = external(cortex, 'integration', cortex.endpoint_url as string);
  } else if (externalAnalyzer !== '') {
    const keyed = items.find((i) => i.kind === 'cortex');
    analysis = keyed
      ? external(keyed, 'external-analyzer', externalAnalyzer)
      : {
          unavailable:
            'integrations.external_analyzer_url is set but no cortex integration carries its credential',
        };
  } else {
    analysis = inCluster(ANALYSIS_SERVICE, ANALYSIS_ADMIN_USER, 'analysis-admin-password');
  }
  return { cases, analysis };
}

export interface ResolvedEndpoint {
  baseUrl: string;
  source: EndpointSource;
  auth: IntegrationAuth;
}

/** `Namespaces.readSecret` (src/cluster/namespaces.ts) fits. */
export type SecretReader = (
  namespace: string,
  name: string,
) => Promise<Record<string, string> | undefined>;

async function resolvePlan(plan: EndpointPlan, read: SecretReader): Promise<ResolvedEndpoint> {
  const { secret } = plan.credential;
  const value = (await read(secret.namespace, secret.name))?.[secret.key];
  // Nobody can fix this by retrying: the configuration or the Secret must change.
  if (value === undefined || value === '')
    throw new IntegrationError(
      'auth',
      `no credential for ${plan.baseUrl}: key ${secret.key} missing from ${secret.namespace}/${secret.name}`,
    );
  const auth: IntegrationAuth =
    plan.credential.auth === 'bearer'
      ? { kind: 'bearer', apiKey: value }
      : { kind: 'basic', user: plan.credential.user, password: value };
  return { baseUrl: plan.baseUrl, source: plan.source, auth };
}

/**
 * The plan with its credentials read. The case component always resolves or throws; the
 * analysis component is `{ unavailable }` when the configuration names no way to reach it.
 */
export async function resolveEndpoints(
  tenant: TenantRef,
  integrations: StoredIntegrations | undefined,
  deps: { installNamespace: string; readSecret: SecretReader },
): Promise<{ cases: ResolvedEndpoint; analysis: ResolvedEndpoint | { unavailable: string } }> {
  const plan = planEndpoints(tenant, integrations, deps.installNamespace);
  const cases = await resolvePlan(plan.cases, deps.readSecret);
  const analysis =
    'unavailable' in plan.analysis
      ? plan.analysis
      : await resolvePlan(plan.analysis, deps.readSecret);
  return { cases, analysis };
}
