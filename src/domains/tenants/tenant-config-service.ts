// Configuration revisions (spec §6.2, docs/operations.md "Configuration revisions"): the MSSP reads
// a tenant's applied configuration and its revisions, and changes it; each accepted change is a new
// revision the orchestrator rolls out (src/orchestrator/config-rollout.ts). Decisions:
// docs/operations.md "Configuration revisions".
import { isDeepStrictEqual } from 'node:util';
import type { TenantConfig } from '../../../contracts/tenant-config.ts';
import type { TenantConfigUpdate } from '../../../contracts/tenant-config-revisions.ts';
import type { Identity } from '../../auth/identity.ts';
import type { SecretStore } from '../../cluster/secrets.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import { afterCommit } from '../../db/unit-of-work.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { readBranding } from '../branding/branding-repository.ts';
import type { BrandingRow } from '../branding/branding-types.ts';
import { DomainError } from '../domain-error.ts';
import {
  findRevision,
  listRevisions,
  lockRevisionColumns,
  newestRevisionNumber,
  type RevisionColumns,
  type RevisionRow,
  revisionColumns,
  revisionConfig,
  setConfigTarget,
} from './config-revision-repository.ts';
import { integrationSecretKey, withoutSecrets } from './config-secrets.ts';
import {
  type ConfigChecks,
  ConfigInvalidError,
  type ConfigProblem,
  validateTenantConfig,
} from './tenant-config.ts';
import { upsertSecretRef } from './tenant-config-repository.ts';
import { installSecretNames } from './tenant-creation.ts';
import type { TenantState } from './tenant-lifecycle.ts';
import { insertLifecycleEvent } from './tenant-repository.ts';
import {
  InvalidStateError,
  type StoredConfig,
  TenancyUnavailableError,
  TenantNotFoundError,
} from './tenant-types.ts';

export type RevisionOutcome = 'pending' | 'applied' | 'failed' | 'rolled_back';

export interface RevisionView {
  revision: number;
  outcome: RevisionOutcome;
  error: string | null;
  actor: string;
  requestedAt: Date;
  completedAt: Date | null;
  config: StoredConfig;
}

export interface ConfigView {
  tenantId: string;
  revision: number;
  config: StoredConfig;
  pending: RevisionView | null;
}

/** A field fixed at creation (or owned by another route) differs from its current value. */
export class ImmutableFieldError extends DomainError {
  override name = 'ImmutableFieldError';
  readonly code = 'immutable_field';
  constructor(readonly errors: ConfigProblem[]) {
    super(`${errors.map((e) => e.path).join(', ')} cannot be changed here`);
  }
}

/** `expected_revision` is not the applied revision, or another change got there first. */
export class RevisionConflictError extends DomainError {
  override name = 'RevisionConflictError';
  readonly code = 'revision_conflict';
  constructor(
    readonly expected: number | null,
    readonly applied: number,
  ) {
    super(
      expected === null
        ? 'Another configuration change was accepted meanwhile; read the configuration again'
        : `The change is based on revision ${expected} but revision ${applied} is applied`,
    );
  }
}

/** A revision is still rolling out; a new change waits until it is applied or rolled back. */
export class RevisionPendingError extends DomainError {
  override name = 'RevisionPendingError';
  readonly code = 'revision_pending';
  constructor(readonly pending: number) {
    super(`Revision ${pending} is still rolling out; change the configuration once it settles`);
  }
}

/**
 * A tenant with no recorded configuration: every tenant svc creates stores revision 1, so this
 * is a row written outside svc (a restore, a hand insert). Its configuration cannot be shown or
 * changed, which is an answer (404 config_not_found), not a server error.
 */
export class ConfigNotRecordedError extends DomainError {
  override name = 'ConfigNotRecordedError';
  readonly code = 'config_not_found';
  constructor(readonly tenantId: string) {
    super('This tenant has no recorded configuration');
  }
}

/** The same checks as creation, answered as a change's refusal (422 `config_invalid`). */
function asChangeRefusal(error: unknown): never {
  if (error instanceof ConfigInvalidError)
    throw new ConfigInvalidError(error.errors, 'config_invalid');
  throw error;
}

export interface TenantConfigServiceDeps {
  db: AppDatabase;
  /** Install-namespace Secrets; absent when svc runs without a cluster. */
  secrets: SecretStore | undefined;
  checks: ConfigChecks;
  /** Wakes the orchestrator; absent when svc runs without one (changes are refused then). */
  kick: (() => void) | undefined;
}

/** Where a revision stands, from its outcome step and the tenant row. */
function outcomeOf(
  row: RevisionRow,
  cols: RevisionColumns,
): Pick<RevisionView, 'outcome' | 'error'> {
  if (row.outcome_step === 'config_failed') {
    const details = row.outcome_details ?? {};
    const rolledBack =
      details.rolled_back_to_revision !== null && details.rolled_back_to_revision !== undefined;
    return { outcome: rolledBack ? 'rolled_back' : 'failed', error: details.error ?? null };
  }
  if (row.outcome_step === 'config_applied' || row.revision <= cols.config_revision)
    return { outcome: 'applied', error: null };
  if (row.revision === cols.config_target) return { outcome: 'pending', error: null };
  return { outcome: 'failed', error: 'the rollout never completed' };
}

function viewOf(row: RevisionRow, cols: RevisionColumns): RevisionView {
  return {
    revision: row.revision,
    ...outcomeOf(row, cols),
    actor: row.actor,
    requestedAt: row.occurred_at,
    completedAt: row.completed_at,
    config: row.config,
  };
}

/**
 * The branding a revision carries: the tenant's branding row (PUT …/branding owns it), reduced
 * to what the package values can hold (render.ts keeps only https logo and favicon URLs).
 */
function valuesBranding(
  b: Pick<BrandingRow, 'app_name' | 'primary_color' | 'secondary_color'> & {
    logo_url?: string | null | undefined;
    favicon?: string | null | undefined;
  },
): NonNullable<TenantConfig['branding']> {
  const https = (url: string | null | undefined) => (url?.startsWith('https://') ? url : undefined);
  const logo = https(b.logo_url);
  const favicon = https(b.favicon);
  return {
    app_name: b.app_name,
    primary_color: b.primary_color,
    secondary_color: b.secondary_color,
    ...(logo ? { logo_url: logo } : {}),
    ...(favicon ? { favicon } : {}),
  };
}

/** Fields this route does not change, sent with another value than the current one. */
function immutableProblems(
  body: TenantConfigUpdate,
  current: { slug: string; mode: string; branding: TenantConfig['branding'] },
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (body.slug !== undefined && body.slug !== current.slug)
    problems.push({ path: '/slug', message: `the slug is fixed at creation (${current.slug})` });
  const mode = body.monitor_ingress?.mode ?? 'loadbalancer';
  if (mode !== current.mode)
    problems.push({
      path: '/monitor_ingress/mode',
      message: `the monitor ingress mode is fixed at creation (${current.mode})`,
    });
  if (
    body.branding !== undefined &&
    !isDeepStrictEqual(valuesBranding(body.branding), current.branding)
  )
    problems.push({
      path: '/branding',
      message: 'branding is changed through PUT /api/mssp/tenants/{tenant_id}/branding',
    });
  return problems;
}

/**
 * The secret-free form of `next` with each secret the change keeps marked as set: an LLM key
 * while `llm` stays, an integration credential while an item of the same kind and name stays.
 */
function storedForm(next: TenantConfig, applied: StoredConfig): StoredConfig {
  const stored = withoutSecrets(next) as StoredConfig;
  if (stored.llm && applied.llm?.has_api_key) stored.llm.has_api_key = true;
  const kept = new Set(
    (applied.integrations?.items ?? [])
      .filter((i) => i.has_credential)
      .map((i) => integrationSecretKey(i.kind, i.name)),
  );
  for (const item of stored.integrations?.items ?? []) {
    if (kept.has(integrationSecretKey(item.kind, item.name))) item.has_credential = true;
  }
  return stored;
}

/**
 * Whether `next` changes anything the applied configuration renders: JSON equality (key order
 * and absent-vs-undefined do not matter), the applied branding reduced like a new revision's
 * (a data-URL logo stored at creation is not a difference).
 */
function sameConfig(next: StoredConfig, applied: StoredConfig): boolean {
  const { branding, ...rest } = applied;
  return sameJson(next, branding ? { ...rest, branding: valuesBranding(branding) } : rest);
}

function sameJson(a: unknown, b: unknown): boolean {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : typeof v === 'object' && v !== null
        ? Object.fromEntries(
            Object.entries(v)
              .filter(([, x]) => x !== undefined)
              .sort(([k1], [k2]) => (k1 < k2 ? -1 : 1))
              .map(([k, x]) => [k, canonical(x)]),
          )
        : v;
  return isDeepStrictEqual(canonical(a), canonical(b));
}

interface SecretWrite {
  purpose: 'llm' | 'integrations';
  name: string;
  data: Record<string, string>;
  /**
   * Where secret values changed, audited (never the values): JSON pointers of those sent,
   * `removed:<Secret key>` for credentials dropped with their item.
   */
  changed: string[];
}

/**
 * The install-namespace Secrets the change rewrites (spec §9.4 step 3, as at creation): the LLM
 * key when one is sent (emptied when `llm` goes away), and the integrations Secret when a
 * credential is sent or an item holding one goes away.
 */
async function secretWrites(
  tenantId: string,
  next: TenantConfig,
  stored: StoredConfig,
  applied: StoredConfig,
  secrets: SecretStore | undefined,
): Promise<SecretWrite[]> {
  const names = installSecretNames(tenantId);
  const writes: SecretWrite[] = [];
  if (next.llm?.api_key !== undefined) {
    writes.push({
      purpose: 'llm',
      name: names.llm,
      data: { api_key: next.llm.api_key },
      changed: ['/llm/api_key'],
    });
  } else if (!next.llm && applied.llm?.has_api_key) {
    writes.push({ purpose: 'llm', name: names.llm, data: {}, changed: ['/llm/api_key'] });
  }
  const items = next.integrations?.items ?? [];
  const sent = items.flatMap((item, i) =>
    item.credential === undefined ? [] : [`/integrations/items/${i}/credential`],
  );
  const keep = new Set(
    (stored.integrations?.items ?? [])
      .filter((i) => i.has_credential)
      .map((i) => integrationSecretKey(i.kind, i.name)),
  );
  const held = (applied.integrations?.items ?? []).filter((i) => i.has_credential);
  const dropped = held.filter((i) => !keep.has(integrationSecretKey(i.kind, i.name)));
  if (sent.length > 0 || dropped.length > 0) {
    if (!secrets) throw new TenancyUnavailableError('svc has no cluster access configured');
    const old = (await secrets.read(names.integrations)) ?? {};
    const data: Record<string, string> = {};
    for (const item of items) {
      const key = integrationSecretKey(item.kind, item.name);
      const value = item.credential ?? (keep.has(key) ? old[key] : undefined);
      if (value !== undefined) data[key] = value;
    }
    writes.push({
      purpose: 'integrations',
      name: names.integrations,
      data,
      changed: [...sent, ...dropped.map((i) => `removed:${integrationSecretKey(i.kind, i.name)}`)],
    });
  }
  return writes;
}

export function createTenantConfigService(deps: TenantConfigServiceDeps) {
  const { db } = deps;

  async function requireColumns(tx: TenantTx, tenantId: string): Promise<RevisionColumns> {
    const cols = await revisionColumns(tx, tenantId);
    if (!cols) throw new TenantNotFoundError(tenantId);
    return cols;
  }

  async function appliedConfig(tx: TenantTx, cols: RevisionColumns): Promise<StoredConfig> {
    const config = await revisionConfig(tx, cols.id, cols.config_revision);
    if (!config) throw new ConfigNotRecordedError(cols.id);
    return config;
  }

  async function viewIn(tx: TenantTx, cols: RevisionColumns): Promise<ConfigView> {
    const pending =
      cols.config_target === null ? undefined : await findRevision(tx, cols.id, cols.config_target);
    return {
      tenantId: cols.id,
      revision: cols.config_revision,
      config: await appliedConfig(tx, cols),
      pending: pending ? viewOf(pending, cols) : null,
    };
  }

  /** Rewrites the Secrets; if the change then fails, each goes back to what it held. */
  async function writeSecrets(
    tx: TenantTx,
    tenantId: string,
    writes: SecretWrite[],
    restore: Array<() => Promise<void>>,
  ): Promise<void> {
    const secrets = deps.secrets;
    if (writes.length === 0) return;
    if (!secrets) throw new TenancyUnavailableError('svc has no cluster access configured');
    for (const write of writes) {
      const before = await secrets.read(write.name);
      restore.push(() =>
        before === undefined
          ? secrets.remove(write.name)
          : secrets.replace(write.name, before, { 'tenant-id': tenantId }),
      );
      await secrets.replace(write.name, write.data, { 'tenant-id': tenantId });
      await upsertSecretRef(tx, {
        tenant_id: tenantId,
        purpose: write.purpose,
        namespace: secrets.namespace,
        name: write.name,
      });
    }
  }

  /**
   * Revision n+1 of the tenant (one number per revision, sql/0021: a racing change loses with
   * revision_conflict), the rollout target for the orchestrator, and `tenant.config.update`
   * with the secret-free configuration before and after.
   */
  async function recordRevision(
    tx: TenantTx,
    cols: RevisionColumns,
    applied: StoredConfig,
    stored: StoredConfig,
    by: { userId: string; actingAs: string | null; details: Record<string, unknown> },
  ): Promise<number> {
    const tenantId = cols.id;
    const revision = (await newestRevisionNumber(tx, tenantId)) + 1;
    try {
      await insertLifecycleEvent(tx, tenantId, {
        kind: 'config_revision',
        config_revision: revision,
        details: { config: stored, based_on: cols.config_revision, ...by.details },
        actor: `user:${by.userId}`,
      });
    } catch (error) {
      if ((error as { code?: string }).code === '23505')
        throw new RevisionConflictError(null, cols.config_revision);
      throw error;
    }
    if (!(await setConfigTarget(tx, tenantId, { applied: cols.config_revision, target: revision })))
      throw new RevisionConflictError(null, cols.config_revision);
    await writeAudit(tx, {
      tenantId,
      actorPrincipal: 'User',
      actorId: by.userId,
      action: 'tenant.config.update',
      resourceType: 'tenant',
      resourceId: tenantId,
      before: { revision: cols.config_revision, config: applied },
      after: { revision, config: stored },
      details: by.details,
      actingAs: by.actingAs,
    });
    return revision;
  }

  async function updateIn(
    tx: TenantTx,
    identity: Identity,
    tenantId: string,
    body: TenantConfigUpdate,
    restore: Array<() => Promise<void>>,
  ): Promise<{ changed: boolean; view: ConfigView }> {
    // The row lock serializes changes of one tenant; the orchestrator's lock is not needed (a
    // change waits behind a running upgrade instead of answering tenant_busy).
    const cols = await lockRevisionColumns(tx, tenantId);
    if (!cols) throw new TenantNotFoundError(tenantId);
    if (cols.state !== 'active')
      throw new InvalidStateError(
        `Only an active tenant's configuration can change; this one is ${cols.state}`,
        cols.state as TenantState,
      );
    if (cols.config_target !== null) throw new RevisionPendingError(cols.config_target);
    const { expected_revision: expected, ...fields } = body;
    if (expected !== undefined && expected !== cols.config_revision)
      throw new RevisionConflictError(expected, cols.config_revision);
    const applied = await appliedConfig(tx, cols);
    const row = await readBranding(tx);
    const branding = row ? valuesBranding(row) : undefined;
    const problems = immutableProblems(body, {
      slug: cols.slug,
      mode: applied.monitor_ingress?.mode ?? 'loadbalancer',
      branding,
    });
    if (problems.length > 0) throw new ImmutableFieldError(problems);
    const { slug: _slug, branding: _branding, ...mutable } = fields;
    const next: TenantConfig = { ...mutable, slug: cols.slug, ...(branding ? { branding } : {}) };
    await validateTenantConfig(next, tenantId, deps.checks, cols.chart_version ?? undefined).catch(
      asChangeRefusal,
    );
    const stored = storedForm(next, applied);
    const writes = await secretWrites(tenantId, next, stored, applied, deps.secrets);
    if (writes.length === 0 && sameConfig(stored, applied))
      return { changed: false, view: await viewIn(tx, cols) };

    await writeSecrets(tx, tenantId, writes, restore);
    const revision = await recordRevision(tx, cols, applied, stored, {
      userId: identity.user_id,
      actingAs: identity.current_tenant,
      details: { secrets_changed: writes.flatMap((w) => w.changed) },
    });
    const after = { ...cols, config_target: revision };
    return { changed: true, view: await viewIn(tx, after) };
  }

  /**
   * Called by a branding edit, in its transaction (branding-service.ts): the package values carry
   * the branding (render.ts), so an active tenant with no rollout pending gets a revision that
   * takes it along. Otherwise, or when the values would not change (a data-URL logo the values
   * cannot hold), nothing: the next revision snapshots the branding row anyway.
   */
  async function brandingChanged(
    tx: TenantTx,
    tenantId: string,
    actor: { userId: string; actingAs: string | null },
  ): Promise<void> {
    const kick = deps.kick;
    const cols = await lockRevisionColumns(tx, tenantId);
    if (!kick || cols?.state !== 'active' || cols.config_target !== null) return;
    const applied = await revisionConfig(tx, tenantId, cols.config_revision);
    if (!applied) return;
    const row = await readBranding(tx);
    const { branding: _old, ...rest } = applied;
    const stored: StoredConfig = row ? { ...rest, branding: valuesBranding(row) } : rest;
    if (sameConfig(stored, applied)) return;
    await recordRevision(tx, cols, applied, stored, {
      ...actor,
      details: { cause: 'branding' },
    });
    afterCommit(kick);
  }

  return {
    brandingChanged,

    /** The applied configuration, its revision, and the revision rolling out (if any). */
    read: (tenantId: string): Promise<ConfigView> =>
      db.withTenant(tenantId, async (tx) => viewIn(tx, await requireColumns(tx, tenantId))),

    /** Revisions older than `before` (null: from the newest), newest first. */
    revisions: (tenantId: string, page: { before: number | null; limit: number }) =>
      db.withTenant(tenantId, async (tx) => {
        const cols = await requireColumns(tx, tenantId);
        const rows = await listRevisions(tx, tenantId, {
          before: page.before,
          limit: page.limit + 1,
        });
        const items = rows.slice(0, page.limit).map((r) => viewOf(r, cols));
        const last = items.at(-1);
        return { items, next: rows.length > page.limit && last ? last.revision : null };
      }),

    /**
     * Validates the change exactly like a creation (tenant-config.ts), rewrites the Secrets it
     * changes, and records revision n+1 for the orchestrator, all or nothing. A configuration
     * equal to the applied one writes nothing (`changed: false`).
     */
    async update(
      identity: Identity,
      tenantId: string,
      body: TenantConfigUpdate,
    ): Promise<{ changed: boolean; view: ConfigView }> {
      const kick = deps.kick;
      if (!kick) throw new TenancyUnavailableError('svc runs without its orchestrator');
      const restore: Array<() => Promise<void>> = [];
      try {
        const result = await db.withTenant(tenantId, (tx) =>
          updateIn(tx, identity, tenantId, body, restore),
        );
        if (result.changed) afterCommit(kick);
        return result;
      } catch (error) {
        await Promise.all(restore.map((undo) => undo().catch(() => undefined)));
        throw error;
      }
    },
  };
}

export type TenantConfigService = ReturnType<typeof createTenantConfigService>;
