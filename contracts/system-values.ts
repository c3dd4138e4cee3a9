import Type, { type Static } from 'typebox';
import { DURATION_PATTERN } from './duration.ts';
import { LlmPrices, OUTBOUND_HOST_PATTERN } from './outbound.ts';
import { resources } from './resources.ts';
import {
  LabelKeyPattern,
  LabelValue,
  nodeSelector,
  tenantSchedulingInput,
  tolerations,
} from './scheduling.ts';
import {
  closed,
  Digest,
  DnsLabelPattern,
  EdgeProxyValues,
  HostnamePattern,
  imageValues,
  PgBouncerValues,
} from './system-components.ts';
import { TenantPackages } from './tenant-packages.ts';
import { CANONICAL_UUID } from './uuid.ts';

/**
 * The system package's values (spec §2.9 "System package values"): hand-written by the MSSP
 * cluster admin for `helm install svc-system`. The chart's `values.schema.json` is generated
 * from this schema (`npm run charts:schema`; a test fails on drift), so Helm refuses a bad
 * value before anything reaches the cluster.
 *
 * Helm validates values.yaml merged with the operator's file, so every key with a default is
 * required here (values.yaml always supplies it); the keys without one (install ids and names,
 * image.registry, ingress hostnames, database.external.host/existingSecret) are what an
 * operator must write. Keys beyond §2.9, each needed to run the package and documented in
 * docs/charts-system.md: `install.namespace`, `serviceAccount.name`, `api.replicas`, `worker`,
 * `resources.worker`, `database.image`, `database.external.ssl`, `networkPolicies`, `edgeProxy`, `pgbouncer`, `outbound`,
 * `defaults.llm.prices`, `tenants`, `scheduling`.
 *
 * Patterns avoid look-arounds: Helm checks them with Go's RE2 engine.
 */
const Uuid = Type.String({ pattern: `^${CANONICAL_UUID}$` });
const dnsLabel = (options: object = {}) =>
  Type.String({ ...options, pattern: `^${DnsLabelPattern}$` });
const Hostname = Type.String({ maxLength: 253, pattern: `^${HostnamePattern}$` });
/** One `*` label in front of a hostname with at least two labels: `*.customers.example.com`. */
const WildcardHostname = Type.String({
  maxLength: 253,
  pattern: `^\\*\\.${DnsLabelPattern}(\\.${DnsLabelPattern})+$`,
});
/** A Kubernetes object name (DNS subdomain), e.g. a Secret or ServiceAccount. */
const objectName = (options: object = {}) =>
  Type.String({ ...options, maxLength: 253, pattern: `^${HostnamePattern}$` });
const ObjectName = objectName();
const headerName = (fallback: string) =>
  Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$", default: fallback });
const Octet = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const Cidr = Type.String({
  pattern: `^((${Octet}\\.){3}${Octet}/(3[0-2]|[12]?[0-9])|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))$`,
});
const Port = Type.Integer({ minimum: 1, maximum: 65535 });

export const SystemValues = Type.Object(
  {
    install: Type.Object(
      {
        msspId: Uuid,
        msspName: Type.String({ minLength: 1, maxLength: 200 }),
        installId: Uuid,
        installLabel: Type.String({ minLength: 1, maxLength: 200 }),
        /** The install namespace (spec §1 item 1); the release must be installed into it. */
        namespace: dnsLabel({ default: 'svc-system' }),
      },
      closed,
    ),
    image: Type.Object(
      {
        registry: Type.String({
          pattern: '^[a-z0-9]([a-z0-9.:-]*[a-z0-9])?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*$',
        }),
        /** Empty means the chart's appVersion. */
        tag: Type.String({ pattern: '^([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$', default: '' }),
        /** Pins the image: `registry/svc:tag@sha256:...` (the runtime pulls the digest). */
        digest: Digest,
        pullPolicy: Type.Union(
          [Type.Literal('Always'), Type.Literal('IfNotPresent'), Type.Literal('Never')],
          { default: 'IfNotPresent' },
        ),
      },
      closed,
    ),
    serviceAccount: Type.Object({ name: objectName({ default: 'svc' }) }, closed),
    api: Type.Object({ replicas: Type.Integer({ minimum: 1, maximum: 20, default: 1 }) }, closed),
    /** `svc worker`, the job runner (docs/jobs.md); `concurrency` is jobs at once per pod. */
    worker: Type.Object(
      {
        enabled: Type.Boolean({ default: true }),
        replicas: Type.Integer({ minimum: 1, maximum: 20, default: 1 }),
        concurrency: Type.Integer({ minimum: 1, maximum: 64, default: 4 }),
      },
      closed,
    ),
    database: Type.Object(
      {
        enabled: Type.Boolean({ default: true }),
        image: imageValues('docker.io/library/postgres', '18'),
        /**
         * The in-chart server's max_connections (docs/operations.md "Sizing"): the image's 100
         * is below what 3 API, 2 orchestrator and 2 worker replicas open directly (about 122).
         */
        maxConnections: Type.Integer({ minimum: 50, maximum: 5000, default: 200 }),
        storage: Type.Object(
          {
            size: Type.String({
              pattern: '^[0-9]+(\\.[0-9]+)?(k|M|G|T|Ki|Mi|Gi|Ti)?$',
              default: '20Gi',
            }),
            /** Empty means the cluster's default StorageClass. */
            storageClassName: Type.Union([Type.Literal(''), ObjectName], { default: '' }),
          },
          closed,
        ),
        external: Type.Object(
          {
            host: Type.Optional(Hostname),
            port: Type.Integer({ minimum: 1, maximum: 65535, default: 5432 }),
            database: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_$-]{0,62}$', default: 'svc' }),
            existingSecret: Type.Optional(ObjectName),
            ssl: Type.Union([Type.Literal('disable'), Type.Literal('require')], {
              default: 'disable',
            }),
          },
          closed,
        ),
      },
      {
        ...closed,
        // §2.9: "when false, database.external.* is required".
        if: { properties: { enabled: { const: false } } },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, not a thenable.
        then: { properties: { external: { required: ['host', 'existingSecret'] } } },
      },
    ),
    ingress: Type.Object(
      {
        enabled: Type.Boolean({ default: true }),
        /** Empty means the cluster's default IngressClass. */
        className: Type.Union([Type.Literal(''), ObjectName], { default: '' }),
        tls: Type.Object(
          {
            secretName: objectName({ default: 'svc-tls' }),
            /** A cert-manager ClusterIssuer; empty means the Secret is provided by hand. */
            issuerRef: Type.Union([Type.Literal(''), ObjectName], { default: '' }),
          },
          closed,
        ),
        hostnames: Type.Object({ mssp: Hostname, customer: WildcardHostname }, closed),
      },
      closed,
    ),
    auth: Type.Object(
      {
        mode: Type.Union([Type.Literal('internal'), Type.Literal('proxy')], {
          default: 'internal',
        }),
      },
      closed,
    ),
    oidc: Type.Object(
      {
        trustedHeaderUser: headerName('X-Forwarded-User'),
        trustedHeaderEmail: headerName('X-Forwarded-Email'),
        trustedHeaderGroups: headerName('X-Forwarded-Groups'),
        trustedProxyCIDRs: Type.Array(Cidr, { maxItems: 100, default: [] }),
      },
      closed,
    ),
    defaults: Type.Object(
      {
        llm: Type.Object(
          {
            provider: Type.String({ pattern: '^([a-z][a-z0-9_-]{0,31})?$', default: '' }),
            baseUrl: Type.String({ maxLength: 2048, pattern: '^(https://\\S+)?$', default: '' }),
            model: Type.String({ maxLength: 200, default: '' }),
            /** USD per million tokens by model (`SVC_LLM_PRICES`): what cost budgets count. */
            prices: LlmPrices,
          },
          closed,
        ),
      },
      closed,
    ),
    /**
     * svc's own guard on its outbound calls (LLM providers, TheHive, Cortex; docs/orchestrator.md
     * "Outbound addresses"): internal addresses it may call after all, and the CA certificates
     * (PEM) it trusts for them besides the system roots. The NetworkPolicy side is
     * `networkPolicies.outbound`.
     */
    outbound: Type.Object(
      {
        allowHosts: Type.Array(
          Type.String({ maxLength: 253, pattern: `^${OUTBOUND_HOST_PATTERN}$` }),
          { maxItems: 100, default: [] },
        ),
        allowCIDRs: Type.Array(Cidr, { maxItems: 100, default: [] }),
        caBundle: Type.String({
          maxLength: 262_144,
          pattern:
            '^(\\s*-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\\s]+-----END CERTIFICATE-----\\s*)*$',
          default: '',
        }),
      },
      closed,
    ),
    /** How svc provisions its tenants. */
    tenants: Type.Object(
      {
        /** StorageClass of the tenants' volumes (`SVC_TENANT_STORAGE_CLASS`); empty: the default. */
        storageClassName: Type.Union([Type.Literal(''), ObjectName], { default: '' }),
        /** From `:decommission` to uninstall (`SVC_DECOMMISSION_GRACE`; spec §3.1 leaves it open). */
        decommissionGrace: Type.String({ pattern: DURATION_PATTERN, default: '24h' }),
        /** From uninstall to the row's hard delete (`SVC_TENANT_RETENTION`). */
        retention: Type.String({ pattern: DURATION_PATTERN, default: '30d' }),
        /**
         * Where tenant pods run (`SVC_TENANT_SCHEDULING`, the tenant chart's `scheduling`): a
         * nodeSelector and tolerations for every tenant pod, and per workload (the tenant
         * package's Deployment and StatefulSet names) an entry that replaces both for it.
         */
        scheduling: tenantSchedulingInput(true),
        /** `oci://…/svc-tenant@sha256:…` tenant packages (`SVC_TENANT_PACKAGES`); empty: bundled. */
        packages: TenantPackages,
      },
      closed,
    ),
    /**
     * `svc db backup --dir --keep` on a schedule into a PVC (docs/charts-system.md "Backup and
     * restore"); only with the in-chart database. Off by default: it claims a second volume, and
     * where backups go (a StorageClass that snapshots or replicates) is the operator's decision.
     */
    backup: Type.Object(
      {
        enabled: Type.Boolean({ default: false }),
        /** Standard five-field cron or a macro, in UTC. */
        schedule: Type.String({
          pattern:
            '^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9A-Za-z*/,?-]+( [0-9A-Za-z*/,?-]+){4})$',
          default: '17 3 * * *',
        }),
        /** How many backups the volume keeps, newest first. */
        retention: Type.Integer({ minimum: 1, maximum: 1000, default: 7 }),
        storage: Type.Object(
          {
            size: Type.String({
              pattern: '^[0-9]+(\\.[0-9]+)?(k|M|G|T|Ki|Mi|Gi|Ti)?$',
              default: '20Gi',
            }),
            /** Empty means the cluster's default StorageClass. */
            storageClassName: Type.Union([Type.Literal(''), ObjectName], { default: '' }),
          },
          closed,
        ),
        resources: resources({ cpu: '100m', memory: '256Mi' }, { cpu: '1', memory: '1Gi' }),
      },
      closed,
    ),
    resources: Type.Object(
      {
        api: resources({ cpu: '500m', memory: '512Mi' }, { cpu: '2', memory: '2Gi' }),
        orchestrator: resources({ cpu: '500m', memory: '1Gi' }, { cpu: '2', memory: '4Gi' }),
        worker: resources({ cpu: '250m', memory: '512Mi' }, { cpu: '1', memory: '1Gi' }),
        database: resources({ cpu: '250m', memory: '512Mi' }, { cpu: '2', memory: '2Gi' }),
      },
      closed,
    ),
    admission: Type.Object(
      {
        engine: Type.Union([Type.Literal('vap'), Type.Literal('none')], { default: 'vap' }),
      },
      closed,
    ),
    networkPolicies: Type.Object(
      {
        enabled: Type.Boolean({ default: true }),
        /** Namespace of the ingress controller, the only outside source allowed to the API. */
        ingressNamespace: dnsLabel({ default: 'ingress-nginx' }),
        /**
         * Egress of svc's pods to the Kubernetes API (docs/charts-system.md): the API server's
         * endpoint addresses (a policy sees them, not the `kubernetes` Service's ClusterIP) and
         * ports; no CIDRs means any address on those ports.
         */
        kubeApiServer: Type.Object(
          {
            cidrs: Type.Array(Cidr, { maxItems: 100, default: [] }),
            ports: Type.Array(Port, { minItems: 1, maxItems: 10, default: [443, 6443] }),
          },
          closed,
        ),
        /**
         * Outbound TCP of svc's pods beyond the cluster: LLM providers and integrations. No CIDRs
         * means any address; no ports means none at all.
         */
        outbound: Type.Object(
          {
            cidrs: Type.Array(Cidr, { maxItems: 100, default: [] }),
            ports: Type.Array(Port, { maxItems: 10, default: [443] }),
          },
          closed,
        ),
      },
      closed,
    ),
    /** The edge proxy (spec §2.9 monitorIngress.mode=edge-proxy; docs/operations.md). */
    edgeProxy: EdgeProxyValues,
    /** PgBouncer in front of the database (docs/operations.md "Connection pooling (PgBouncer)"). */
    pgbouncer: PgBouncerValues,
    /**
     * Where svc's pods run (api, orchestrator, worker, database, edge proxy, pooler): Kubernetes'
     * own `nodeSelector` and `tolerations`, applied to every pod of the release (dedicated
     * nodes for the control plane, a tainted pool, the test cluster's real node).
     */
    scheduling: Type.Object(
      {
        nodeSelector: nodeSelector({ default: {} }),
        tolerations: tolerations({ default: [] }),
      },
      closed,
    ),
    licensing: Type.Object({ enabled: Type.Boolean({ default: false }) }, closed),
    telemetry: Type.Object({ enabled: Type.Boolean({ default: false }) }, closed),
    /** Prometheus metrics (docs/operations.md): `GET /metrics` on its own port of every svc pod. */
    metrics: Type.Object(
      {
        enabled: Type.Boolean({ default: true }),
        /** SVC_METRICS_PORT; not the API's 8080. */
        port: Type.Integer({ minimum: 1024, maximum: 65535, not: { const: 8080 }, default: 9464 }),
        /**
         * matchLabels of the namespaces whose pods may scrape the port (with
         * networkPolicies.enabled); `{}` admits every namespace.
         */
        scrapeNamespaceSelector: Type.Record(
          Type.String({ pattern: LabelKeyPattern }),
          LabelValue,
          {
            ...closed,
            default: { 'kubernetes.io/metadata.name': 'monitoring' },
          },
        ),
        /** A prometheus-operator ServiceMonitor and the headless Service it selects. */
        serviceMonitor: Type.Object(
          {
            enabled: Type.Boolean({ default: false }),
            interval: Type.String({ pattern: '^[0-9]{1,4}(ms|s|m)$', default: '30s' }),
            /** Labels a Prometheus selects ServiceMonitors by (e.g. `release: prometheus`). */
            labels: Type.Record(Type.String({ pattern: LabelKeyPattern }), LabelValue, {
              ...closed,
              default: {},
            }),
          },
          closed,
        ),
      },
      closed,
    ),
  },
  closed,
);

export type SystemValues = Static<typeof SystemValues>;
