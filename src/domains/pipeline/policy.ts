import {
  type ResolvedTriagePolicy,
  resolveTriagePolicy,
} from '../../../contracts/triage-policy.ts';

/**
 * The deterministic first step of the pipeline (docs/pipeline.md "Triage policy"): what a tenant's
 * triage policy decides about an investigation before any model is asked. docs/pipeline.md "Triage
 * policy".
 */

/** The resolved policy lives with its schema (contracts/triage-policy.ts). */
export type ResolvedPolicy = ResolvedTriagePolicy;
export { resolveTriagePolicy as resolvePolicy };

/** What applyPolicy reads of an alert; the ingest contract's WazuhAlert satisfies it. */
export interface PolicyAlert {
  rule: { level: number; groups?: readonly string[] | undefined };
}

export type PolicyOutcome =
  /** Closed as benign without a model. */
  | { kind: 'auto_close'; reason: string; maxLevel: number }
  /** A human decides (escalation proposed); the model is not asked. */
  | { kind: 'escalate'; reason: string; groups: string[] }
  /** The policy does not decide: the model triages. */
  | { kind: 'model' };

/**
 * The policy's decision for one investigation's alerts, first rule that applies:
 *
 * 1. No alerts → escalate. Ingest never opens an investigation without one, so this is an
 *    anomaly: closing it would hide it, and a model asked about nothing answers nothing.
 * 2. Any alert in an always-escalate rule group → escalate, whatever the level: the tenant
 *    said a human decides these, so neither auto-close nor the model gets a say. Groups match
 *    case-insensitively (Wazuh's own are lower-case; a policy typed `SQL_Injection` still
 *    means them); the outcome names the groups as the alerts spell them.
 * 3. The highest rule.level below auto_close_below_level → auto_close (verdict benign). The
 *    highest, not the first: one loud alert in a quiet group keeps the group open.
 * 4. Otherwise → model.
 */
export function applyPolicy(policy: ResolvedPolicy, alerts: readonly PolicyAlert[]): PolicyOutcome {
  if (alerts.length === 0) {
    return { kind: 'escalate', reason: 'the investigation has no alerts to triage', groups: [] };
  }
  const groups = escalatingGroups(policy.always_escalate_rule_groups, alerts);
  if (groups.length > 0) {
    return {
      kind: 'escalate',
      reason: `alerts in always-escalate rule group${groups.length > 1 ? 's' : ''} ${groups.join(', ')}`,
      groups,
    };
  }
  const maxLevel = alerts.reduce((max, a) => Math.max(max, a.rule.level), 0);
  if (maxLevel < policy.auto_close_below_level) {
    return {
      kind: 'auto_close',
      reason: `highest rule level ${maxLevel} is below the auto-close level ${policy.auto_close_below_level}`,
      maxLevel,
    };
  }
  return { kind: 'model' };
}

/** The alerts' groups that the policy escalates, each once, in order of first appearance. */
function escalatingGroups(wanted: readonly string[], alerts: readonly PolicyAlert[]): string[] {
  if (wanted.length === 0) return [];
  const lower = new Set(wanted.map((g) => g.toLowerCase()));
  const hits = new Set<string>();
  for (const alert of alerts) {
    for (const group of alert.rule.groups ?? []) {
      if (lower.has(group.toLowerCase())) hits.add(group);
    }
  }
  return [...hits];
}
