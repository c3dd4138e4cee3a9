/**
 * The server side of bench/login.ts's flood phases, in a process of its own: the load
 * generator's 1,000 sockets would otherwise share (and slow) the event loop being measured,
 * and the memory figures would include the generator's.
 *
 * It is `svc serve`'s app (src/app/compose.ts, @hono/node-server on 127.0.0.1, logging JSON
 * lines at `info` to stdout, which the parent drains as a container runtime would), driven
 * over the IPC channel of `fork` (node --expose-gc --import tsx):
 *   parent -> {type:'start', target, auth}        child -> {type:'listening', url}
 *   parent -> {type:'seed', users:[{email,password}]}   -> {type:'seeded'}
 *   parent -> {type:'sample'}  -> {type:'sample', heapUsed (after a full GC), rss, loopMaxMs, loopP99Ms}
 *      (the event loop's delay since the previous sample, from monitorEventLoopDelay)
 *   parent -> {type:'stop'}    -> exits
 */
import { generateKeyPairSync } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { serve } from '@hono/node-server';
import { composeApi, composeCore } from '../src/app/compose.ts';
import type { AuthConfig } from '../src/config/index.ts';
import { loadConfig } from '../src/config/index.ts';
import type { SystemGate } from '../src/db/system-gate.ts';
import type { DatabaseTarget } from '../src/db/target.ts';
import { setPassword } from '../src/domains/users/user-repository.ts';
import { createLogger } from '../src/log/index.ts';

type Message =
  | { type: 'start'; target: DatabaseTarget; auth: AuthConfig }
  | { type: 'seed'; users: { email: string; password: string }[] }
  | { type: 'sample' }
  | { type: 'stop' };

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('bench/login-server.ts needs node --expose-gc');

const NO_SYSTEM_GATE: SystemGate = {
  withSystem: () => Promise.reject(new Error('the login benchmark provides no system gate')),
  close: async () => undefined,
};

const send = (message: Record<string, unknown>) => process.send?.(message);
const loop = monitorEventLoopDelay({ resolution: 10 });
let running: Awaited<ReturnType<typeof start>> | undefined;

async function start(target: DatabaseTarget, auth: AuthConfig) {
  const pem = generateKeyPairSync('ed25519')
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  const core = await composeCore({
    config: {
      ...loadConfig({}),
      authMode: 'internal',
      // The load generator is the loopback proxy that names each simulated client.
      trustedProxyCidrs: ['127.0.0.0/8'],
      tokenKey: { kind: 'pem', pem },
      auth,
    },
    logger: createLogger('info'),
    target,
  });
  const api = await composeApi({ ...core, system: NO_SYSTEM_GATE }, { embedded: true });
  const server = serve({ fetch: api.app.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  loop.enable();
  return { core, api, server, url: `http://127.0.0.1:${port}` };
}

async function seed(users: { email: string; password: string }[]) {
  if (!running) throw new Error('seed before start');
  const { core } = running;
  const hashes = await Promise.all(users.map((user) => core.hasher.hash(user.password)));
  await core.db.withoutTenant(async (tx) => {
    for (const [i, user] of users.entries()) {
      const { rows } = await tx.query<{ id: string }>(
        `INSERT INTO users (tenant_id, email, role) VALUES (NULL, $1, 'analyst') RETURNING id`,
        [user.email],
      );
      await setPassword(tx, rows[0]?.id ?? '', hashes[i] ?? '', false, new Date());
    }
  });
}

function sample() {
  gc?.();
  const { heapUsed, rss } = process.memoryUsage();
  const result = {
    type: 'sample',
    heapUsed,
    rss,
    loopMaxMs: loop.max / 1e6,
    loopP99Ms: loop.percentile(99) / 1e6,
  };
  loop.reset();
  return result;
}

async function stop() {
  if (running) {
    const { server, api, core } = running;
    (server as import('node:http').Server).closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await api.close();
    await core.close();
  }
  process.exit(0);
}

process.on('message', (message: Message) => {
  const handle = async () => {
    if (message.type === 'start') {
      running = await start(message.target, message.auth);
      send({ type: 'listening', url: running.url });
    } else if (message.type === 'seed') {
      await seed(message.users);
      send({ type: 'seeded' });
    } else if (message.type === 'sample') {
      send(sample());
    } else {
      await stop();
    }
  };
  handle().catch((error: unknown) => {
    send({ type: 'error', message: String((error as Error)?.stack ?? error) });
  });
});
// The parent gone (killed, crashed): nothing would ever stop this server.
process.on('disconnect', () => process.exit(1));
