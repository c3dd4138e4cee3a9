import vm from 'node:vm';
import type { TriagePolicy } from '../../../contracts/triage-policy.ts';
import { field, findDomains, findEmails, findIps, type TextMatch } from './iocs.ts';
import type { ResolvedPolicy } from './policy.ts';

/**
 * What leaves svc in a prompt (docs/pipeline.md "Redaction"): fields the tenant never sends are
 * dropped, then personal and infrastructure values are replaced by stable placeholders.
 * docs/pipeline.md "Redaction".
 */

/** Longer strings are cut to this many UTF-16 code units before any pattern runs on them. */
export const MAX_REDACTED_STRING_CHARS = 64 * 1024;

/** Fields whose values are user names: replaced there and wherever else they occur. */
export const USERNAME_FIELDS = [
  'data.srcuser',
  'data.dstuser',
  'data.user',
  'data.win.eventdata.targetUserName',
  'data.win.eventdata.subjectUserName',
] as const;
/** Fields whose values are host names: replaced there and wherever else they occur. */
export const HOSTNAME_FIELDS = ['agent.name', 'manager.name', 'predecoder.hostname'] as const;

/** Custom pattern names that would share a placeholder or a `fired` name with a built-in rule. */
const RESERVED_NAMES = new Set(['email', 'ip', 'user', 'username', 'host', 'hostname']);

export interface RedactionResult {
  alerts: unknown[];
  /** Rules that changed something, with how many values (or fields) each replaced (or dropped). */
  fired: Array<{ rule: string; count: number }>;
  /** Distinct values replaced: the size of the placeholder mapping, which never leaves here. */
  placeholders: number;
  /** Strings cut at MAX_REDACTED_STRING_CHARS. */
  truncated: number;
}

/** A stored custom pattern does not compile: nothing may be sent under this policy. */
export class InvalidRedactionPatternError extends Error {
  override name = 'InvalidRedactionPatternError';
  constructor(readonly pattern: string) {
    super(`redaction pattern "${pattern}" does not compile`);
  }
}

interface Rule {
  /** The name in `fired`. */
  name: string;
  /** The placeholder's stem: `[EMAIL_1]`. */
  label: string;
  find(text: string): Iterable<TextMatch>;
  /** Values equal under this key share a placeholder. */
  key(value: string): string;
}

/**
 * Redacts the alerts of one prompt. Every string inside objects and arrays is walked (a bare
 * string item too, so `redact([title, ...alerts])` redacts a title with the same placeholders);
 * keys are not redacted. A placeholder stands for one value within this call only: the model
 * can still see that two alerts share a user, and nothing correlates across prompts.
 */
export function redact(alerts: readonly unknown[], policy: ResolvedPolicy): RedactionResult {
  const counts = new Map<string, number>();
  const count = (rule: string) => counts.set(rule, (counts.get(rule) ?? 0) + 1);
  const never = fieldTrie(policy.never_send_fields);
  const kept = alerts.map((a) => dropFields(a, never, count));
  const rules = rulesOf(policy, alerts);
  const placeholders = new Map<string, Map<string, number>>();
  const placeholder = (rule: Rule, value: string) => {
    const byValue = placeholders.get(rule.label) ?? new Map<string, number>();
    placeholders.set(rule.label, byValue);
    const key = rule.key(value);
    const n = byValue.get(key) ?? byValue.size + 1;
    byValue.set(key, n);
    return `[${rule.label}_${n}]`;
  };
  let truncated = 0;
  const redactString = (text: string): string => {
    const cut = cutString(text);
    if (cut.length < text.length) truncated += 1;
    const redacted = replaceMatches(cut, rules, (rule, value) => {
      count(rule.name);
      return placeholder(rule, value);
    });
    return cut.length < text.length
      ? `${redacted}…[truncated ${text.length - cut.length} chars]`
      : redacted;
  };
  return {
    alerts: kept.map((a) => mapStrings(a, redactString)),
    fired: [...counts].map(([rule, n]) => ({ rule, count: n })),
    placeholders: [...placeholders.values()].reduce((sum, m) => sum + m.size, 0),
    truncated,
  };
}

/**
 * Problems a stored policy has beyond its schema (empty when it may be saved): a custom
 * pattern that does not compile with the `gu` flags, matches the empty string in ordinary
 * text, backtracks catastrophically on long runs of one character, or whose name is used
 * twice or is a built-in rule's.
 */
export function checkPolicy(policy: TriagePolicy): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const [i, { name, pattern }] of (policy.redaction?.custom ?? []).entries()) {
    const at = `redaction.custom[${i}]`;
    if (RESERVED_NAMES.has(name)) problems.push(`${at}.name: "${name}" is a built-in rule`);
    else if (seen.has(name)) problems.push(`${at}.name: "${name}" is used twice`);
    seen.add(name);
    const problem = patternProblem(pattern);
    if (problem) problems.push(`${at}.pattern: ${problem}`);
  }
  return problems;
}

/** Texts a sane pattern never matches with zero length: it runs on every string of every alert. */
const EMPTY_PROBES = [
  '',
  'a',
  'admin@example.com from 10.0.0.1 on web-01\n',
  Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join(''),
];
/** Long runs of each printable character, then one that breaks them: the classic blow-ups. */
const BACKTRACK_PROBES = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).flatMap(
  (c) => [`${c.repeat(40)}\u0000`, `${c.repeat(4096)}\u0000`],
);
/** Budget for one pattern over every probe; a linear pattern needs well under 10 ms. */
const PROBE_TIMEOUT_MS = 250;

/**
 * Runs in a vm context because a vm timeout interrupts a running RegExp and the main realm has
 * no other way to stop one; the empty-string probes need it too (`(\w+\s?)+$` blows up on the
 * printable-ASCII probe before any long run is tried).
 */
const PROBE_SCRIPT = new vm.Script(`(() => {
  for (const text of empties) for (const m of text.matchAll(re)) if (m[0] === '') return 'empty';
  for (const text of probes) text.match(re);
  return 'ok';
})()`);
let probeContext: vm.Context | undefined;

function patternProblem(pattern: string): string | undefined {
  let re: RegExp;
  try {
    re = new RegExp(pattern, 'gu');
  } catch (error) {
    return `not a valid regular expression (${(error as Error).message})`;
  }
  probeContext ??= vm.createContext({ empties: EMPTY_PROBES, probes: BACKTRACK_PROBES });
  probeContext.re = re;
  try {
    const outcome: unknown = PROBE_SCRIPT.runInContext(probeContext, { timeout: PROBE_TIMEOUT_MS });
    return outcome === 'empty' ? 'matches the empty string' : undefined;
  } catch {
    return `backtracks catastrophically (more than ${PROBE_TIMEOUT_MS} ms on the probe inputs)`;
  }
}

/** The replacing rules in priority order (a tie on start and length goes to the earlier). */
function rulesOf(policy: ResolvedPolicy, alerts: readonly unknown[]): Rule[] {
  const { redaction } = policy;
  const lower = (v: string) => v.toLowerCase();
  const rules: Rule[] = [];
  if (redaction.emails) rules.push({ name: 'email', label: 'EMAIL', find: findEmails, key: lower });
  if (redaction.ips) rules.push({ name: 'ip', label: 'IP', find: findIps, key: lower });
  if (redaction.usernames) {
    const find = literalFinder(valuesAt(alerts, USERNAME_FIELDS));
    rules.push({ name: 'username', label: 'USER', find, key: lower });
  }
  if (redaction.hostnames) {
    const known = literalFinder(valuesAt(alerts, HOSTNAME_FIELDS));
    const find = (text: string) => [...known(text), ...findDomains(text)];
    rules.push({ name: 'hostname', label: 'HOST', find, key: lower });
  }
  for (const { name, pattern } of redaction.custom) {
    let re: RegExp;
    try {
      re = new RegExp(pattern, 'gu');
    } catch {
      throw new InvalidRedactionPatternError(name);
    }
    const find = (text: string) => regexMatches(re, text);
    rules.push({ name, label: name.toUpperCase(), find, key: (v) => v });
  }
  return rules;
}

/** Zero-length matches are skipped: they would replace nothing with a placeholder. */
function* regexMatches(re: RegExp, text: string): Generator<TextMatch> {
  for (const m of text.matchAll(re)) {
    if (m[0].length > 0) yield { start: m.index, end: m.index + m[0].length, text: m[0] };
  }
}

/** The distinct string values at these paths of any alert (blank or symbol-only ones skipped). */
function valuesAt(alerts: readonly unknown[], paths: readonly string[]): string[] {
  const values = new Set<string>();
  for (const alert of alerts) {
    for (const path of paths) {
      const value = field(alert, path);
      if (typeof value === 'string' && /[\p{L}\p{N}]/u.test(value)) values.add(value.trim());
    }
  }
  return [...values];
}

/**
 * Occurrences of known values as whole tokens, case-insensitively: `root` in `user=root` and
 * `/root/.ssh`, not in `rootkit`. Longest values first, so `admin2` is not read as `admin`.
 */
function literalFinder(values: string[]): (text: string) => Iterable<TextMatch> {
  if (values.length === 0) return () => [];
  const alternatives = values
    .sort((a, b) => b.length - a.length)
    .map((v) => v.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&'));
  const re = new RegExp(
    `(?<![\\p{L}\\p{N}_])(?:${alternatives.join('|')})(?![\\p{L}\\p{N}_])`,
    'giu',
  );
  return (text) => regexMatches(re, text);
}

/**
 * One pass over the original text with every rule's matches: the earliest match wins, then
 * the longest, then the higher-priority rule; overlapped matches are dropped. No rule ever
 * sees another's placeholder, so `[USER_1]` cannot be mangled by a custom pattern.
 */
function replaceMatches(
  text: string,
  rules: readonly Rule[],
  replace: (rule: Rule, value: string) => string,
): string {
  const matches: Array<TextMatch & { rule: Rule; priority: number }> = [];
  rules.forEach((rule, priority) => {
    for (const m of rule.find(text)) matches.push({ ...m, rule, priority });
  });
  if (matches.length === 0) return text;
  matches.sort(
    (a, b) => a.start - b.start || b.end - b.start - (a.end - a.start) || a.priority - b.priority,
  );
  let out = '';
  let at = 0;
  for (const m of matches) {
    if (m.start < at) continue;
    out += text.slice(at, m.start) + replace(m.rule, m.text);
    at = m.end;
  }
  return out + text.slice(at);
}

/** At most MAX_REDACTED_STRING_CHARS, never splitting a surrogate pair. */
function cutString(text: string): string {
  if (text.length <= MAX_REDACTED_STRING_CHARS) return text;
  const end = MAX_REDACTED_STRING_CHARS;
  const code = text.charCodeAt(end - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? end - 1 : end);
}

interface FieldTrie {
  /** Set when a never-send path ends here: the key is dropped, with its path for `fired`. */
  path?: string;
  children: Map<string, FieldTrie>;
}

function fieldTrie(paths: readonly string[]): FieldTrie {
  const root: FieldTrie = { children: new Map() };
  for (const path of paths) {
    let node = root;
    for (const key of path.split('.')) {
      const child = node.children.get(key) ?? { children: new Map() };
      node.children.set(key, child);
      node = child;
    }
    node.path = path;
  }
  return root;
}

/**
 * The value without the never-send paths. Arrays are transparent: `data.win.x` reaches `x` in
 * every element when `win` is an array. Unchanged subtrees are shared, not copied; mapStrings
 * copies everything afterwards.
 */
function dropFields(value: unknown, node: FieldTrie, count: (rule: string) => void): unknown {
  if (node.children.size === 0 || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((v) => dropFields(v, node, count));
  const kept: Array<[string, unknown]> = [];
  for (const [key, child] of Object.entries(value)) {
    const next = node.children.get(key);
    if (next?.path !== undefined) count(`field:${next.path}`);
    else kept.push([key, next ? dropFields(child, next, count) : child]);
  }
  // fromEntries defines keys; assigning a parsed `__proto__` key would set the prototype.
  return Object.fromEntries(kept);
}

function mapStrings(value: unknown, fn: (text: string) => string): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, fn));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapStrings(v, fn)]));
}
