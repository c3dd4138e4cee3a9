import Type, { type Static } from 'typebox';
import { TenantScheduling } from './scheduling.ts';
import { CANONICAL_UUID } from './uuid.ts';

/**
 * The tenant package's values (spec §2.9 "Tenant package values"): svc renders them from the
 * tenant's configuration and validates them against this schema before calling Helm. The
 * chart's `values.schema.json` is generated from it (`npm run charts:schema`; a test fails on
 * drift), so Helm refuses exactly what svc refuses.
 *
 * Keys beyond §2.9, each needed to run the package and documented in docs/charts.md:
 * `global` (storage class, labels, enrollment certificate and placement for the subcharts),
 * `scheduling`, `adapter.apiUrl`, `adapter.bootstrapSecretName`, `networkPolicies.installNamespace`.
 */
const closed = { additionalProperties: false } as const;

const Uuid = Type.String({ pattern: `^${CANONICAL_UUID}$` });
/**
 * Kubernetes quantities per resource kind (src/domains/tenants/quantity.ts parses them exactly): CPU
 * takes only the `m` suffix, memory and storage take SI suffixes but never `m`.
 */
export const CPU_PATTERN = '^[0-9]{1,19}(\\.[0-9]{1,9})?m?$';
export const BYTES_PATTERN = '^[0-9]{1,19}(\\.[0-9]{1,9})?(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$';
const Cpu = Type.String({ pattern: CPU_PATTERN, maxLength: 32 });
const Bytes = Type.String({ pattern: BYTES_PATTERN, maxLength: 32 });
const Hex = Type.String({ pattern: '^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$' });
const DnsLabel = Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$' });
const DnsName = Type.String({ pattern: '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$' });
const Port = Type.Integer({ minimum: 1, maximum: 65535 });
const Labels = Type.Record(
  Type.String({
    pattern: '^([a-z0-9.-]{1,253}/)?[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$',
  }),
  Type.String({ pattern: '^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$' }),
);

/**
 * Helm's only channel from a chart to its subcharts: it copies `global` into the block of every
 * enabled subchart (as `<subchart>.global`) before validating this schema, so those blocks must
 * admit it. svc renders: `storageClassName` (empty = the cluster's default class) for every PVC,
 * `labels` = namespaceLabels for every object, `monitorTlsSecretName` =
 * monitorIngress.tls.secretName for the manager, `scheduling` = the top-level `scheduling` for
 * every pod; the chart refuses values where they disagree.
 */
export const GlobalValues = Type.Object(
  {
    storageClassName: Type.String({ maxLength: 253 }),
    labels: Labels,
    monitorTlsSecretName: Type.String({ maxLength: 253 }),
    scheduling: TenantScheduling,
  },
  closed,
);
const subchartGlobal = { global: Type.Optional(GlobalValues) };

export const ResourceSpec = Type.Object(
  {
    requests: Type.Object({ cpu: Cpu, memory: Bytes }, closed),
    limits: Type.Object({ cpu: Cpu, memory: Bytes }, closed),
  },
  closed,
);
const Persistence = Type.Object({ size: Bytes }, closed);

export const MonitorValues = Type.Object(
  {
    manager: Type.Object({ resources: ResourceSpec, persistence: Persistence }, closed),
    indexer: Type.Object(
      {
        resources: ResourceSpec,
        persistence: Persistence,
        jvm: Type.Object({ heap: Type.String({ pattern: '^[0-9]+[kmg]$' }) }, closed),
      },
      closed,
    ),
    dashboard: Type.Object({ enabled: Type.Boolean(), resources: ResourceSpec }, closed),
  },
  closed,
);

export const CasesValues = Type.Object(
  {
    resources: ResourceSpec,
    store: Type.Object({ resources: ResourceSpec, persistence: Persistence }, closed),
  },
  closed,
);

export const AnalysisValues = Type.Object(
  {
    resources: ResourceSpec,
    search: Type.Object({ resources: ResourceSpec, persistence: Persistence }, closed),
    analyzers: Type.Array(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,100}$' }), { maxItems: 100 }),
  },
  closed,
);

export const TenantValues = Type.Object(
  {
    tenant: Type.Object(
      {
        id: Uuid,
        slug: Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,54}[a-z0-9])?$' }),
        msspId: Uuid,
        installId: Uuid,
        displayName: Type.String({ minLength: 1, maxLength: 200 }),
      },
      closed,
    ),
    branding: Type.Object(
      {
        appName: Type.String({ maxLength: 100 }),
        logoUrl: Type.String({ maxLength: 2048 }),
        primaryColor: Hex,
        secondaryColor: Hex,
        favicon: Type.String({ maxLength: 2048 }),
      },
      closed,
    ),
    llm: Type.Object(
      {
        provider: Type.String({ maxLength: 32 }),
        baseUrl: Type.String({ pattern: '^(https://[^\\s]+)?$', maxLength: 2048 }),
        model: Type.String({ maxLength: 200 }),
        apiKeyRef: Type.Object(
          {
            namespace: DnsLabel,
            name: Type.String({ pattern: '^(tenant-[0-9a-f-]{36}-llm)?$' }),
            key: Type.Literal('api_key'),
          },
          closed,
        ),
      },
      closed,
    ),
    integrations: Type.Object(
      { externalAnalyzerUrl: Type.String({ pattern: '^(https?://[^\\s]+)?$', maxLength: 2048 }) },
      closed,
    ),
    components: Type.Object(
      {
        monitor: MonitorValues,
        cases: CasesValues,
        analysis: AnalysisValues,
        intel: Type.Object({ enabled: Type.Literal(false) }, closed),
      },
      closed,
    ),
    /**
     * Helm hands a subchart only the values under its own name, so svc also renders each
     * vendored subchart's block, copied from `components.<name>`; the chart fails to render
     * when a block differs from its source (charts/svc-tenant/templates/_subchart-guard.tpl).
     */
    monitor: Type.Object({ ...MonitorValues.properties, ...subchartGlobal }, closed),
    cases: Type.Object({ ...CasesValues.properties, ...subchartGlobal }, closed),
    analysis: Type.Object(
      { ...AnalysisValues.properties, enabled: Type.Boolean(), ...subchartGlobal },
      closed,
    ),
    global: GlobalValues,
    /**
     * Where the tenant's pods run (system chart `tenants.scheduling`, SVC_TENANT_SCHEDULING):
     * `nodeSelector` and `tolerations` for every pod, `workloads.<Deployment or StatefulSet
     * name>` replacing both for that one (contracts/scheduling.ts TENANT_WORKLOADS).
     */
    scheduling: TenantScheduling,
    networkPolicies: Type.Object(
      {
        enabled: Type.Boolean(),
        installNamespace: DnsLabel,
        allowedLlmHosts: Type.Array(DnsName, { maxItems: 20 }),
      },
      closed,
    ),
    resourceQuota: Type.Object(
      {
        requests: Type.Object({ cpu: Cpu, memory: Bytes }, closed),
        limits: Type.Object({ cpu: Cpu, memory: Bytes }, closed),
        persistentVolumeClaims: Type.Integer({ minimum: 0, maximum: 1000 }),
        pods: Type.Integer({ minimum: 1, maximum: 1000 }),
      },
      closed,
    ),
    monitorIngress: Type.Object(
      {
        mode: Type.Union([Type.Literal('loadbalancer'), Type.Literal('edge-proxy')]),
        hostname: Type.Union([Type.Literal(''), DnsName]),
        edgePorts: Type.Object(
          {
            events: Type.Union([Port, Type.Literal(0)]),
            enrollment: Type.Union([Port, Type.Literal(0)]),
          },
          closed,
        ),
        tls: Type.Object(
          {
            issuerRef: Type.String({ maxLength: 253 }),
            secretName: Type.String({ maxLength: 253 }),
          },
          closed,
        ),
      },
      closed,
    ),
    adapter: Type.Object(
      {
        image: Type.Object(
          {
            repository: Type.String({ minLength: 1, maxLength: 255 }),
            tag: Type.String({ pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$' }),
            digest: Type.String({ pattern: '^(sha256:[0-9a-f]{64})?$' }),
          },
          closed,
        ),
        resources: ResourceSpec,
        apiUrl: Type.String({ pattern: '^https?://[^\\s]+$', maxLength: 2048 }),
        bootstrapSecretName: DnsName,
        tokenSecretRef: Type.Object(
          { name: DnsName, key: Type.String({ pattern: '^[A-Za-z0-9._-]{1,253}$' }) },
          closed,
        ),
      },
      closed,
    ),
    namespaceLabels: Labels,
  },
  closed,
);
export type TenantValues = Static<typeof TenantValues>;
