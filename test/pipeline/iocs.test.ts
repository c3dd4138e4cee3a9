import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  extractIocs,
  findDomains,
  findIps,
  isInternalIp,
  publicIocs,
} from '../../src/domains/pipeline/iocs.ts';
import { wazuhAlert } from '../support/wazuh-alerts.ts';

const SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const SHA1 = 'DA39A3EE5E6B4B0D3255BFEF95601890AFD80709';
const MD5 = 'd41d8cd98f00b204e9800998ecf8427e';

test('issue 13 enrichment: IOCs come from the structured fields of real Wazuh alerts', () => {
  const sshd = wazuhAlert(0); // data.srcip 203.0.113.0, full_log repeats it
  const syscheck = wazuhAlert(2); // syscheck md5_after and sha256_after
  const web = wazuhAlert(3); // data.url is a bare path: no host, no URL indicator
  const iocs = extractIocs([sshd, syscheck, web]);
  const s = syscheck.syscheck as { md5_after: string; sha256_after: string };
  assert.deepEqual(iocs, [
    { type: 'ip', value: '203.0.113.0' },
    { type: 'hash', value: s.md5_after },
    { type: 'hash', value: s.sha256_after },
    { type: 'ip', value: '192.0.2.3' },
  ]);
});

test('issue 13 enrichment: full_log yields URLs with their host, emails, IPs, hashes and domains, each once', () => {
  const alert = {
    agent: { id: '001', name: 'web-01', ip: '10.0.0.11' },
    data: { srcip: '198.51.100.7', url: 'https://Evil.example.com/drop.php?id=1' },
    full_log:
      'GET https://Evil.example.com/drop.php?id=1 from 198.51.100.7, mail to Bob.Smith@Corp.example.org; ' +
      `sha256=${SHA256} sha1:${SHA1} md5 ${MD5} beacon c2.badguy.net and C2.BadGuy.NET, v6 2001:db8::1. ` +
      'at 13:45:01 mac 00:1a:2b:3c:4d:5e file /etc/nginx/nginx.conf.bak auth.log org.example.MyClass libc.so.6',
  };
  assert.deepEqual(extractIocs([alert]), [
    { type: 'ip', value: '198.51.100.7' },
    { type: 'url', value: 'https://Evil.example.com/drop.php?id=1' },
    { type: 'domain', value: 'evil.example.com' },
    { type: 'email', value: 'bob.smith@corp.example.org' },
    { type: 'ip', value: '2001:db8::1' },
    { type: 'hash', value: SHA256 },
    { type: 'hash', value: SHA1.toLowerCase() },
    { type: 'hash', value: MD5 },
    { type: 'domain', value: 'c2.badguy.net' },
  ]);
});

test('issue 13 enrichment: private, loopback and link-local addresses and internal names are marked internal', () => {
  const internal = ['10.1.2.3', '172.16.0.9', '192.168.1.1', '127.0.0.1', '169.254.169.254'];
  const internal6 = ['::1', 'fe80::1', 'fd00::5', '::ffff:10.0.0.1'];
  for (const ip of [...internal, ...internal6, '100.64.0.1', '0.0.0.0', '239.1.1.1']) {
    assert.equal(isInternalIp(ip), true, ip);
  }
  for (const ip of ['8.8.8.8', '203.0.113.9', '2606:4700::1111', '::ffff:8.8.8.8', '172.32.0.1']) {
    assert.equal(isInternalIp(ip), false, ip);
  }
  const iocs = extractIocs([
    {
      data: { srcip: '10.1.2.3', dstip: '8.8.8.8' },
      full_log: 'resolved db.corp.local and example.com',
    },
  ]);
  assert.deepEqual(iocs, [
    { type: 'ip', value: '10.1.2.3', internal: true },
    { type: 'ip', value: '8.8.8.8' },
    { type: 'domain', value: 'db.corp.local', internal: true },
    { type: 'domain', value: 'example.com' },
  ]);
  assert.deepEqual(publicIocs(iocs), [
    { type: 'ip', value: '8.8.8.8' },
    { type: 'domain', value: 'example.com' },
  ]);
});

test('issue 13 enrichment: the monitored agent address and malformed structured values are not indicators', () => {
  const iocs = extractIocs([
    {
      agent: { id: '001', name: 'web-01', ip: '10.0.0.11' },
      data: { srcip: 'unknown', dstip: '999.1.1.1', url: 'javascript:alert(1)' },
      syscheck: { md5_after: 'xyz', sha256_after: SHA256.slice(1) },
    },
  ]);
  assert.deepEqual(iocs, []);
});

test('issue 13 enrichment: file names, class names, times and MAC addresses are not domains or IPs', () => {
  const text =
    'auth.log item.php README.md archive.tar.gz org.example.MyClass 13:45:01 00:1a:2b:3c:4d:5e';
  assert.deepEqual(findDomains(text), []);
  assert.deepEqual(findIps(text), []);
  assert.deepEqual(
    findIps('1.2.3.4.5 10.0.0.256 v=10.0.0.1 [::1]:443').map((m) => m.text),
    ['10.0.0.1', '::1'],
  );
});

test('issue 13 enrichment: recognizers stay linear on a 64 KiB token without a match', () => {
  const blob = 'a'.repeat(64 * 1024);
  const started = performance.now();
  const runs = ['1.', 'a-', 'a:', 'a.'].map((unit) => unit.repeat(20_000));
  // '@', '.', ':' and '://' engage every recognizer; none may rescan the run per position.
  extractIocs([{ full_log: `${blob}@ ${runs.join(' ')} ${blob}:// ${blob}` }]);
  const ms = performance.now() - started;
  assert.ok(ms < 500, `took ${ms.toFixed(1)} ms`);
});
