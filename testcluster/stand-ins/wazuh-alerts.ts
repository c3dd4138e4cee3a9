/**
 * Alerts in the shape the Wazuh manager writes them into the indexer's `wazuh-alerts-*`
 * indices (contract-12 "Wazuh alert"): `timestamp` as `YYYY-MM-DDTHH:MM:SS.mmm+0000`, the
 * alert's own `id` (`<epoch seconds>.<offset>`, its source id), `rule`, `agent`, `manager`,
 * `decoder`, `data`, `full_log`, `location`, and `syscheck` for file-integrity alerts.
 */
export type WazuhAlert = Record<string, unknown> & {
  id: string;
  timestamp: string;
  rule: { id: string; level: number; description: string; groups: string[] } & Record<
    string,
    unknown
  >;
  agent: { id: string; name: string; ip: string };
};

const AGENTS = [
  { id: '001', name: 'web-01', ip: '10.0.0.11' },
  { id: '002', name: 'db-01', ip: '10.0.0.12' },
  { id: '003', name: 'mail-01', ip: '10.0.0.13' },
];

type Kind = (n: number, agent: (typeof AGENTS)[number], at: Date) => Record<string, unknown>;

const syslogTime = (at: Date) =>
  at.toUTCString().slice(8, 11) +
  ` ${String(at.getUTCDate()).padStart(2, ' ')} ${at.toISOString().slice(11, 19)}`;

/** A few real Wazuh rules, with the fields their decoders fill. */
const KINDS: Kind[] = [
  (n, agent, at) => ({
    rule: {
      level: 10,
      description: 'sshd: brute force trying to get access to the system. Non existent user.',
      id: '5712',
      mitre: { id: ['T1110'], tactic: ['Credential Access'], technique: ['Brute Force'] },
      firedtimes: n + 1,
      mail: false,
      groups: ['syslog', 'sshd', 'authentication_failures'],
      pci_dss: ['11.4', '10.2.4', '10.2.5'],
    },
    full_log: `${syslogTime(at)} ${agent.name} sshd[${800 + (n % 100)}]: Invalid user admin from 203.0.113.${n % 250} port ${50000 + (n % 10000)}`,
    decoder: { parent: 'sshd', name: 'sshd' },
    data: { srcip: `203.0.113.${n % 250}`, srcport: String(50000 + (n % 10000)), srcuser: 'admin' },
    location: '/var/log/auth.log',
  }),
  (n, agent, at) => ({
    rule: {
      level: 5,
      description: 'PAM: User login failed.',
      id: '5503',
      mitre: { id: ['T1110.001'], tactic: ['Credential Access'], technique: ['Password Guessing'] },
      firedtimes: n + 1,
      mail: false,
      groups: ['pam', 'syslog', 'authentication_failed'],
    },
    full_log: `${syslogTime(at)} ${agent.name} sshd[911]: pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=198.51.100.${n % 250}  user=root`,
    decoder: { name: 'pam' },
    data: { srcip: `198.51.100.${n % 250}`, dstuser: 'root', uid: '0', euid: '0', tty: 'ssh' },
    location: '/var/log/auth.log',
  }),
  (n) => ({
    rule: {
      level: 7,
      description: 'Integrity checksum changed.',
      id: '550',
      mitre: { id: ['T1565.001'], tactic: ['Impact'], technique: ['Stored Data Manipulation'] },
      firedtimes: n + 1,
      mail: false,
      groups: ['ossec', 'syscheck', 'syscheck_entry_modified', 'syscheck_file'],
    },
    full_log: `File '/etc/hosts' modified\nMode: realtime\nChanged attributes: size,mtime,md5,sha1,sha256\n`,
    decoder: { name: 'syscheck_integrity_changed' },
    syscheck: {
      path: '/etc/hosts',
      mode: 'realtime',
      event: 'modified',
      size_before: '180',
      size_after: String(181 + (n % 50)),
      md5_after: (n * 7919).toString(16).padStart(32, '0'),
      sha256_after: (n * 104729).toString(16).padStart(64, 'a'),
      changed_attributes: ['size', 'mtime', 'md5', 'sha1', 'sha256'],
    },
    location: 'syscheck',
    data: {},
  }),
  (n, agent) => ({
    rule: {
      level: 13,
      description: 'SQL injection attempt.',
      id: '31103',
      mitre: {
        id: ['T1190'],
        tactic: ['Initial Access'],
        technique: ['Exploit Public-Facing Application'],
      },
      firedtimes: n + 1,
      mail: true,
      groups: ['web', 'accesslog', 'attack', 'sql_injection'],
    },
    full_log: `192.0.2.${n % 250} - - [26/Nov/2026:13:45:01 +0000] "GET /item.php?id=1%27%20OR%201=1-- HTTP/1.1" 200 512 "-" "sqlmap/1.7"`,
    decoder: { name: 'web-accesslog' },
    data: {
      srcip: `192.0.2.${n % 250}`,
      url: `/item.php?id=1' OR 1=1--&n=${n}`,
      id: '200',
      protocol: 'GET',
    },
    location: `/var/log/nginx/access.log on ${agent.name}`,
  }),
];

/** `2026-11-26T13:45:01.123+0000`: Wazuh's own timestamp notation. */
export function wazuhTimestamp(at: Date): string {
  return `${at.toISOString().slice(0, 23)}+0000`;
}

/**
 * The n-th alert of a deterministic stream starting at `start`, `stepMs` apart. Alerts of the
 * same millisecond differ by id; ids are unique across a stream (and across streams with
 * different `manager`s).
 */
export function wazuhAlert(
  n: number,
  options: { start?: Date; stepMs?: number; manager?: string; kind?: number; agent?: number } = {},
): WazuhAlert {
  const start = options.start ?? new Date('2026-11-26T13:00:00.000Z');
  const at = new Date(start.getTime() + n * (options.stepMs ?? 250));
  const agent = AGENTS[(options.agent ?? n) % AGENTS.length] as (typeof AGENTS)[number];
  const kind = KINDS[(options.kind ?? n) % KINDS.length] as Kind;
  const manager = options.manager ?? 'wazuh-manager';
  return {
    timestamp: wazuhTimestamp(at),
    ...kind(n, agent, at),
    agent,
    manager: { name: manager },
    id: `${Math.floor(at.getTime() / 1000)}.${manager.length * 1_000_000 + n}`,
  } as unknown as WazuhAlert;
}

/** `count` consecutive alerts of one stream, from index `from`. */
export function wazuhAlerts(
  count: number,
  from = 0,
  options: Parameters<typeof wazuhAlert>[1] = {},
): WazuhAlert[] {
  return Array.from({ length: count }, (_, i) => wazuhAlert(from + i, options));
}
