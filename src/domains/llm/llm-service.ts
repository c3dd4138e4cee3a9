// The LLM domain: every model call a tenant's pipeline makes goes through `complete`, which
// answers from the tenant's cache, holds the call to the tenant's daily budget, and records
// what the call used. It also keeps the MSSP's triage policy per tenant (docs/llm.md).
import { createHash } from 'node:crypto';
import { resolveTriagePolicy, type TriagePolicy } from '../../../contracts/triage-policy.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import { outsideUnit } from '../../db/unit-of-work.ts';
import {
  type CompletionResult,
  createProvider,
  type LlmProvider,
  type ProviderFetch,
  type ProviderSettings,
} from '../../integrations/llm/index.ts';
import type { Logger } from '../../log/index.ts';
import type { Metrics } from '../../metrics/metrics.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { findTenant } from '../tenants/tenant-repository.ts';
import { TenantNotFoundError } from '../tenants/tenant-types.ts';
import {
  countCacheHit,
  countRefusal,
  findLlmConfig,
  findPolicy,
  insertCachedAnswer,
  listUsageDays,
  releaseReservation,
  reserveTokens,
  settleReservation,
  takeCachedAnswer,
  upsertPolicy,
} from './llm-repository.ts';
import {
  type CompletionAsk,
  InvalidPolicyError,
  type LlmOutcome,
  type LlmSettings,
  type ModelPrices,
  type PolicyActor,
  type PolicyView,
  type Reservation,
  type StoredLlmConfig,
  type UsageDay,
} from './llm-types.ts';

export interface LlmServiceDeps {
  db: Pick<AppDatabase, 'withTenant'>;
  /** Install-namespace Secrets; without a store no call carries a key. */
  secrets?: { read(name: string): Promise<Record<string, string> | undefined> } | undefined;
  /** The install's provider, base URL and model (SVC_LLM_*), for tenants that set none. */
  defaults: LlmSettings;
  /** The outbound-policy fetch in production; tests pass plain fetch to a local stand-in. */
  fetch: ProviderFetch;
  now: () => Date;
  prices?: ModelPrices | undefined;
  /** How long a tenant's API key is reused before the Secret is read again. Default 60 s. */
  keyTtlMs?: number;
  /** Per attempt of a provider request (SVC_LLM_TIMEOUT); default the provider's. */
  timeoutMs?: number | undefined;
  providerFor?: (settings: ProviderSettings) => LlmProvider;
  /**
   * The pipeline's check of a policy's custom redaction rules (domains/pipeline/redaction.ts
   * `checkPolicy`: one `<where>: <why>` line per problem). Injected, because the pipeline
   * domain depends on this one.
   */
  checkPolicy: (policy: TriagePolicy) => string[];
  logger?: Pick<Logger, 'info'> | undefined;
  /** Tokens and cost per tenant (`svc_llm_*` metrics), counted once the usage is settled. */
  metrics?: Pick<Metrics, 'llmUsage'> | undefined;
}

const DEFAULT_KEY_TTL_MS = 60_000;

/** A call admitted past the cache and the budget, holding its reservation. */
interface Admitted {
  settings: LlmSettings;
  promptHash: string;
  reservation: Reservation;
  withKey: boolean;
}
/** Upper bound of a usage query: the console's longest chart. */
export const MAX_USAGE_DAYS = 90;

export function createLlmService(deps: LlmServiceDeps) {
  const apiKey = createKeyCache(deps);
  const providerFor = deps.providerFor ?? createProvider;

  /** Cache lookup, then a reservation: one short transaction before the provider is called. */
  function admit(tenantId: string, ask: CompletionAsk, at: Date) {
    return deps.db.withTenant(tenantId, async (tx) => {
      const stored = await findLlmConfig(tx, tenantId);
      const settings = settingsOf(stored, deps.defaults);
      const promptHash = promptHashOf(settings, ask);
      const day = utcDay(at);
      const cached = await takeCachedAnswer(tx, { tenantId, promptHash, at });
      if (cached) {
        await countCacheHit(tx, tenantId, day);
        return { kind: 'cached' as const, cached };
      }
      const limit = resolveTriagePolicy((await findPolicy(tx, tenantId))?.policy).daily_budget;
      const reservation = { day, tokens: ask.maxTokens + estimateInputTokens(ask) };
      if (!(await reserveTokens(tx, tenantId, reservation, limit))) {
        return { kind: 'refused' as const, used: await countRefusal(tx, tenantId, day), limit };
      }
      const withKey = stored?.has_api_key === true;
      return { kind: 'reserved' as const, settings, promptHash, reservation, withKey };
    });
  }

  /** The provider's answer; on any failure the reservation is released first. */
  async function askModel(tenantId: string, ask: CompletionAsk, admitted: Admitted) {
    const { settings } = admitted;
    try {
      const provider = providerFor({
        provider: settings.provider,
        baseUrl: settings.baseUrl,
        apiKey: admitted.withKey ? await apiKey(tenantId) : undefined,
        fetch: deps.fetch,
        ...(deps.timeoutMs !== undefined ? { timeoutMs: deps.timeoutMs } : {}),
      });
      return await provider.complete({
        model: settings.model,
        system: ask.system,
        messages: [{ role: 'user', content: ask.user }],
        maxTokens: ask.maxTokens,
        // The cache answers a repeated prompt with the first answer: ask for the likeliest one.
        temperature: 0,
        ...(ask.json ? { json: ask.json } : {}),
      });
    } catch (error) {
      await deps.db.withTenant(tenantId, (tx) =>
        releaseReservation(tx, tenantId, admitted.reservation),
      );
      throw error;
    }
  }

  /** The reservation replaced by what the call used, and the answer cached, together. */
  function settle(tenantId: string, admitted: Admitted, result: CompletionResult, costUsd: number) {
    const { inputTokens, outputTokens } = result.usage;
    return deps.db.withTenant(tenantId, async (tx) => {
      await settleReservation(tx, tenantId, admitted.reservation, {
        inputTokens,
        outputTokens,
        costUsd,
      });
      await insertCachedAnswer(tx, {
        tenant_id: tenantId,
        prompt_hash: admitted.promptHash,
        provider: admitted.settings.provider,
        model: result.model,
        response: result.text,
        input_tokens: inputTokens,
        output_tokens: outputTokens,
        created_at: deps.now(),
      });
    });
  }

  async function call(tenantId: string, ask: CompletionAsk, admitted: Admitted) {
    const started = Date.now();
    const result = await askModel(tenantId, ask, admitted);
    const costUsd = costOf(deps.prices, admitted.settings.model, result);
    await settle(tenantId, admitted, result, costUsd);
    deps.metrics?.llmUsage(tenantId, { ...result.usage, cost: costUsd });
    deps.logger?.info(
      {
        tenant_id: tenantId,
        purpose: ask.purpose,
        provider: admitted.settings.provider,
        model: result.model,
        input_tokens: result.usage.inputTokens,
        output_tokens: result.usage.outputTokens,
        attempts: result.attempts,
        duration_ms: Date.now() - started,
      },
      'llm call',
    );
    const outcome: LlmOutcome = {
      kind: 'answer',
      text: result.text,
      cached: false,
      model: result.model,
      usage: result.usage,
      costUsd,
    };
    return outcome;
  }

  return {
    /**
     * One completion for the tenant. Throws the provider's LlmError once its retries are spent
     * (the reservation released). Runs outside any ambient unit of work: the reservation must
     * commit before the provider is called, so concurrent callers see it, and no transaction
     * may stay open for the seconds the model takes.
     */
    complete(tenantId: string, ask: CompletionAsk): Promise<LlmOutcome> {
      return outsideUnit(async (): Promise<LlmOutcome> => {
        const admitted = await admit(tenantId, ask, deps.now());
        if (admitted.kind === 'refused') {
          return { kind: 'over_budget', used: admitted.used, limit: admitted.limit };
        }
        if (admitted.kind === 'cached') {
          const { cached } = admitted;
          return {
            kind: 'answer',
            text: cached.response,
            cached: true,
            model: cached.model,
            usage: { inputTokens: cached.input_tokens, outputTokens: cached.output_tokens },
            costUsd: 0,
          };
        }
        return call(tenantId, ask, admitted);
      });
    },

    /** The last `days` UTC days (today included), newest first, with the day's limits. */
    usage(tenantId: string, days: number) {
      const today = utcDay(deps.now());
      return deps.db.withTenant(tenantId, async (tx) => {
        await requireTenant(tx, tenantId);
        const rows: UsageDay[] = await listUsageDays(
          tx,
          tenantId,
          today,
          Math.min(Math.max(days, 1), MAX_USAGE_DAYS),
        );
        const stored = (await findPolicy(tx, tenantId))?.policy;
        return { days: rows, daily_budget: resolveTriagePolicy(stored).daily_budget };
      });
    },

    getPolicy(tenantId: string): Promise<PolicyView> {
      return deps.db.withTenant(tenantId, async (tx) => {
        await requireTenant(tx, tenantId);
        const stored = await findPolicy(tx, tenantId);
        return viewOf(stored ?? null);
      });
    },

    /** Replaces the tenant's policy; the row and its audit entry commit together. */
    async putPolicy(
      tenantId: string,
      policy: TriagePolicy,
      actor: PolicyActor,
    ): Promise<PolicyView> {
      refuseInapplicable(deps.checkPolicy(policy));
      return deps.db.withTenant(tenantId, async (tx) => {
        await requireTenant(tx, tenantId);
        const before = (await findPolicy(tx, tenantId))?.policy ?? null;
        const stored = await upsertPolicy(tx, {
          tenant_id: tenantId,
          policy,
          updated_at: deps.now(),
          updated_by: actor.userId,
        });
        await writeAudit(tx, {
          tenantId,
          actorPrincipal: 'User',
          actorId: actor.userId,
          action: 'settings.update',
          resourceType: 'triage_policy',
          resourceId: tenantId,
          before,
          after: policy,
          actingAs: actor.actingAs,
        });
        return viewOf(stored);
      });
    },
  };
}

export type LlmService = ReturnType<typeof createLlmService>;

/** The tenant's stored `llm` over the install defaults, field by field. */
function settingsOf(stored: StoredLlmConfig | undefined, defaults: LlmSettings): LlmSettings {
  return {
    provider: stored?.provider ?? defaults.provider,
    baseUrl: stored?.base_url ?? defaults.baseUrl,
    model: stored?.model ?? defaults.model,
  };
}

/**
 * The cache key: sha256 of a canonical JSON of everything that decides the answer. The tenant
 * is not in it because it is the other half of the key (spec §5.7.7).
 */
export function promptHashOf(settings: LlmSettings, ask: CompletionAsk): string {
  const canonical = canonicalJson({
    provider: settings.provider,
    base_url: settings.baseUrl,
    model: settings.model,
    system: ask.system,
    user: ask.user,
    json: ask.json ?? null,
  });
  return createHash('sha256').update(canonical).digest('hex');
}

/** JSON with object keys sorted at every depth, so equal requests hash equal. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * Input tokens before the provider counts them: one per three UTF-8 bytes, above the usual
 * four characters per token of English text, so a reservation rarely holds too little.
 */
function estimateInputTokens(ask: CompletionAsk): number {
  const bytes =
    Buffer.byteLength(ask.system) +
    Buffer.byteLength(ask.user) +
    (ask.json ? Buffer.byteLength(JSON.stringify(ask.json.schema)) : 0);
  return Math.ceil(bytes / 3);
}

/** Priced by the model asked for, else the one that answered; an unpriced model costs 0. */
function costOf(
  prices: ModelPrices | undefined,
  model: string,
  result: { model: string; usage: { inputTokens: number; outputTokens: number } },
): number {
  const price = prices?.[model] ?? prices?.[result.model];
  if (!price) return 0;
  const { inputTokens, outputTokens } = result.usage;
  return (inputTokens * price.input_per_mtok + outputTokens * price.output_per_mtok) / 1e6;
}

function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/**
 * The tenant's API key from Secret `tenant-<id>-llm` (key `api_key`), reused for the TTL so a
 * busy tenant does not read the cluster per call. Kept in memory only; a failed read is not
 * remembered.
 */
function createKeyCache(deps: Pick<LlmServiceDeps, 'secrets' | 'now' | 'keyTtlMs'>) {
  const ttl = deps.keyTtlMs ?? DEFAULT_KEY_TTL_MS;
  const entries = new Map<string, { at: number; key: Promise<string | undefined> }>();
  return (tenantId: string): Promise<string | undefined> => {
    const store = deps.secrets;
    if (!store) return Promise.resolve(undefined);
    const at = deps.now().getTime();
    const entry = entries.get(tenantId);
    if (entry && at - entry.at < ttl) return entry.key;
    const key = store.read(`tenant-${tenantId}-llm`).then((data) => data?.api_key);
    entries.set(tenantId, { at, key });
    key.catch(() => {
      if (entries.get(tenantId)?.key === key) entries.delete(tenantId);
    });
    return key;
  };
}

function viewOf(stored: { policy: TriagePolicy; updated_at: Date } | null): PolicyView {
  return {
    policy: resolveTriagePolicy(stored?.policy),
    stored: stored?.policy ?? null,
    updated_at: stored?.updated_at ?? null,
  };
}

/** `redaction.custom[1].pattern: why` lines as JSON-pointer problems, or nothing to refuse. */
function refuseInapplicable(lines: string[]): void {
  if (lines.length === 0) return;
  throw new InvalidPolicyError(
    lines.map((line) => {
      const at = line.indexOf(': ');
      const where = at < 0 ? '' : line.slice(0, at);
      const path = where
        .replaceAll(/\[(\d+)\]/g, '.$1')
        .split('.')
        .filter(Boolean)
        .join('/');
      return { path: path ? `/${path}` : '', message: at < 0 ? line : line.slice(at + 2) };
    }),
  );
}

async function requireTenant(tx: TenantTx, tenantId: string): Promise<void> {
  if (!(await findTenant(tx, tenantId))) throw new TenantNotFoundError(tenantId);
}
