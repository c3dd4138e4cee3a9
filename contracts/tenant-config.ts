import Type, { type Static } from 'typebox';
import { BYTES_PATTERN, CPU_PATTERN } from './tenant-values.ts';

/**
 * What `POST /api/mssp/tenants` accepts (spec §2.9 tenant values, §9.4 step 1). The
 * orchestrator validates the stored configuration against this same schema before rendering
 * the tenant package's values. Secret values are accepted only to be written into cluster
 * Secrets; the database keeps references.
 */
const Hex = Type.String({ pattern: '^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$' });
const HttpsUrl = Type.String({ pattern: '^https://[^\\s]{1,2040}$' });
const Hostname = Type.String({ pattern: '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$' });
/**
 * Per resource kind (src/domains/tenants/quantity.ts has the same grammar and the exact parser): CPU
 * takes only `m`, memory never does.
 */
const CpuQuantity = Type.String({ pattern: CPU_PATTERN, maxLength: 32 });
const MemoryQuantity = Type.String({ pattern: BYTES_PATTERN, maxLength: 32 });
/** Secret material is bounded so a Secret stays far below the 1 MiB object limit. */
const SecretValue = Type.String({ minLength: 1, maxLength: 8192 });

export const TenantSlug = Type.String({
  pattern: '^[a-z0-9]([a-z0-9-]{0,54}[a-z0-9])?$',
  description: 'DNS-1123 label; the namespace is tenant-<slug>',
});

export const Branding = Type.Object(
  {
    app_name: Type.String({ minLength: 1, maxLength: 100 }),
    logo_url: Type.Optional(
      Type.Union([
        HttpsUrl,
        Type.String({
          pattern: '^data:image/(png|svg\\+xml|jpeg);base64,[A-Za-z0-9+/=]{1,200000}$',
        }),
      ]),
    ),
    primary_color: Hex,
    secondary_color: Hex,
    favicon: Type.Optional(Type.String({ maxLength: 200000 })),
  },
  { additionalProperties: false },
);

export const LlmSettings = Type.Object(
  {
    provider: Type.String({ pattern: '^[a-z][a-z0-9_-]{0,31}$' }),
    base_url: HttpsUrl,
    model: Type.String({ minLength: 1, maxLength: 200 }),
    /** Written to the Secret tenant-<id>-llm (key api_key) in the install namespace. */
    api_key: Type.Optional(SecretValue),
  },
  { additionalProperties: false },
);

export const Integration = Type.Object(
  {
    kind: Type.String({ pattern: '^[a-z][a-z0-9_-]{0,63}$' }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    endpoint_url: Type.Optional(Type.String({ pattern: '^https?://[^\\s]{1,2040}$' })),
    settings: Type.Optional(
      Type.Record(
        Type.String({ maxLength: 100 }),
        Type.Union([Type.String({ maxLength: 2000 }), Type.Number(), Type.Boolean()]),
      ),
    ),
    thresholds: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Number())),
    /** Written to the Secret tenant-<id>-integrations; never stored in the database. */
    credential: Type.Optional(SecretValue),
  },
  { additionalProperties: false },
);

const Resources = Type.Object(
  {
    requests: Type.Optional(
      Type.Object(
        { cpu: Type.Optional(CpuQuantity), memory: Type.Optional(MemoryQuantity) },
        { additionalProperties: false },
      ),
    ),
    limits: Type.Optional(
      Type.Object(
        { cpu: Type.Optional(CpuQuantity), memory: Type.Optional(MemoryQuantity) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const TenantConfig = Type.Object(
  {
    slug: TenantSlug,
    display_name: Type.String({ minLength: 1, maxLength: 200 }),
    branding: Type.Optional(Branding),
    llm: Type.Optional(LlmSettings),
    integrations: Type.Optional(
      Type.Object(
        {
          external_analyzer_url: Type.Optional(
            Type.String({ pattern: '^(https?://[^\\s]{1,2040})?$' }),
          ),
          items: Type.Optional(Type.Array(Integration, { maxItems: 50 })),
        },
        { additionalProperties: false },
      ),
    ),
    monitor_ingress: Type.Optional(
      Type.Object(
        {
          mode: Type.Union([Type.Literal('loadbalancer'), Type.Literal('edge-proxy')]),
          hostname: Type.Optional(Hostname),
        },
        { additionalProperties: false },
      ),
    ),
    /** Overrides within bounds; absent keys take the tenant package defaults (spec §2.9). */
    components: Type.Optional(
      Type.Object(
        {
          monitor_dashboard_enabled: Type.Optional(Type.Boolean()),
          monitor_indexer: Type.Optional(Resources),
          cases: Type.Optional(Resources),
          analysis: Type.Optional(Resources),
          analyzers: Type.Optional(
            Type.Array(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,100}$' }), { maxItems: 100 }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type TenantConfig = Static<typeof TenantConfig>;
