import Type, { type Static } from 'typebox';

/**
 * A tenant's triage policy (docs/pipeline.md "Triage policy"): the deterministic rules that run
 * before any model, what is redacted from prompts, and the daily LLM budget. Set by the MSSP per
 * tenant (`PUT /api/mssp/tenants/{tenant_id}/triage-policy`); absent keys take the defaults below.
 */
const RuleGroup = Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,100}$' });
/** A dotted path into a Wazuh alert, e.g. `data.srcuser` or `agent.ip`. */
const FieldPath = Type.String({
  pattern: '^[A-Za-z0-9_@-]{1,100}(\\.[A-Za-z0-9_@-]{1,100}){0,9}$',
});

export const RedactionPattern = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z][a-z0-9_-]{0,63}$' }),
    /** An ECMAScript regular expression source, compiled with the `g` and `u` flags. */
    pattern: Type.String({ minLength: 1, maxLength: 500 }),
  },
  { additionalProperties: false },
);

export const TriagePolicy = Type.Object(
  {
    /** Investigations whose highest rule level is below this close as benign without a model. */
    auto_close_below_level: Type.Optional(Type.Integer({ minimum: 0, maximum: 16 })),
    /** Alerts in any of these Wazuh rule groups always go to a human (escalation proposed). */
    always_escalate_rule_groups: Type.Optional(Type.Array(RuleGroup, { maxItems: 100 })),
    /** Fields removed from every alert before it is put in a prompt. */
    never_send_fields: Type.Optional(Type.Array(FieldPath, { maxItems: 100 })),
    redaction: Type.Optional(
      Type.Object(
        {
          emails: Type.Optional(Type.Boolean()),
          ips: Type.Optional(Type.Boolean()),
          usernames: Type.Optional(Type.Boolean()),
          hostnames: Type.Optional(Type.Boolean()),
          custom: Type.Optional(Type.Array(RedactionPattern, { maxItems: 50 })),
        },
        { additionalProperties: false },
      ),
    ),
    /** Analyzers the pipeline may run in the tenant's analysis component (Cortex names). */
    analyzers: Type.Optional(
      Type.Array(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,100}$' }), { maxItems: 50 }),
    ),
    /** Below this model confidence the decision is a human's, whatever the verdict. */
    min_confidence: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    /** Daily LLM budget (UTC day). null: no limit. */
    daily_budget: Type.Optional(
      Type.Object(
        {
          tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
          cost_usd: Type.Optional(Type.Union([Type.Number({ minimum: 0 }), Type.Null()])),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type TriagePolicy = Static<typeof TriagePolicy>;

/** The policy every tenant has until the MSSP sets one. */
export const DEFAULT_TRIAGE_POLICY = {
  auto_close_below_level: 3,
  always_escalate_rule_groups: [],
  never_send_fields: [],
  redaction: { emails: true, ips: false, usernames: true, hostnames: false, custom: [] },
  analyzers: [],
  min_confidence: 0.7,
  daily_budget: { tokens: null, cost_usd: null },
} as const satisfies TriagePolicy;

/** A tenant's policy with every key present: the stored one over DEFAULT_TRIAGE_POLICY. */
export interface ResolvedTriagePolicy {
  auto_close_below_level: number;
  always_escalate_rule_groups: string[];
  never_send_fields: string[];
  redaction: {
    emails: boolean;
    ips: boolean;
    usernames: boolean;
    hostnames: boolean;
    custom: Static<typeof RedactionPattern>[];
  };
  analyzers: string[];
  min_confidence: number;
  daily_budget: { tokens: number | null; cost_usd: number | null };
}

/**
 * Absent keys take the default, key by key inside `redaction` and `daily_budget` too, so a
 * tenant that only set `redaction.ips` keeps the default email and username redaction. Arrays
 * are copied: the result never aliases the stored policy or the defaults.
 */
export function resolveTriagePolicy(stored: TriagePolicy | null | undefined): ResolvedTriagePolicy {
  const d = DEFAULT_TRIAGE_POLICY;
  const s = stored ?? {};
  const r = s.redaction ?? {};
  return {
    auto_close_below_level: s.auto_close_below_level ?? d.auto_close_below_level,
    always_escalate_rule_groups: [
      ...(s.always_escalate_rule_groups ?? d.always_escalate_rule_groups),
    ],
    never_send_fields: [...(s.never_send_fields ?? d.never_send_fields)],
    redaction: {
      emails: r.emails ?? d.redaction.emails,
      ips: r.ips ?? d.redaction.ips,
      usernames: r.usernames ?? d.redaction.usernames,
      hostnames: r.hostnames ?? d.redaction.hostnames,
      custom: (r.custom ?? d.redaction.custom).map((p) => ({ name: p.name, pattern: p.pattern })),
    },
    analyzers: [...(s.analyzers ?? d.analyzers)],
    min_confidence: s.min_confidence ?? d.min_confidence,
    daily_budget: {
      tokens: s.daily_budget?.tokens ?? d.daily_budget.tokens,
      cost_usd: s.daily_budget?.cost_usd ?? d.daily_budget.cost_usd,
    },
  };
}
