import type * as s from 'zapatos/schema';
import type { StoredEvent } from '../events/event-repository.ts';
import { identifier, later, object, payloadOf, text } from './event-fields.ts';
import type { ChangeRow, Fold, ProjectionModule } from './projection-types.ts';

// How often each Wazuh rule fired (spec §2.3; docs/projections.md), from `alert.received`.

export type RuleDelta = ChangeRow<
  s.rule_stats.JSONSelectable,
  'rule_id' | 'rule_name' | 'fired' | 'last_fired_at'
>;

const RULE_ID_MAX = 200;
const RULE_NAME_MAX = 1000;

class RuleStatsFold implements Fold<RuleDelta[]> {
  readonly #rules = new Map<string, RuleDelta>();

  add(event: StoredEvent): void {
    const rule = object(object(payloadOf(event, 'alert.received').alert)?.rule) ?? {};
    const ruleId = identifier(rule.id, RULE_ID_MAX);
    if (ruleId === undefined) return;
    const at = event.occurredAt.toISOString();
    const name = text(rule.description, Number.POSITIVE_INFINITY)?.slice(0, RULE_NAME_MAX) ?? null;
    const row = this.#rules.get(ruleId);
    if (row) {
      row.fired += 1;
      // The latest description wins (rules are renamed between Wazuh versions).
      row.rule_name = name ?? row.rule_name;
      row.last_fired_at = later(row.last_fired_at, at);
    } else {
      this.#rules.set(ruleId, { rule_id: ruleId, rule_name: name, fired: 1, last_fired_at: at });
    }
  }

  changes(): RuleDelta[] {
    return [...this.#rules.values()];
  }
}

const RULES = `
  INSERT INTO rule_stats AS s (tenant_id, rule_id, rule_name, fired, last_fired_at)
  SELECT $1, r.rule_id, r.rule_name, r.fired, r.last_fired_at
    FROM jsonb_to_recordset($2::jsonb) AS r(rule_id text, rule_name text, fired bigint,
         last_fired_at timestamptz)
  ON CONFLICT (tenant_id, rule_id) DO UPDATE
     SET fired = s.fired + excluded.fired,
         rule_name = coalesce(excluded.rule_name, s.rule_name),
         last_fired_at = greatest(s.last_fired_at, excluded.last_fired_at)`;

export const ruleStats: ProjectionModule<'rule_stats', RuleDelta[], 'rule_stats'> = {
  name: 'rule_stats',
  table: 'rule_stats',
  key: ['rule_id'],
  rebuild: 'delete',
  events: new Set(['alert.received']),
  fold: () => new RuleStatsFold(),
  writes: [{ label: 'projections.rules', text: RULES, rows: (c) => [c] }],
};
