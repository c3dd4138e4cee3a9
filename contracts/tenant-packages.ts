import Type from 'typebox';

/**
 * Tenant packages from an OCI registry, pinned by digest (spec §9.1): the system
 * chart's `tenants.packages` and the orchestrator's SVC_TENANT_PACKAGES. One reference names
 * the `svc-tenant` repository and one manifest digest, never a tag (a tag can be moved).
 * RE2-compatible (Helm checks the generated values schema with Go's engine).
 */
export const TENANT_PACKAGE_PATTERN =
  '^oci://((([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)\\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*/svc-tenant)@(sha256:[0-9a-f]{64})$';

/** At most this many packages (versions) at once. */
export const MAX_TENANT_PACKAGES = 32;

/**
 * `tenants.packages`: empty installs the tenant package bundled in svc's image; otherwise only
 * these, each pulled anonymously at start (docs/orchestrator.md "Tenant packages from a
 * registry").
 */
export const TenantPackages = Type.Array(
  Type.String({ maxLength: 1024, pattern: TENANT_PACKAGE_PATTERN }),
  { maxItems: MAX_TENANT_PACKAGES, uniqueItems: true, default: [] },
);
