import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/index.ts';
import {
  checkOutboundUrl,
  type OutboundPolicy,
  OutboundUrlError,
  STRICT_OUTBOUND,
  safeFetch,
} from '../../src/net/outbound-url.ts';
import { loopbackCertificate } from '../support/loopback-tls.ts';

const refused = (url: string, policy: OutboundPolicy = STRICT_OUTBOUND) =>
  assert.throws(() => checkOutboundUrl(url, policy), OutboundUrlError, url);

test('issue 18 item 2: loopback, link-local, metadata, cluster-internal and private targets are refused', () => {
  for (const url of [
    'https://127.0.0.1/',
    'https://[::1]/',
    'http://169.254.169.254/latest/meta-data/',
    'http://metadata.google.internal/computeMetadata/v1/',
    'https://kubernetes.default.svc/',
    'https://kubernetes.default/',
    'https://kubernetes/',
    'http://127.0.0.1:2379/v3/kv/range',
    'https://svc-api.svc-system.svc.cluster.local:8080/',
    'https://svc-api.svc-system.svc/',
    'https://api.ns.svc.corp-cluster.example/',
    'https://printer/',
    'https://localhost/',
    'https://foo.localhost/',
    'https://10.1.2.3/',
    'https://172.20.0.1/',
    'https://192.168.1.1/',
    'https://100.64.0.1/',
    'https://[fd00:ec2::254]/',
    'https://[fc00::1]/',
    'https://[fe80::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:a9fe:a9fe]/',
    'https://[64:ff9b::a9fe:a9fe]/',
    'https://[2002:7f00:1::]/',
    'http://2130706433/',
    'http://0x7f.1/',
    'http://017700000001/',
    'http://127.1/',
    'http://0.0.0.0/',
    'https://kubernetes.default.svc./',
  ]) {
    refused(url);
  }
});

test('issue 18 item 1: URL syntax and ports are checked (port 70000, port 0, credentials in the URL)', () => {
  refused('https://llm.example.com:70000/');
  refused('https://llm.example.com:0/');
  refused('https://user:pw@llm.example.com/');
  refused('not a url');
  assert.throws(() => checkOutboundUrl('http://llm.example.com/', STRICT_OUTBOUND, ['https:']));
});

test('issue 18 item 2: public names and addresses pass', () => {
  for (const url of [
    'https://llm.example.com/v1',
    'https://api.openai.com:443/v1',
    'http://8.8.8.8/',
    'https://[2606:4700::1111]/',
    'https://svc.example.com/',
    'https://[64:ff9b::808:808]/',
    'https://[2002:808:808::]/',
  ]) {
    assert.equal(checkOutboundUrl(url, STRICT_OUTBOUND).href, new URL(url).href);
  }
});

test('issue 18 item 2: the install can allow internal targets explicitly (CIDRs and host names)', () => {
  const policy = {
    allowCidrs: ['10.20.0.0/16', 'fd00:1::/32'],
    allowHosts: ['llm-gateway', '*.corp.internal'],
  };
  for (const url of [
    'https://10.20.3.4/',
    'https://[fd00:1::5]/',
    'https://llm-gateway/',
    'https://llm.corp.internal/',
  ]) {
    checkOutboundUrl(url, policy);
  }
  refused('https://10.21.0.1/', policy);
  refused('https://corp.internal/', policy);
  refused('https://169.254.169.254/', policy);
});

test('issue 18 item 2: SVC_OUTBOUND_ALLOW_CIDRS / SVC_OUTBOUND_ALLOW_HOSTS are read, validated and default to nothing', () => {
  assert.deepEqual(loadConfig({}).outbound, { allowCidrs: [], allowHosts: [] });
  assert.deepEqual(
    loadConfig({
      SVC_OUTBOUND_ALLOW_CIDRS: '10.20.0.0/16, fd00:1::/32',
      SVC_OUTBOUND_ALLOW_HOSTS: 'llm-gateway, *.corp.internal',
    }).outbound,
    { allowCidrs: ['10.20.0.0/16', 'fd00:1::/32'], allowHosts: ['llm-gateway', '*.corp.internal'] },
  );
  assert.throws(() => loadConfig({ SVC_OUTBOUND_ALLOW_CIDRS: '10.0.0.0/33' }), ConfigError);
  assert.throws(() => loadConfig({ SVC_OUTBOUND_ALLOW_HOSTS: 'https://x.example' }), ConfigError);
});

test('issue 13: SVC_OUTBOUND_CA_FILE adds a CA to the system roots for outbound HTTPS (a self-hosted model server)', async () => {
  assert.equal(
    loadConfig({ SVC_OUTBOUND_CA_FILE: '/etc/svc/ca.pem' }).outbound.caFile,
    '/etc/svc/ca.pem',
  );
  const tls = await loopbackCertificate();
  const secure = createHttpsServer(tls, (_req, res) => res.end('trusted'));
  await new Promise<void>((resolve) => secure.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(secure.address() as AddressInfo).port}/`;
  const loopback = { allowCidrs: ['127.0.0.0/8'], allowHosts: [] };
  try {
    await assert.rejects(safeFetch(url, {}, loopback), /self-signed|certificate/);
    const res = await safeFetch(url, {}, { ...loopback, ca: tls.cert });
    assert.equal(await res.text(), 'trusted');
  } finally {
    secure.close();
  }
});

let server: Server;
let port: number;
let hits: string[];
before(async () => {
  hits = [];
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    if (req.url === '/to-metadata') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      res.end();
    } else if (req.url === '/to-loopback-name') {
      res.writeHead(307, { location: `http://127.0.0.2:${port}/secret` });
      res.end();
    } else if (req.url === '/to-ok') {
      res.writeHead(302, { location: '/ok' });
      res.end();
    } else {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    }
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  port = (server.address() as AddressInfo).port;
});
after(() => new Promise<void>((r) => server.close(() => r())));

test('issue 18 item 2: safeFetch refuses a server on 127.0.0.1 by default and reaches it when allowed', async () => {
  hits = [];
  await assert.rejects(safeFetch(`http://127.0.0.1:${port}/ok`), OutboundUrlError);
  assert.deepEqual(hits, [], 'no connection was made');
  const res = await safeFetch(
    `http://127.0.0.1:${port}/ok`,
    {},
    {
      allowCidrs: ['127.0.0.1/32'],
      allowHosts: [],
    },
  );
  assert.deepEqual([res.status, await res.text()], [200, 'ok']);
});

test('issue 18 item 2: safeFetch re-checks every redirect hop and never follows one to an internal target', async () => {
  const allowLoopback1 = { allowCidrs: ['127.0.0.1/32'], allowHosts: [] };
  hits = [];
  await assert.rejects(
    safeFetch(`http://127.0.0.1:${port}/to-metadata`, {}, allowLoopback1),
    OutboundUrlError,
  );
  await assert.rejects(
    safeFetch(`http://127.0.0.1:${port}/to-loopback-name`, {}, allowLoopback1),
    OutboundUrlError,
  );
  assert.deepEqual(
    hits,
    ['/to-metadata', '/to-loopback-name'],
    'the redirect targets were not called',
  );
  const ok = await safeFetch(`http://127.0.0.1:${port}/to-ok`, {}, allowLoopback1);
  assert.deepEqual([ok.status, await ok.text()], [200, 'ok']);
});

test('issue 18 item 2: safeFetch refuses a name when any address it resolves to is internal (checked at connect time)', async () => {
  hits = [];
  const resolve = async () => [
    { address: '93.184.216.34', family: 4 },
    { address: '127.0.0.1', family: 4 },
  ];
  await assert.rejects(
    safeFetch(`http://rebind.example.com:${port}/ok`, { resolve }),
    /resolves to internal address 127\.0\.0\.1/,
  );
  // The address the socket gets is the one checked: a name resolving only to the allowed
  // loopback server reaches it.
  const only = async () => [{ address: '127.0.0.1', family: 4 }];
  const res = await safeFetch(
    `http://llm.example.com:${port}/ok`,
    { resolve: only },
    { allowCidrs: ['127.0.0.1/32'], allowHosts: [] },
  );
  assert.equal(res.status, 200);
  assert.deepEqual(hits, ['/ok']);
});
