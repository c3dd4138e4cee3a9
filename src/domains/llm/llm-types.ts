import type * as s from 'zapatos/schema';
import type { ResolvedTriagePolicy, TriagePolicy } from '../../../contracts/triage-policy.ts';
import { DomainError } from '../domain-error.ts';

/** Provider, endpoint and model a tenant's calls go to: its stored config over the defaults. */
export interface LlmSettings {
  provider: string;
  baseUrl: string;
  model: string;
}

/** `llm` of the stored tenant configuration (the key itself lives only in the Secret). */
export interface StoredLlmConfig {
  provider: string;
  base_url: string;
  model: string;
  has_api_key: boolean;
}

/** One completion the pipeline asks for; `purpose` names the step, for logs. */
export interface CompletionAsk {
  purpose: string;
  system: string;
  user: string;
  json?: { name: string; schema: Record<string, unknown> };
  maxTokens: number;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface DailyBudget {
  tokens: number | null;
  cost_usd: number | null;
}

export type LlmOutcome =
  | {
      kind: 'answer';
      text: string;
      /** From llm_cache: no provider call, no budget use. */
      cached: boolean;
      model: string;
      usage: TokenUsage;
      /** What this call added to the day's cost (0 from the cache or for an unpriced model). */
      costUsd: number;
    }
  | {
      kind: 'over_budget';
      /** The day's spend so far; reserved_tokens are held by calls still in flight. */
      used: { tokens: number; cost_usd: number; reserved_tokens: number };
      limit: DailyBudget;
    };

/** USD per million tokens, per model name (SVC_LLM_PRICES). */
export type ModelPrices = Record<string, { input_per_mtok: number; output_per_mtok: number }>;

/** Cache row as the lookup returns it. */
export type CachedAnswer = Pick<
  s.llm_cache.Selectable,
  'response' | 'model' | 'input_tokens' | 'output_tokens'
>;

/** One UTC day of a tenant's LLM use; counters as numbers, day as YYYY-MM-DD. */
export type UsageDay = Omit<s.llm_usage.JSONSelectable, 'tenant_id'>;

/** What a reservation holds until it is settled or released. */
export interface Reservation {
  day: string;
  tokens: number;
}

export type { ResolvedTriagePolicy } from '../../../contracts/triage-policy.ts';

export interface PolicyView {
  policy: ResolvedTriagePolicy;
  /** As the MSSP put it; null while the tenant runs on the defaults. */
  stored: TriagePolicy | null;
  updated_at: Date | null;
}

/** The MSSP user changing a policy, and the tenant an impersonation token acts for. */
export interface PolicyActor {
  userId: string;
  actingAs: string | null;
}

/** A policy the schema accepts but the pipeline cannot apply (pipeline/redaction.ts checkPolicy). */
export class InvalidPolicyError extends DomainError {
  override name = 'InvalidPolicyError';
  readonly code = 'invalid_policy';
  constructor(readonly problems: Array<{ path: string; message: string }>) {
    super('The triage policy cannot be applied');
  }
}
