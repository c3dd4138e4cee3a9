import Type, { type Static } from 'typebox';

/**
 * Where pods run: Kubernetes' own `nodeSelector` and `tolerations`, shared by the system
 * chart's `scheduling` (svc's pods), its `tenants.scheduling` (SVC_TENANT_SCHEDULING) and the
 * tenant chart's `scheduling` (every tenant pod). Patterns avoid look-arounds: Helm checks them
 * with Go's RE2 engine.
 */
const closed = { additionalProperties: false } as const;

const DnsLabelPattern = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?';
const HostnamePattern = `${DnsLabelPattern}(\\.${DnsLabelPattern})*`;
/** A Kubernetes label key (optional DNS prefix, then a name of at most 63 characters). */
export const LabelKeyPattern = `^(${HostnamePattern}/)?[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$`;
export const LabelValue = Type.String({
  pattern: '^([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$',
});

/** A pod toleration (core/v1 Toleration): `Exists` takes no value; an empty key only `Exists`. */
export const Toleration = Type.Object(
  {
    key: Type.Optional(Type.String({ pattern: `(${LabelKeyPattern})|^$` })),
    operator: Type.Optional(Type.Union([Type.Literal('Equal'), Type.Literal('Exists')])),
    value: Type.Optional(LabelValue),
    effect: Type.Optional(
      Type.Union([
        Type.Literal('NoSchedule'),
        Type.Literal('PreferNoSchedule'),
        Type.Literal('NoExecute'),
      ]),
    ),
    tolerationSeconds: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  closed,
);
export type Toleration = Static<typeof Toleration>;

/** `options` carries a chart's `default` where the chart's values.yaml supplies one. */
export const nodeSelector = (options: object = {}) =>
  Type.Record(Type.String({ pattern: LabelKeyPattern }), LabelValue, { ...closed, ...options });
export const tolerations = (options: object = {}) =>
  Type.Array(Toleration, { maxItems: 20, ...options });

/**
 * The tenant package's Deployments and StatefulSets, by name: the keys of
 * `scheduling.workloads`. A name not here is a configuration error, never silently ignored.
 */
export const TENANT_WORKLOADS = [
  'svc-adapter',
  'monitor-manager',
  'monitor-indexer',
  'monitor-dashboard',
  'cases',
  'cases-store',
  'analysis',
  'analysis-search',
] as const;
export type TenantWorkload = (typeof TENANT_WORKLOADS)[number];

/**
 * One workload's own placement, replacing both defaults for it. In what an operator writes
 * (system chart, SVC_TENANT_SCHEDULING) either key may be left out and means none; svc renders
 * both into the tenant package.
 */
const placement = (required: boolean) => {
  const maybe = <T extends Parameters<typeof Type.Optional>[0]>(schema: T) =>
    required ? schema : Type.Optional(schema);
  return Type.Object(
    { nodeSelector: maybe(nodeSelector()), tolerations: maybe(tolerations()) },
    closed,
  );
};

/** One pattern instead of a property per name keeps the chart schemas small (one copy each). */
const workloads = (entry: ReturnType<typeof placement>, options: object) =>
  Type.Record(Type.String({ pattern: `^(${TENANT_WORKLOADS.join('|')})$` }), entry, {
    ...closed,
    ...options,
  });

/** The tenant package's `scheduling` and `global.scheduling`, exactly as svc renders them. */
export const TenantScheduling = Type.Object(
  {
    nodeSelector: nodeSelector(),
    tolerations: tolerations(),
    workloads: workloads(placement(true), {}),
  },
  closed,
);
export type TenantScheduling = Static<typeof TenantScheduling>;

/**
 * What the operator writes: the system chart's `tenants.scheduling` (with its values.yaml
 * defaults) and SVC_TENANT_SCHEDULING (every key optional: missing means none).
 */
export const tenantSchedulingInput = (defaults: boolean) => {
  const d = (value: unknown) => (defaults ? { default: value } : {});
  const maybe = <T extends Parameters<typeof Type.Optional>[0]>(schema: T) =>
    defaults ? schema : Type.Optional(schema);
  return Type.Object(
    {
      nodeSelector: maybe(nodeSelector(d({}))),
      tolerations: maybe(tolerations(d([]))),
      workloads: maybe(workloads(placement(false), d({}))),
    },
    closed,
  );
};
export const TenantSchedulingInput = tenantSchedulingInput(false);
export type TenantSchedulingInput = Static<typeof TenantSchedulingInput>;

/** No placement at all: Kubernetes' scheduler alone decides. */
export const NO_TENANT_SCHEDULING: TenantScheduling = {
  nodeSelector: {},
  tolerations: [],
  workloads: {},
};

/** What svc renders from an operator's input: every key present, workload entries complete. */
export function normalizeTenantScheduling(input: TenantSchedulingInput): TenantScheduling {
  const out: TenantScheduling = {
    nodeSelector: { ...(input.nodeSelector ?? {}) },
    tolerations: [...(input.tolerations ?? [])],
    workloads: {},
  };
  for (const name of TENANT_WORKLOADS) {
    const entry = input.workloads?.[name];
    if (entry) {
      out.workloads[name] = {
        nodeSelector: { ...(entry.nodeSelector ?? {}) },
        tolerations: [...(entry.tolerations ?? [])],
      };
    }
  }
  return out;
}
