import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import tls from 'node:tls';
import { promisify } from 'node:util';
import {
  AGENT_PACKAGES,
  installCommands,
} from '../../src/domains/enrollment/enrollment-commands.ts';
import {
  ENROLLMENT_CA_KEYS,
  ENROLLMENT_TLS_SECRET,
  enrollmentCaProblem,
  enrollmentNamesOf,
  enrollmentTlsProblem,
  enrollmentTlsRevision,
  issueEnrollmentCa,
  issueEnrollmentTls,
} from '../../src/orchestrator/enrollment-pki.ts';

// The enrollment certificate svc issues for a tenant's manager (docs/enrollment.md "What svc
// does"), checked the way an agent checks it: a real TLS handshake and openssl's own verify,
// both against the tenant's CA and the address the agent dials (Wazuh's agent-auth compares the
// certificate's subjectAltName with the manager address it was given).

const run = promisify(execFile);
const DAY = 24 * 3_600_000;
const NOW = new Date();
const K = ENROLLMENT_TLS_SECRET.keys;
const NAMES = ['agents.acme.example', '127.0.0.1', 'monitor.tenant-acme.svc'];
const scratch = await mkdtemp(path.join(tmpdir(), 'svc-enrollment-pki-'));
after(() => rm(scratch, { recursive: true, force: true }));

const ca = await issueEnrollmentCa(NOW);
const otherCa = await issueEnrollmentCa(NOW);
const issued = await issueEnrollmentTls(ca, NAMES, NOW);

/** Serves `data` as authd does on 1515 and dials it like an agent: `host` is the manager address. */
async function handshake(data: Record<string, string>, trust: string, host: string) {
  const server = tls.createServer({ cert: data[K.cert], key: data[K.key] }, (s) => s.end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  try {
    return await new Promise<string>((resolve) => {
      const socket = tls.connect({
        host: '127.0.0.1',
        port,
        ca: trust,
        // Node checks the certificate against this name, as agent-auth checks the address.
        ...(host === '127.0.0.1' ? {} : { servername: host }),
        checkServerIdentity: (_servername, cert) => tls.checkServerIdentity(host, cert),
      });
      socket.once('secureConnect', () => {
        socket.end();
        resolve('ok');
      });
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
  } finally {
    server.close();
  }
}

test('enrollment TLS: the manager certificate chains to the tenant CA and names every address agents dial (DNS and IP)', async () => {
  const cert = new X509Certificate(issued[K.cert]);
  assert.ok(cert.verify(new X509Certificate(ca[ENROLLMENT_CA_KEYS.ca]).publicKey));
  assert.deepEqual(enrollmentNamesOf(cert).sort(), [...NAMES].sort());
  assert.equal(issued[K.ca], ca[ENROLLMENT_CA_KEYS.ca]);
  assert.equal(await handshake(issued, ca[ENROLLMENT_CA_KEYS.ca], '127.0.0.1'), 'ok');
  assert.equal(await handshake(issued, ca[ENROLLMENT_CA_KEYS.ca], 'agents.acme.example'), 'ok');
  // Another address, or another tenant's CA: the agent refuses to enroll.
  assert.equal(
    await handshake(issued, ca[ENROLLMENT_CA_KEYS.ca], 'agents.globex.example'),
    'ERR_TLS_CERT_ALTNAME_INVALID',
  );
  assert.match(
    await handshake(issued, otherCa[ENROLLMENT_CA_KEYS.ca], '127.0.0.1'),
    /UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT/,
  );
  const files = {
    ca: path.join(scratch, 'ca.pem'),
    cert: path.join(scratch, 'sslmanager.cert'),
  };
  await writeFile(files.ca, ca[ENROLLMENT_CA_KEYS.ca]);
  await writeFile(files.cert, issued[K.cert]);
  const verify = (...extra: string[]) =>
    run('openssl', ['verify', '-CAfile', files.ca, '-purpose', 'sslserver', ...extra, files.cert]);
  assert.match((await verify('-verify_ip', '127.0.0.1')).stdout, /OK/);
  assert.match((await verify('-verify_hostname', 'agents.acme.example')).stdout, /OK/);
  await assert.rejects(verify('-verify_hostname', 'agents.globex.example'));
});

test('enrollment TLS: kept while fit; re-issued for new addresses, near expiry, another CA or a foreign key', async () => {
  assert.equal(enrollmentTlsProblem(issued, ca, NAMES, NOW), undefined);
  assert.equal(enrollmentTlsProblem(issued, ca, [...NAMES].reverse(), NOW), undefined);
  assert.equal(enrollmentTlsProblem(undefined, ca, NAMES, NOW), 'missing');
  assert.match(
    enrollmentTlsProblem(issued, ca, [...NAMES, '203.0.113.7'], NOW) ?? '',
    /agents use .*203\.0\.113\.7/,
  );
  const expiry = Date.parse(new X509Certificate(issued[K.cert]).validTo);
  assert.equal(enrollmentTlsProblem(issued, ca, NAMES, new Date(expiry - 31 * DAY)), undefined);
  assert.match(
    enrollmentTlsProblem(issued, ca, NAMES, new Date(expiry - 29 * DAY)) ?? '',
    /expires/,
  );
  assert.match(enrollmentTlsProblem(issued, otherCa, NAMES, NOW) ?? '', /not issued by/);
  const other = await issueEnrollmentTls(ca, NAMES, NOW);
  assert.match(
    enrollmentTlsProblem({ ...issued, [K.key]: other[K.key] }, ca, NAMES, NOW) ?? '',
    /key does not match/,
  );
  assert.notEqual(enrollmentTlsRevision(issued), enrollmentTlsRevision(other));
  assert.equal(enrollmentTlsRevision(issued), enrollmentTlsRevision({ ...issued }));
  assert.equal(enrollmentCaProblem(ca, NOW), undefined);
  assert.equal(enrollmentCaProblem(undefined, NOW), 'missing');
  assert.match(
    enrollmentCaProblem(
      { ...ca, [ENROLLMENT_CA_KEYS.key]: otherCa[ENROLLMENT_CA_KEYS.key] },
      NOW,
    ) ?? '',
    /key does not match/,
  );
});

test('enrollment commands: the Wazuh deployment variables with the tenant’s address, ports, password and CA; the Linux scripts parse', async () => {
  const input = {
    slug: 'acme',
    address: '203.0.113.10',
    ports: { events: 20_004, enrollment: 20_005 },
    password: 'Zm9vYmFyLWJhei1xdXV4LXNlY3JldA',
    caPem: ca[ENROLLMENT_CA_KEYS.ca],
  };
  const commands = installCommands(input);
  for (const [kind, script] of [
    ['deb', commands.deb],
    ['rpm', commands.rpm],
  ] as const) {
    assert.match(script, /WAZUH_MANAGER='203\.0\.113\.10' WAZUH_MANAGER_PORT='20004'/);
    assert.match(script, /WAZUH_REGISTRATION_SERVER='203\.0\.113\.10'/);
    assert.match(script, /WAZUH_REGISTRATION_PORT='20005'/);
    assert.match(script, new RegExp(`WAZUH_REGISTRATION_PASSWORD='${input.password}'`));
    assert.match(script, /WAZUH_REGISTRATION_CA='\/etc\/ssl\/certs\/svc-enrollment-acme\.pem'/);
    assert.match(script, /WAZUH_AGENT_GROUP='default'/);
    assert.ok(script.includes(input.caPem.trimEnd()), `${kind} writes the CA`);
    assert.ok(script.includes(AGENT_PACKAGES[kind]), `${kind} installs its package`);
    const file = path.join(scratch, `${kind}.sh`);
    await writeFile(file, script);
    await run('bash', ['-n', file]);
    // The here-document writes exactly the CA: run it with tee replaced by cat.
    const heredoc = script.split('\n').slice(0, script.split('\n').indexOf('SVC_CA') + 1);
    const { stdout } = await run('bash', [
      '-c',
      heredoc.join('\n').replace(/^sudo tee \S+ >\/dev\/null/, 'cat'),
    ]);
    assert.equal(stdout.trimEnd(), input.caPem.trimEnd());
  }
  assert.match(commands.msi, /\/i wazuh-agent-4\.9\.2-1\.msi \/q/);
  assert.match(commands.msi, /WAZUH_MANAGER="203\.0\.113\.10" WAZUH_MANAGER_PORT="20004"/);
  assert.match(commands.msi, /WAZUH_REGISTRATION_PORT="20005"/);
  assert.match(commands.msi, /WAZUH_REGISTRATION_CA="C:\\ProgramData\\svc-enrollment-acme\.pem"/);
  assert.ok(commands.msi.includes(input.caPem.trimEnd()));
});
