import Type from 'typebox';
import { resources } from './resources.ts';

// Parts of the system package's values (contracts/system-values.ts) kept apart to keep that file
// readable: the shared patterns and the optional components (edge proxy, PgBouncer).

/** Closed objects: a misspelt key is an error, not a silently ignored setting. */
export const closed = { additionalProperties: false } as const;
export const DnsLabelPattern = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?';
export const HostnamePattern = `${DnsLabelPattern}(\\.${DnsLabelPattern})*`;
/** An image digest (spec §9.3: pin by digest); empty means the tag. */
export const Digest = Type.String({ pattern: '^(sha256:[0-9a-f]{64})?$', default: '' });

/** A third-party image: repository, tag and an optional digest that pins it. */
export const imageValues = (repository: string, tag: string) =>
  Type.Object(
    {
      repository: Type.String({
        pattern: '^[a-z0-9]([a-z0-9.:/_-]*[a-z0-9])?$',
        default: repository,
      }),
      tag: Type.String({ pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$', default: tag }),
      digest: Digest,
    },
    closed,
  );

/** The edge proxy (spec §2.9 monitorIngress.mode=edge-proxy; docs/operations.md). */
export const EdgeProxyValues = Type.Object(
  {
    enabled: Type.Boolean({ default: false }),
    image: imageValues('docker.io/library/haproxy', '2.6'),
    replicas: Type.Integer({ minimum: 1, maximum: 20, default: 2 }),
    /** Above the health port (8404) and leaving room for pairs below 65535. */
    portBase: Type.Integer({ minimum: 10000, maximum: 60000, default: 20000 }),
    clusterDomain: Type.String({
      maxLength: 200,
      pattern: `^${HostnamePattern}$`,
      default: 'cluster.local',
    }),
    service: Type.Object(
      {
        type: Type.Union([Type.Literal('LoadBalancer'), Type.Literal('ClusterIP')], {
          default: 'LoadBalancer',
        }),
        annotations: Type.Record(Type.String(), Type.String(), { default: {} }),
      },
      closed,
    ),
    resources: resources({ cpu: '100m', memory: '128Mi' }, { cpu: '1', memory: '512Mi' }),
  },
  closed,
);

/**
 * PgBouncer in transaction-pooling mode in front of the database for svc's transactional
 * pools (docs/operations.md "Connection pooling (PgBouncer)"). The image must have /bin/sh
 * and `pgbouncer` on PATH: the chart's start script writes the auth file from the database
 * Secret. `poolSize` is server connections per (database, role) per replica (pgbouncer's
 * default_pool_size), so the database sees at most replicas × poolSize × 2 (svc_app,
 * svc_mssp) through it.
 */
export const PgBouncerValues = Type.Object(
  {
    enabled: Type.Boolean({ default: false }),
    image: imageValues('ghcr.io/cloudnative-pg/pgbouncer', '1.24.1'),
    replicas: Type.Integer({ minimum: 1, maximum: 20, default: 2 }),
    poolSize: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
    /** pgbouncer's max_client_conn: every replica's pooled connections, with room. */
    maxClientConnections: Type.Integer({ minimum: 10, maximum: 100000, default: 2000 }),
    resources: resources({ cpu: '50m', memory: '64Mi' }, { cpu: '1', memory: '256Mi' }),
  },
  closed,
);
