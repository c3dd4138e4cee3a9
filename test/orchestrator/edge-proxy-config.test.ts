import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import {
  configSha256,
  EdgeProxyConfigError,
  type EdgeTenant,
  MONITOR_PORTS,
  renderEdgeProxyConfig,
} from '../../src/orchestrator/edge-proxy-config.ts';

const run = promisify(execFile);
const HAPROXY = '/usr/sbin/haproxy';
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-edge-proxy-'));
});
after(() => rm(dir, { recursive: true, force: true }));

let fileCount = 0;
async function writeConfig(config: string): Promise<string> {
  const file = join(dir, `haproxy-${fileCount++}.cfg`);
  await writeFile(file, config);
  return file;
}

/** `haproxy -c`: the proxy binary itself judges the config (issue 15 "validated by the proxy"). */
async function haproxyCheck(config: string): Promise<{ code: number; output: string }> {
  const file = await writeConfig(config);
  try {
    const { stdout, stderr } = await run(HAPROXY, ['-c', '-f', file]);
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, output: e.stdout + e.stderr };
  }
}

async function assertValid(config: string): Promise<void> {
  const { code, output } = await haproxyCheck(config);
  assert.equal(code, 0, output);
  assert.match(output, /Configuration file is valid/);
  assert.doesNotMatch(output, /\[WARNING\]/, 'haproxy warns about nothing');
}

function tenant(slug: string, pair: number, extra: Partial<EdgeTenant> = {}): EdgeTenant {
  return {
    slug,
    namespace: `tenant-${slug}`,
    host: `monitor.tenant-${slug}.svc.cluster.local`,
    ports: { events: 20_000 + 2 * pair, enrollment: 20_000 + 2 * pair + 1 },
    ...extra,
  };
}

/** The `listen` sections in order, as `name bind server`. */
function sections(config: string): string[] {
  return [...config.matchAll(/^listen (\S+)\n {4}bind :(\d+)\n {4}server monitor (\S+)$/gm)].map(
    (m) => `${m[1]} ${m[2]} ${m[3]}`,
  );
}

test('issue 15 edge proxy: no tenant renders a config haproxy accepts (health endpoint only)', async () => {
  const config = renderEdgeProxyConfig({ tenants: [] });
  assert.deepEqual(sections(config), []);
  assert.match(config, /^frontend health\n {4}mode http\n {4}bind :8404$/m);
  await assertValid(config);
});

test('issue 15 edge proxy: one tenant gets a TCP section per port of its pair, to its monitor Service', async () => {
  const config = renderEdgeProxyConfig({ tenants: [tenant('acme', 0)] });
  assert.deepEqual(sections(config), [
    'tenant-acme-events 20000 monitor.tenant-acme.svc.cluster.local:1514',
    'tenant-acme-enrollment 20001 monitor.tenant-acme.svc.cluster.local:1515',
  ]);
  assert.match(config, /^ {4}mode tcp$/m);
  assert.match(config, /^ {4}default-server init-addr none resolvers cluster$/m);
  assert.match(config, /^resolvers cluster\n {4}parse-resolv-conf$/m);
  await assertValid(config);
});

test('issue 15 edge proxy: many tenants render sorted by slug, byte-identical whatever the input order', async () => {
  const tenants = Array.from({ length: 300 }, (_, i) =>
    tenant(`t${String(i).padStart(3, '0')}`, i),
  );
  const shuffled = [...tenants].reverse();
  shuffled.push(...shuffled.splice(0, 100));
  const config = renderEdgeProxyConfig({ tenants });
  assert.equal(renderEdgeProxyConfig({ tenants: shuffled }), config);
  assert.equal(configSha256(renderEdgeProxyConfig({ tenants: shuffled })), configSha256(config));
  const names = sections(config).map((s) => s.split(' ')[0]);
  assert.equal(names.length, 600);
  assert.equal(names[0], 'tenant-t000-events');
  assert.equal(names[1], 'tenant-t000-enrollment');
  assert.equal(names[599], 'tenant-t299-enrollment');
  assert.notEqual(
    renderEdgeProxyConfig({ tenants: tenants.slice(1) }),
    config,
    'a tenant less is another config',
  );
  await assertValid(config);
});

test('issue 15 edge proxy: the longest slug and an IP backend still render valid config', async () => {
  const long = `a${'b'.repeat(54)}`; // tenant-<slug> is a 63-character namespace
  const config = renderEdgeProxyConfig({
    tenants: [tenant(long, 5), tenant('ip', 6, { host: '10.96.0.12' })],
  });
  assert.equal(sections(config).length, 4);
  await assertValid(config);
});

test('issue 15 edge proxy: the check can fail — haproxy -c rejects a broken config', async () => {
  const good = renderEdgeProxyConfig({ tenants: [tenant('acme', 0)] });
  const broken = [
    `${good}\nlisten tenant-acme-extra\n    bind :20000\n    server x nowhere:notaport\n`,
    good.replace('mode tcp', 'mode sideways'),
    `${good}    no-such-keyword 1\n`,
  ];
  for (const config of broken) {
    const { code, output } = await haproxyCheck(config);
    assert.notEqual(code, 0, `accepted:\n${config.slice(-200)}`);
    assert.match(output, /ALERT/);
  }
});

test('issue 15 edge proxy: hostile names and ports are refused, never written into the config', () => {
  const hostile: Array<[string, Partial<EdgeTenant>]> = [
    ['slug with a newline', { slug: 'acme\n    bind :22' }],
    ['slug with a space', { slug: 'acme bind' }],
    ['slug with a comment', { slug: 'acme#x' }],
    ['slug with a quote', { slug: 'acme"x' }],
    ['uppercase slug', { slug: 'Acme' }],
    ['empty slug', { slug: '' }],
    ['slug of 64 characters', { slug: 'a'.repeat(64) }],
    ['namespace with a newline', { namespace: 'tenant-acme\nglobal' }],
    ['host with a newline', { host: 'monitor.tenant-acme.svc\n    server evil 1.2.3.4:22' }],
    ['host with a port', { host: 'evil.example:22' }],
    ['host with a space', { host: 'monitor check inter 1' }],
    ['host with a trailing dot-dot', { host: 'monitor..svc' }],
    ['port 0', { ports: { events: 0, enrollment: 20_001 } }],
    ['port above 65535', { ports: { events: 20_000, enrollment: 65_536 } }],
    ['fractional port', { ports: { events: 20_000.5, enrollment: 20_001 } }],
    ['NaN port', { ports: { events: Number.NaN, enrollment: 20_001 } }],
    ['bad target port', { targets: { events: 1514, enrollment: -1 } }],
  ];
  for (const [what, patch] of hostile) {
    assert.throws(
      () =>
        renderEdgeProxyConfig({ tenants: [tenant('ok', 1), { ...tenant('acme', 0), ...patch }] }),
      EdgeProxyConfigError,
      what,
    );
  }
  assert.throws(
    () => renderEdgeProxyConfig({ tenants: [tenant('a', 0), tenant('b', 0)] }),
    /port 20000 of b is already a's/,
  );
  assert.throws(
    () => renderEdgeProxyConfig({ tenants: [tenant('a', 0), tenant('a', 1)] }),
    /tenant a appears twice/,
  );
  assert.throws(
    () => renderEdgeProxyConfig({ tenants: [tenant('a', 0)], healthPort: 20_001 }),
    /already the health endpoint's/,
  );
});

// --- the real proxy on loopback -------------------------------------------------------------

/** A TCP server answering every chunk with `<tag>:<chunk>`: which backend got the bytes. */
async function taggedEcho(tag: string): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => {
    socket.on('data', (chunk) => socket.write(`${tag}:${chunk.toString('utf8')}`));
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  return { server, port: address.port };
}

/** A port free right now (the kernel's pick); haproxy binds it a moment later. */
async function freePort(): Promise<number> {
  const { server, port } = await taggedEcho('probe');
  server.close();
  await once(server, 'close');
  return port;
}

async function exchange(port: number, message: string): Promise<string> {
  const socket = new Socket();
  socket.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write(message);
  const [reply] = (await once(socket, 'data')) as [Buffer];
  socket.destroy();
  return reply.toString('utf8');
}

async function waitForHealth(port: number, child: ChildProcess): Promise<Response> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`haproxy exited with ${child.exitCode}`);
    try {
      return await fetch(`http://127.0.0.1:${port}/healthz`);
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(50);
    }
  }
}

test('issue 15 edge proxy: bytes through a tenant’s port pair reach that tenant’s monitor and no other', {
  timeout: 60_000,
}, async () => {
  const backends = {
    acme: {
      events: await taggedEcho('acme-events'),
      enrollment: await taggedEcho('acme-enrollment'),
    },
    beta: {
      events: await taggedEcho('beta-events'),
      enrollment: await taggedEcho('beta-enrollment'),
    },
  };
  const ports = [await freePort(), await freePort(), await freePort(), await freePort()];
  const healthPort = await freePort();
  const [acmeEvents = 0, acmeEnrollment = 0, betaEvents = 0, betaEnrollment = 0] = ports;
  const config = renderEdgeProxyConfig({
    healthPort,
    tenants: (['acme', 'beta'] as const).map((slug, i) => ({
      slug,
      namespace: `tenant-${slug}`,
      host: '127.0.0.1',
      ports: { events: ports[2 * i] ?? 0, enrollment: ports[2 * i + 1] ?? 0 },
      targets: { events: backends[slug].events.port, enrollment: backends[slug].enrollment.port },
    })),
  });
  await assertValid(config);
  const child = spawn(HAPROXY, ['-db', '-f', await writeConfig(config)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exited = once(child, 'exit');
  const pid = child.pid;
  assert.ok(pid);
  try {
    const health = await waitForHealth(healthPort, child).catch((error: Error) => {
      throw new Error(`${error.message}\n${stderr}`);
    });
    assert.equal(health.status, 200);
    const elsewhere = await fetch(`http://127.0.0.1:${healthPort}/stats`);
    assert.equal(elsewhere.status, 404, 'the health port serves /healthz only');
    assert.equal(await exchange(acmeEvents, 'hello'), 'acme-events:hello');
    assert.equal(await exchange(acmeEnrollment, 'enroll me'), 'acme-enrollment:enroll me');
    assert.equal(await exchange(betaEvents, 'hello'), 'beta-events:hello');
    assert.equal(await exchange(betaEnrollment, 'enroll me'), 'beta-enrollment:enroll me');
    // The monitor's own ports are not what the proxy listens on.
    assert.notEqual(acmeEvents, MONITOR_PORTS.events);
  } finally {
    if (child.exitCode === null) process.kill(pid, 'SIGTERM');
    await exited;
    for (const pair of Object.values(backends)) {
      for (const { server } of Object.values(pair)) server.close();
    }
  }
});
