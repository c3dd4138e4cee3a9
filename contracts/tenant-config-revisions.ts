import Type, { type Static } from 'typebox';
import { Uuid } from './route.ts';
import { Integration, LlmSettings, TenantConfig, TenantSlug } from './tenant-config.ts';
import { Timestamp } from './timestamp.ts';

/**
 * Configuration revisions (spec §6.2, docs/operations.md "Configuration revisions"): what `GET|PUT
 * /api/mssp/tenants/{id}/config` and `…/config/revisions` speak. Secret values never leave svc: a
 * stored configuration says whether each secret is set (`llm.has_api_key`,
 * `integrations.items[].has_credential`).
 */

const { api_key: _apiKey, ...llmSettings } = LlmSettings.properties;
const { credential: _credential, ...integrationItem } = Integration.properties;
const integrations = TenantConfig.properties.integrations;

/** A configuration as svc keeps it: TenantConfig with a flag in place of each secret value. */
export const StoredTenantConfig = Type.Object(
  {
    ...TenantConfig.properties,
    llm: Type.Optional(
      Type.Object({ ...llmSettings, has_api_key: Type.Boolean() }, { additionalProperties: false }),
    ),
    integrations: Type.Optional(
      Type.Object(
        {
          external_analyzer_url: integrations.properties.external_analyzer_url,
          items: Type.Optional(
            Type.Array(
              Type.Object(
                { ...integrationItem, has_credential: Type.Boolean() },
                { additionalProperties: false },
              ),
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type StoredTenantConfig = Static<typeof StoredTenantConfig>;

/**
 * The body of `PUT …/config`: the whole configuration in the TenantConfig shape. `slug`,
 * `monitor_ingress.mode` and `branding` cannot change here (slug and mode are fixed at creation,
 * branding has its own route); they may be sent back unchanged, so a GET → edit → PUT round trip
 * works. A secret left out keeps its value (`llm.api_key` while `llm` stays; an integration
 * credential while an item of the same kind and name stays). `expected_revision`: the applied
 * revision the change is based on (optimistic concurrency).
 */
export const TenantConfigUpdate = Type.Object(
  {
    ...TenantConfig.properties,
    slug: Type.Optional(TenantSlug),
    expected_revision: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647 })),
  },
  { additionalProperties: false },
);
export type TenantConfigUpdate = Static<typeof TenantConfigUpdate>;

/**
 * Where a revision stands: `pending` (being rolled out), `applied`, `rolled_back` (the rollout
 * failed and the release went back to the revision before), `failed` (refused before the release
 * changed, e.g. the values did not render).
 */
export const RevisionOutcome = Type.Union([
  Type.Literal('pending'),
  Type.Literal('applied'),
  Type.Literal('failed'),
  Type.Literal('rolled_back'),
]);

export const ConfigRevision = Type.Object(
  {
    revision: Type.Integer({ minimum: 1 }),
    outcome: RevisionOutcome,
    /** Why the rollout failed; null unless `failed` or `rolled_back`. */
    error: Type.Union([Type.String(), Type.Null()]),
    /** `user:<id>` for a change through the API. */
    actor: Type.String(),
    requested_at: Timestamp,
    /** When the rollout ended; null while pending and for revision 1 (provisioning applied it). */
    completed_at: Type.Union([Timestamp, Type.Null()]),
    config: StoredTenantConfig,
  },
  { additionalProperties: false },
);

/** The applied configuration, its revision number, and the revision being rolled out if any. */
export const TenantConfigView = Type.Object(
  {
    tenant_id: Uuid,
    revision: Type.Integer({ minimum: 1 }),
    config: StoredTenantConfig,
    pending: Type.Union([ConfigRevision, Type.Null()]),
  },
  { additionalProperties: false },
);
