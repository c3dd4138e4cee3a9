import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_TRIAGE_POLICY } from '../../contracts/triage-policy.ts';
import { applyPolicy, type PolicyAlert, resolvePolicy } from '../../src/domains/pipeline/policy.ts';
import { wazuhAlert } from '../support/wazuh-alerts.ts';

const at = (level: number, groups: string[] = ['syslog']): PolicyAlert => ({
  rule: { level, groups },
});

test('issue 13 triage policy: no stored policy resolves to the defaults, every key present', () => {
  const policy = resolvePolicy(undefined);
  assert.deepEqual(policy, {
    auto_close_below_level: 3,
    always_escalate_rule_groups: [],
    never_send_fields: [],
    redaction: { emails: true, ips: false, usernames: true, hostnames: false, custom: [] },
    analyzers: [],
    min_confidence: 0.7,
    daily_budget: { tokens: null, cost_usd: null },
  });
});

test('issue 13 triage policy: stored keys win key by key, inside redaction and daily_budget too', () => {
  const policy = resolvePolicy({
    auto_close_below_level: 0,
    redaction: { ips: true, custom: [{ name: 'ticket', pattern: 'TCK-[0-9]+' }] },
    daily_budget: { tokens: 50_000 },
  });
  assert.equal(policy.auto_close_below_level, 0);
  assert.deepEqual(policy.redaction, {
    emails: true,
    ips: true,
    usernames: true,
    hostnames: false,
    custom: [{ name: 'ticket', pattern: 'TCK-[0-9]+' }],
  });
  assert.deepEqual(policy.daily_budget, { tokens: 50_000, cost_usd: null });
  assert.equal(policy.min_confidence, 0.7);
});

test('issue 13 triage policy: the resolved policy never aliases the defaults', () => {
  resolvePolicy(undefined).always_escalate_rule_groups.push('attack');
  resolvePolicy(undefined).redaction.custom.push({ name: 'x', pattern: 'x' });
  assert.deepEqual(DEFAULT_TRIAGE_POLICY.always_escalate_rule_groups, []);
  assert.deepEqual(DEFAULT_TRIAGE_POLICY.redaction.custom, []);
});

test('issue 13 triage policy rule 1: an investigation without alerts goes to a human', () => {
  const outcome = applyPolicy(resolvePolicy(undefined), []);
  assert.equal(outcome.kind, 'escalate');
});

test('issue 13 triage policy rule 2: an always-escalate group escalates even below the auto-close level', () => {
  const policy = resolvePolicy({ always_escalate_rule_groups: ['sql_injection', 'rootcheck'] });
  const outcome = applyPolicy(policy, [at(1), at(1, ['web', 'sql_injection']), at(2)]);
  assert.deepEqual(outcome, {
    kind: 'escalate',
    reason: 'alerts in always-escalate rule group sql_injection',
    groups: ['sql_injection'],
  });
});

test('issue 13 triage policy rule 2: groups match case-insensitively and are named once, as the alerts spell them', () => {
  const policy = resolvePolicy({ always_escalate_rule_groups: ['SQL_Injection', 'Attack'] });
  const alerts = [wazuhAlert(3), wazuhAlert(7)]; // both the web SQL-injection kind
  const outcome = applyPolicy(policy, alerts);
  assert.equal(outcome.kind, 'escalate');
  assert.deepEqual(outcome.kind === 'escalate' && outcome.groups, ['attack', 'sql_injection']);
});

test('issue 13 triage policy rule 3: highest level below auto_close_below_level closes as benign', () => {
  const outcome = applyPolicy(resolvePolicy({ auto_close_below_level: 5 }), [at(2), at(4), at(3)]);
  assert.deepEqual(outcome, {
    kind: 'auto_close',
    reason: 'highest rule level 4 is below the auto-close level 5',
    maxLevel: 4,
  });
});

test('issue 13 triage policy rule 3: a level equal to the threshold, or one loud alert, goes to the model', () => {
  const policy = resolvePolicy({ auto_close_below_level: 5 });
  assert.deepEqual(applyPolicy(policy, [at(5)]), { kind: 'model' });
  assert.deepEqual(applyPolicy(policy, [at(1), at(1), at(12), at(1)]), { kind: 'model' });
});

test('issue 13 triage policy rule 3: auto_close_below_level 0 never closes automatically', () => {
  assert.deepEqual(applyPolicy(resolvePolicy({ auto_close_below_level: 0 }), [at(0)]), {
    kind: 'model',
  });
});

test('issue 13 triage policy rule 4: with the defaults, real Wazuh alerts of level 5 and up go to the model', () => {
  const policy = resolvePolicy(undefined);
  for (const n of [0, 1, 2, 3])
    assert.deepEqual(applyPolicy(policy, [wazuhAlert(n)]), { kind: 'model' });
});
