import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TriagePolicy } from '../../contracts/triage-policy.ts';
import { field } from '../../src/domains/pipeline/iocs.ts';
import { resolvePolicy } from '../../src/domains/pipeline/policy.ts';
import {
  checkPolicy,
  InvalidRedactionPatternError,
  MAX_REDACTED_STRING_CHARS,
  redact,
} from '../../src/domains/pipeline/redaction.ts';
import { wazuhAlerts } from '../support/wazuh-alerts.ts';

const ALL_ON = resolvePolicy({
  redaction: { emails: true, ips: true, usernames: true, hostnames: true },
});

/** A small deterministic generator (mulberry32): the property runs the same cases every time. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Sensitive {
  user: string;
  target: string;
  host: string;
  manager: string;
  ip: string;
  ip6: string;
  email: string;
  fqdn: string;
  agentIp: string;
}

function generate(next: () => number, pool: number): Sensitive {
  const pick = (prefix: string) => `${prefix}${Math.floor(next() * pool)}`;
  const octet = () => 1 + Math.floor(next() * 254);
  return {
    user: pick('usr'),
    target: pick('svcacct'),
    host: pick('srv-'),
    manager: pick('mgr-'),
    ip: `${octet()}.${octet()}.${octet()}.${octet()}`,
    ip6: `2001:db8::${Math.floor(next() * pool).toString(16)}`,
    email: `${pick('first.last')}@${pick('corp')}.example.com`,
    fqdn: `${pick('build')}.ci.example.net`,
    agentIp: `10.0.${octet()}.${octet()}`,
  };
}

/** Where each sensitive value sits in the generated alert (full_log repeats all of them). */
const PATHS: Record<keyof Sensitive, string> = {
  user: 'data.srcuser',
  target: 'data.win.eventdata.targetUserName',
  host: 'agent.name',
  manager: 'manager.name',
  ip: 'data.srcip',
  ip6: 'data.dstip',
  email: 'data.notify.0.to',
  fqdn: 'data.win.system.computer',
  agentIp: 'agent.ip',
};

const logOf = (v: Sensitive) =>
  `${v.host} sshd[1]: Accepted password for ${v.user} from ${v.ip} (${v.ip6}) as ${v.target.toUpperCase()}; ` +
  `mailed ${v.email} via ${v.fqdn} by ${v.manager}`;

function alertOf(v: Sensitive, n: number): Record<string, unknown> {
  return {
    id: `1764162000.${n}`,
    rule: { id: '4624', level: 5, description: 'Logon', groups: ['windows'] },
    agent: { id: '001', name: v.host, ip: v.agentIp },
    manager: { name: v.manager },
    data: {
      srcuser: v.user,
      srcip: v.ip,
      dstip: v.ip6,
      notify: [{ to: v.email }],
      win: { eventdata: { targetUserName: v.target }, system: { computer: v.fqdn } },
    },
    full_log: logOf(v),
  };
}

/** `data.notify.0.to`: the dotted path with array indexes the test data uses. */
function at(value: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((v, key) => {
    if (Array.isArray(v)) return v[Number(key)];
    return field(v, key);
  }, value);
}

test('issue 13 redaction property: no original email, IP, user or host survives, and each value has one placeholder', () => {
  const next = random(1313);
  for (let round = 0; round < 50; round += 1) {
    const values = Array.from({ length: 1 + Math.floor(next() * 12) }, () => generate(next, 6));
    const { alerts, placeholders } = redact(values.map(alertOf), ALL_ON);
    const text = JSON.stringify(alerts).toLowerCase();
    const mapping = new Map<string, string>();
    values.forEach((v, i) => {
      for (const [kind, path] of Object.entries(PATHS) as [keyof Sensitive, string][]) {
        const original = v[kind];
        assert.ok(!text.includes(original.toLowerCase()), `${original} leaked in round ${round}`);
        const replaced = at(alerts[i], path);
        assert.match(String(replaced), /^\[(USER|HOST|IP|EMAIL)_\d+\]$/, `${kind} at ${path}`);
        const seen = mapping.get(original);
        assert.ok(seen === undefined || seen === replaced, `${original} got two placeholders`);
        mapping.set(original, String(replaced));
      }
      const redacted = Object.fromEntries(
        Object.entries(PATHS).map(([kind, path]) => [kind, String(at(alerts[i], path))]),
      ) as unknown as Sensitive;
      // The same placeholder stands for the same value in full_log as in the structured field.
      assert.equal(field(alerts[i], 'full_log'), logOf({ ...redacted, target: redacted.target }));
    });
    const distinct = new Set(mapping.values());
    assert.equal(distinct.size, mapping.size, 'two values share a placeholder');
    assert.equal(placeholders, mapping.size);
  }
});

test('issue 13 redaction: placeholders count per rule, and fired never carries an original value', () => {
  const alerts = [
    { data: { srcuser: 'alice' }, full_log: 'alice and bob@example.com and bob@example.com' },
    { data: { srcuser: 'carol' }, full_log: 'carol, then alice again; 10.0.0.1 stays' },
  ];
  const result = redact(alerts, resolvePolicy(undefined));
  assert.deepEqual(result.alerts, [
    { data: { srcuser: '[USER_1]' }, full_log: '[USER_1] and [EMAIL_1] and [EMAIL_1]' },
    { data: { srcuser: '[USER_2]' }, full_log: '[USER_2], then [USER_1] again; 10.0.0.1 stays' },
  ]);
  assert.deepEqual(result.fired, [
    { rule: 'username', count: 5 },
    { rule: 'email', count: 2 },
  ]);
  assert.equal(result.placeholders, 3);
  assert.equal(JSON.stringify(alerts[0]?.data), '{"srcuser":"alice"}', 'the input is not modified');
});

test('issue 13 redaction: user names are whole tokens matched case-insensitively', () => {
  const { alerts } = redact(
    [{ data: { dstuser: 'root' }, full_log: 'user=ROOT home /root/.ssh rootkit chroot' }],
    resolvePolicy(undefined),
  );
  assert.equal(field(alerts[0], 'full_log'), 'user=[USER_1] home /[USER_1]/.ssh rootkit chroot');
});

test('issue 13 redaction: never_send_fields are dropped first, counted per path, through arrays', () => {
  const policy = resolvePolicy({
    never_send_fields: ['full_log', 'data.srcport', 'data.list.secret', 'no.such.field'],
  });
  const input = [
    ...wazuhAlerts(2),
    { data: { list: [{ secret: 's3cret', keep: 1 }, { secret: 'x' }] } },
  ];
  const { alerts, fired } = redact(input, policy);
  assert.equal(JSON.stringify(alerts).includes('full_log'), false);
  assert.equal(JSON.stringify(alerts).includes('s3cret'), false);
  assert.equal(field(alerts[0], 'data.srcport'), undefined);
  assert.equal(field(alerts[0], 'data.srcip'), '203.0.113.0');
  assert.deepEqual(field(alerts[2], 'data.list'), [{ keep: 1 }, {}]);
  assert.deepEqual(fired.slice(0, 3), [
    { rule: 'field:full_log', count: 2 },
    { rule: 'field:data.srcport', count: 1 },
    { rule: 'field:data.list.secret', count: 2 },
  ]);
  assert.equal(typeof field(input[0], 'full_log'), 'string', 'the input is not modified');
});

test('issue 13 redaction: a dropped user field still names the value to replace elsewhere', () => {
  const policy = resolvePolicy({ never_send_fields: ['data.srcuser'] });
  const { alerts } = redact(wazuhAlerts(1), policy);
  assert.match(String(field(alerts[0], 'full_log')), /Invalid user \[USER_1\] from/);
});

test('issue 13 redaction: a custom pattern fires, is counted and gets its own placeholders', () => {
  const policy = resolvePolicy({
    redaction: { custom: [{ name: 'employee-id', pattern: 'EMP-[0-9]{6}' }] },
  });
  const { alerts, fired } = redact(
    [{ full_log: 'badge EMP-123456 used by EMP-654321, again EMP-123456', note: ['EMP-000001'] }],
    policy,
  );
  assert.deepEqual(alerts, [
    {
      full_log: 'badge [EMPLOYEE-ID_1] used by [EMPLOYEE-ID_2], again [EMPLOYEE-ID_1]',
      note: ['[EMPLOYEE-ID_3]'],
    },
  ]);
  assert.deepEqual(fired, [{ rule: 'employee-id', count: 4 }]);
});

test('issue 13 redaction: rules a policy turns off do not fire; keys are never redacted', () => {
  const policy = resolvePolicy({ redaction: { emails: false, usernames: false } });
  const alert = {
    'bob@example.com': 'bob@example.com',
    data: { srcuser: 'bob', srcip: '8.8.8.8' },
  };
  const { alerts, fired } = redact([alert], policy);
  assert.deepEqual(alerts, [alert]);
  assert.deepEqual(fired, []);
  const on = redact([alert], resolvePolicy(undefined)).alerts[0];
  assert.deepEqual(Object.keys(on as object), ['bob@example.com', 'data']);
});

test('issue 13 redaction: a string longer than 64 KiB is cut before matching and nothing past the cut is sent', () => {
  const long = `${'x'.repeat(MAX_REDACTED_STRING_CHARS - 10)} a@b.example.com ${'y'.repeat(100)} z@b.example.com`;
  const { alerts, truncated } = redact([{ full_log: long }], resolvePolicy(undefined));
  const out = String(field(alerts[0], 'full_log'));
  assert.equal(truncated, 1);
  assert.equal(out.includes('@'), false);
  assert.match(out, /…\[truncated \d+ chars\]$/);
  assert.ok(out.length < MAX_REDACTED_STRING_CHARS + 40);
});

test('issue 13 redaction: a stored pattern that does not compile refuses to redact (nothing is sent)', () => {
  const policy = resolvePolicy({ redaction: { custom: [{ name: 'broken', pattern: '(' }] } });
  assert.throws(() => redact([{ full_log: 'x' }], policy), InvalidRedactionPatternError);
});

test('issue 13 redaction: checkPolicy refuses invalid, empty-matching and catastrophic patterns, and reserved or repeated names', () => {
  const withPatterns = (...custom: { name: string; pattern: string }[]): TriagePolicy => ({
    redaction: { custom },
  });
  assert.deepEqual(checkPolicy({}), []);
  assert.deepEqual(
    checkPolicy(withPatterns({ name: 'ticket', pattern: '\\bTCK-[0-9]{4,8}\\b' })),
    [],
  );
  const problems = checkPolicy(
    withPatterns(
      { name: 'a', pattern: '(' },
      { name: 'b', pattern: 'x*' },
      { name: 'c', pattern: '\\b' },
      { name: 'd', pattern: '(?<=a)' },
      { name: 'e', pattern: '(a+)+$' },
      { name: 'f', pattern: '(\\w+\\s?)+$' },
      { name: 'ip', pattern: 'IP' },
      { name: 'b', pattern: 'y' },
    ),
  );
  assert.equal(problems.length, 8, problems.join('\n'));
  assert.match(
    problems[0] ?? '',
    /^redaction\.custom\[0\]\.pattern: not a valid regular expression/,
  );
  for (const i of [1, 2, 3]) {
    assert.equal(problems[i], `redaction.custom[${i}].pattern: matches the empty string`);
  }
  assert.match(problems[4] ?? '', /^redaction\.custom\[4\]\.pattern: backtracks catastrophically/);
  assert.match(problems[5] ?? '', /^redaction\.custom\[5\]\.pattern: backtracks catastrophically/);
  assert.equal(problems[6], 'redaction.custom[6].name: "ip" is a built-in rule');
  assert.equal(problems[7], 'redaction.custom[7].name: "b" is used twice');
});

test('issue 13 redaction: cost on real alerts (500 alerts, every rule on)', () => {
  const alerts = wazuhAlerts(500);
  const policy = resolvePolicy({
    redaction: {
      emails: true,
      ips: true,
      usernames: true,
      hostnames: true,
      custom: [{ name: 'ticket', pattern: 'TCK-[0-9]+' }],
    },
  });
  const started = performance.now();
  const { alerts: out, placeholders } = redact(alerts, policy);
  const ms = performance.now() - started;
  assert.equal(out.length, 500);
  assert.ok(placeholders > 0);
  assert.ok(ms < 2000, `took ${ms.toFixed(1)} ms`);
  console.log(`redact: 500 alerts in ${ms.toFixed(1)} ms, ${placeholders} placeholders`);
});
