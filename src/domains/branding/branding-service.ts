// A tenant's branding (spec §4.3): its own row in branding_configs, or the install defaults
// when it has none.
import { createHash } from 'node:crypto';
import type { AppDatabase } from '../../db/pools.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { imageProblems } from './branding-images.ts';
import {
  findBrandedTenant,
  lockBranding,
  readBranding,
  tenantExists,
  upsertBranding,
} from './branding-repository.ts';
import {
  type BrandingActor,
  type BrandingBody,
  type BrandingChange,
  type BrandingRow,
  InvalidBrandingError,
  type PublicBrandingBody,
  UnknownTenantError,
} from './branding-types.ts';

/** What a tenant without a branding row sees: the product name and neutral greys. */
export const DEFAULT_BRANDING: BrandingBody = {
  app_name: 'svc',
  logo_url: null,
  primary_color: '#374151',
  secondary_color: '#9ca3af',
  favicon: '',
  is_default: true,
  updated_at: null,
};

/** The install's look: the MSSP console, and every host that names no live tenant. */
export const INSTALL_BRANDING: PublicBrandingBody = publicPart(DEFAULT_BRANDING);

function publicPart(b: BrandingBody): PublicBrandingBody {
  return {
    app_name: b.app_name,
    logo_url: b.logo_url,
    primary_color: b.primary_color,
    secondary_color: b.secondary_color,
    favicon: b.favicon,
  };
}

const bodyOf = (row: BrandingRow | undefined): BrandingBody =>
  row ? { ...row, is_default: false } : DEFAULT_BRANDING;

async function requireTenant(tx: TenantTx, tenantId: string): Promise<void> {
  if (!(await tenantExists(tx, tenantId))) throw new UnknownTenantError(tenantId);
}

export interface BrandingServiceDeps {
  db: AppDatabase;
  /**
   * The configuration revision a branding edit makes, in its transaction: the tenant package
   * values carry the branding (tenant-config-service.ts brandingChanged).
   */
  revise?: (tx: TenantTx, tenantId: string, actor: BrandingActor) => Promise<void>;
}

export function createBrandingService(deps: BrandingServiceDeps) {
  const read = async (tenantId: string): Promise<BrandingBody> =>
    bodyOf(await deps.db.withTenant(tenantId, readBranding));
  return {
    read,
    /** The MSSP's read of a tenant's branding: a tenant that does not exist is an error. */
    async readForMssp(tenantId: string): Promise<BrandingBody> {
      return deps.db.withTenant(tenantId, async (tx) => {
        await requireTenant(tx, tenantId);
        return bodyOf(await readBranding(tx));
      });
    },
    /**
     * Replaces the tenant's branding whole, audited as `settings.update` with the branding it
     * replaced, and makes the configuration revision that carries it into the package values,
     * in one transaction. A refused change (InvalidBrandingError) writes nothing.
     */
    async update(
      tenantId: string,
      change: BrandingChange,
      actor: BrandingActor,
    ): Promise<BrandingBody> {
      const problems = [
        ...imageProblems('/logo_url', change.logo_url),
        ...imageProblems('/favicon', change.favicon),
      ];
      if (problems.length > 0) throw new InvalidBrandingError(problems);
      return deps.db.withTenant(tenantId, async (tx) => {
        await requireTenant(tx, tenantId);
        const before = await lockBranding(tx);
        const stored = await upsertBranding(tx, {
          tenant_id: tenantId,
          app_name: change.app_name,
          logo_url: change.logo_url ?? null,
          primary_color: change.primary_color,
          secondary_color: change.secondary_color,
          favicon: change.favicon ?? '',
        });
        await writeAudit(tx, {
          tenantId,
          actorPrincipal: 'User',
          actorId: actor.userId,
          action: 'settings.update',
          resourceType: 'branding_config',
          resourceId: tenantId,
          before: before ? auditSnapshot(before) : null,
          after: auditSnapshot(stored),
          actingAs: actor.actingAs,
        });
        await deps.revise?.(tx, tenantId, actor);
        return bodyOf(stored);
      });
    },
    /**
     * The sign-in page's branding for a customer host's slug (undefined: not a customer
     * host). An unknown or soft-deleted slug gets the install branding, exactly as a tenant
     * without branding does, so the answer tells an outsider nothing about which slugs exist.
     */
    async readPublic(slug: string | undefined): Promise<PublicBrandingBody> {
      if (slug === undefined) return INSTALL_BRANDING;
      const tenantId = await deps.db.withoutTenant((tx) => findBrandedTenant(tx, slug));
      return tenantId === undefined ? INSTALL_BRANDING : publicPart(await read(tenantId));
    },
  };
}

export type BrandingService = ReturnType<typeof createBrandingService>;

/** The audit row's before/after: the stored fields, images as digests (next function). */
function auditSnapshot(row: BrandingRow) {
  return {
    app_name: row.app_name,
    logo_url: row.logo_url === null ? null : imageDigest(row.logo_url),
    primary_color: row.primary_color,
    secondary_color: row.secondary_color,
    favicon: imageDigest(row.favicon),
  };
}

/**
 * A data URL as `data:<type>;base64 sha256=<hex> bytes=<n>`: which image it was, provably,
 * without copying up to 200 KiB of base64 into every audit row and export. URLs stay as they are.
 */
function imageDigest(url: string): string {
  if (!url.startsWith('data:')) return url;
  const comma = url.indexOf(',');
  const bytes = Buffer.from(url.slice(comma + 1), 'base64');
  const sha = createHash('sha256').update(bytes).digest('hex');
  return `${url.slice(0, comma)} sha256=${sha} bytes=${bytes.length}`;
}
