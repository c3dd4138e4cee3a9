// The adapter domain owns svc's side of each tenant's data-plane adapter: its bootstrap
// credential and token exchange, the configuration view it runs from, and its heartbeats.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AppDatabase } from '../../db/pools.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import type { TokenService } from '../../tokens/index.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { activateOnHeartbeat } from '../provisioning/provisioning-service.ts';
import { lockTenant } from '../tenants/tenant-lifecycle.ts';
import { findTenant } from '../tenants/tenant-repository.ts';
import { refuseIfSuspended } from '../tenants/tenant-suspension.ts';
import {
  findAppName,
  findBootstrapCredentialHash,
  type IntegrationRow,
  isPackageReady,
  listIntegrations,
  markBootstrapUsed,
  noteHeartbeatBeforeReady,
  saveBootstrapCredential,
  upsertHeartbeat,
} from './adapter-repository.ts';
import {
  type AdapterConfigView,
  AdapterTenantGoneError,
  type AdapterToken,
  type Heartbeat,
  type HeartbeatOutcome,
  InvalidBootstrapCredentialError,
  type TenantState,
} from './adapter-types.ts';

/**
 * 256 bits of entropy: guessing is hopeless even without a rate limit, which is why the
 * unauthenticated exchange needs none and why a fast hash (not argon2) is the right store.
 */
const BOOTSTRAP_SECRET_BYTES = 32;

/** Compared against when a tenant has no credential, so both failures cost the same work. */
const NO_CREDENTIAL = Buffer.alloc(32);

/**
 * How long an activating heartbeat waits for the tenant's lock: an orchestrator pass over a
 * Ready tenant is short, a rollback (helm uninstall) may outlast it; either way the heartbeat
 * is then noted and the orchestrator completes the activation.
 */
const HEARTBEAT_LOCK_WAIT_MS = 2_000;

/** The stored form is the hex of this: SHA-256 of the secret exactly as the adapter presents it. */
function digest(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/**
 * Creates the tenant's bootstrap credential, or replaces it (re-issuing rotates: the old
 * secret stops working at commit). Returns the secret, which is stored nowhere in the database;
 * the caller writes it into the tenant's Secret and then forgets it. Tenant creation receives
 * this function injected, so the tenants domain never imports this one.
 */
export async function issueBootstrapCredential(
  tx: TenantTx,
  tenantId: string,
): Promise<{ secret: string }> {
  const secret = randomBytes(BOOTSTRAP_SECRET_BYTES).toString('base64url');
  await saveBootstrapCredential(tx, tenantId, digest(secret).toString('hex'));
  return { secret };
}

/**
 * True when `presented` is the tenant's current credential and the tenant is not deleted.
 * A tenant without a credential (unknown, deleted, never issued) takes the same path: one
 * query, one hash, one constant-time comparison, so the answer's timing does not tell a prober
 * which tenant ids exist.
 */
async function verifyBootstrapCredential(
  tx: TenantTx,
  tenantId: string,
  presented: string,
): Promise<boolean> {
  const hash = await findBootstrapCredentialHash(tx, tenantId);
  const stored = hash === undefined ? NO_CREDENTIAL : Buffer.from(hash, 'hex');
  const matches = timingSafeEqual(digest(presented), stored);
  return matches && hash !== undefined;
}

export interface AdapterServiceDeps {
  db: Pick<AppDatabase, 'withTenant'>;
  tokens: Pick<TokenService, 'mintAdapter'>;
  /** The heartbeat clock, so tests can move it. */
  now: () => Date;
}

export function createAdapterService(deps: AdapterServiceDeps) {
  return {
    /**
     * Trades a tenant's bootstrap credential for an adapter JWT. Everything happens under the
     * claimed tenant's RLS context, so the credential of tenant A can only ever be compared
     * with A's own row: presenting it with B's id compares it with B's hash and fails. The
     * token is returned only after its audit row (spec §5.8: the adapter writes audit via
     * bootstrap) and last_used_at commit with it.
     */
    async exchangeBootstrapCredential(tenantId: string, credential: string): Promise<AdapterToken> {
      const minted = await deps.db.withTenant(tenantId, async (tx) => {
        if (!(await verifyBootstrapCredential(tx, tenantId, credential))) return undefined;
        // Only to the holder of the credential: the refusal tells nobody else the tenant exists.
        refuseIfSuspended(tenantId, await stateOf(tx, tenantId));
        return mintAdapterToken(tx, deps, tenantId);
      });
      if (!minted) throw new InvalidBootstrapCredentialError();
      return minted;
    },

    /**
     * What the adapter needs to run its tenant's integrations. Secrets appear only as
     * references (namespace, name, version of the cluster Secret the adapter mounts); the
     * database never holds their values, so none can leak from here. A tenant that is gone or
     * soft-deleted gets nothing: its adapter should no longer exist.
     */
    async readConfig(tenantId: string): Promise<AdapterConfigView> {
      const config = await deps.db.withTenant(tenantId, (tx) => configView(tx, tenantId));
      if (!config) throw new AdapterTenantGoneError(tenantId);
      return config;
    },

    /**
     * Records one heartbeat. The first heartbeat that finds the tenant `provisioning` with its
     * package Ready moves it to `active` (spec §3.1, §6.2, §9.4 step 9), with its lifecycle
     * event and audit row in the same transaction.
     */
    async recordHeartbeat(beat: Heartbeat): Promise<HeartbeatOutcome> {
      const at = deps.now();
      const outcome = await deps.db.withTenant(beat.tenantId, (tx) => heartbeatIn(tx, beat, at));
      if (!outcome) throw new AdapterTenantGoneError(beat.tenantId);
      return outcome;
    },
  };
}

export type AdapterService = ReturnType<typeof createAdapterService>;

async function mintAdapterToken(
  tx: TenantTx,
  deps: Pick<AdapterServiceDeps, 'tokens'>,
  tenantId: string,
): Promise<AdapterToken> {
  const { token, claims } = await deps.tokens.mintAdapter({ tenantId });
  const expiresAt = new Date(claims.exp * 1000);
  await markBootstrapUsed(tx, tenantId);
  await writeAudit(tx, {
    tenantId,
    actorPrincipal: 'Adapter',
    actorId: tenantId,
    action: 'adapter.bootstrap',
    resourceType: 'adapter_credential',
    resourceId: tenantId,
    details: { jti: claims.jti, expires_at: expiresAt.toISOString() },
  });
  return { token, expiresAt };
}

async function configView(tx: TenantTx, tenantId: string): Promise<AdapterConfigView | undefined> {
  const tenant = await findTenant(tx, tenantId);
  if (!tenant || tenant.deleted_at !== null) return undefined;
  refuseIfSuspended(tenantId, tenant.state);
  return {
    tenant_id: tenantId,
    config_revision: tenant.config_revision,
    app_name: (await findAppName(tx, tenantId)) ?? null,
    integrations: (await listIntegrations(tx, tenantId)).map(withSecretReference),
  };
}

function withSecretReference({
  secret_namespace,
  secret_name,
  secret_version,
  ...integration
}: IntegrationRow): AdapterConfigView['integrations'][number] {
  return {
    ...integration,
    secret:
      secret_namespace !== null && secret_name !== null && secret_version !== null
        ? { namespace: secret_namespace, name: secret_name, version: secret_version }
        : null,
  };
}

async function stateOf(tx: TenantTx, tenantId: string): Promise<TenantState | undefined> {
  return (await findTenant(tx, tenantId))?.state;
}

/**
 * Undefined when the tenant row is gone (an adapter token outlives a hard-deleted tenant by up
 * to 8 days).
 *
 * The activation happens only under the tenant's lock (docs/orchestrator.md "Guarded transitions"):
 * while the orchestrator holds the tenant (readiness wait, rollback, decommission), a heartbeat is
 * recorded as liveness and answered with the state as it is, `activated: false`, never a
 * resurrection of a tenant being torn down. When that work ends in readiness, the orchestrator
 * completes the activation from the heartbeat noted here.
 */
async function heartbeatIn(
  tx: TenantTx,
  beat: Heartbeat,
  at: Date,
): Promise<HeartbeatOutcome | undefined> {
  const before = await stateOf(tx, beat.tenantId);
  if (before === undefined) return undefined;
  // Nothing recorded: a suspended tenant's adapter should not be running at all.
  refuseIfSuspended(beat.tenantId, before);
  // Only a heartbeat that can activate waits for the lock, and only briefly: once the package
  // is Ready the orchestrator holds the tenant for a pass, not for a readiness wait.
  const activated =
    before === 'provisioning' &&
    (await isPackageReady(tx, beat.tenantId)) &&
    (await lockTenant(tx, beat.tenantId, HEARTBEAT_LOCK_WAIT_MS)) &&
    (await activateIfProvisioning(tx, beat));
  const tenantState = activated ? 'active' : await stateOf(tx, beat.tenantId);
  if (tenantState === undefined) return undefined;
  await upsertHeartbeat(tx, {
    tenant_id: beat.tenantId,
    seen_at: at,
    adapter_version: beat.version,
    status: beat.status,
  });
  if (activated) await auditActivation(tx, beat);
  // Before the package is Ready the heartbeat is remembered; the orchestrator completes the
  // activation when it records readiness.
  if (tenantState === 'provisioning')
    await noteHeartbeatBeforeReady(tx, beat.tenantId, beat.version);
  return { tenantState, activated };
}

/**
 * Spec §3.1 row 3 needs both the heartbeat and a Ready package (the orchestrator's
 * `package_ready` step), checked again under the lock. The transition is a conditional UPDATE,
 * so two first heartbeats racing each other move the tenant exactly once.
 */
async function activateIfProvisioning(tx: TenantTx, beat: Heartbeat): Promise<boolean> {
  if (!(await isPackageReady(tx, beat.tenantId))) return false;
  return activateOnHeartbeat(tx, beat.tenantId, beat.version);
}

async function auditActivation(tx: TenantTx, beat: Heartbeat): Promise<void> {
  await writeAudit(tx, {
    tenantId: beat.tenantId,
    actorPrincipal: 'Adapter',
    actorId: beat.tenantId,
    action: 'tenant.activate',
    resourceType: 'tenant',
    resourceId: beat.tenantId,
    before: { state: 'provisioning' },
    after: { state: 'active' },
    details: { adapter_version: beat.version, jti: beat.jti },
  });
}
