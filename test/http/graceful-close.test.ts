import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { gracefulClose } from '../../src/http/graceful-close.ts';

/** A server whose answers take `ms`, as a request in a transaction does. */
async function slowServer(ms: number): Promise<{ server: Server; url: string; served(): number }> {
  let served = 0;
  const server = createServer((request, response) => {
    if (request.url === '/stream') {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(': open\n\n');
      return;
    }
    setTimeout(() => {
      served += 1;
      response.end('ok');
    }, ms);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, served: () => served };
}

/** Posts on one keep-alive connection, back to back, until told to stop; counts outcomes. */
function poller(url: string) {
  const outcomes = { ok: 0, failed: 0 };
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      try {
        const response = await fetch(`${url}/poll`, { method: 'POST', body: '{}' });
        await response.text();
        outcomes.ok += 1;
      } catch {
        outcomes.failed += 1;
      }
      await sleep(10);
    }
  })();
  return {
    outcomes,
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

test('a client polling on a keep-alive connection does not keep a closing server alive; its running request still gets its answer', async () => {
  const { server, url, served } = await slowServer(200);
  const closing = gracefulClose(server);
  const client = poller(url);
  try {
    // Close while a request runs on the keep-alive connection (the case Node keeps serving).
    while (served() < 2) await sleep(20);
    await sleep(50);
    const okBefore = client.outcomes.ok;
    const started = Date.now();
    // Far longer grace than the test could wait: closing must not need it.
    await closing.close(60_000);
    const took = Date.now() - started;
    assert.ok(took < 30_000, `closed in ${took} ms, without waiting out the grace period`);
    // The request that was running when close began was answered, not cut.
    while (client.outcomes.ok + client.outcomes.failed === okBefore) await sleep(10);
    assert.equal(client.outcomes.ok, okBefore + 1, 'the running request was answered');
    // After that, the client reaches no server.
    const failedBefore = client.outcomes.failed;
    while (client.outcomes.failed === failedBefore) await sleep(10);
    assert.equal(client.outcomes.ok, okBefore + 1, 'nothing was served after the close');
  } finally {
    await client.stop();
    server.closeAllConnections();
  }
});

test('an open event stream is cut once the grace period is over', async () => {
  const { server, url } = await slowServer(0);
  const closing = gracefulClose(server);
  const stream = await fetch(`${url}/stream`);
  const reader = stream.body?.getReader();
  assert.ok(reader);
  await reader.read();
  const started = Date.now();
  await closing.close(300);
  assert.ok(Date.now() - started >= 250, 'the stream had its grace period');
  await assert.rejects(async () => {
    for (;;) if ((await reader.read()).done) throw new Error('ended without a cut');
  }, /terminated/);
});
