/**
 * A share of the SSE phase's subscribers (bench/api/sse.ts) in a process of its own: 10,000
 * sockets and their parsing in the server's process (or in one client process) would measure
 * the load generator, not svc. Driven over the IPC channel:
 *   parent -> {type:'connect', plans: StreamPlan[]}   child -> {type:'connected'}
 *   parent -> {type:'drain', perTenant: number[], timeoutMs}
 *            -> {type:'deliveries', clients: [{tenant, tenantId, deliveries: [id, tenant, at][]}],
 *                cpuUs, drained}  once every stream has its tenant's count (or at the timeout)
 *   parent -> {type:'stop'}  -> exits
 */
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { serveParent } from './child.ts';
import { connectAll, type SseClient, type StreamPlan } from './sse-client.ts';

const DRAIN_POLL_MS = 50;

const clients: SseClient[] = [];
let agent: http.Agent | undefined;

async function drain(perTenant: number[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  const done = () =>
    clients.every((client) => client.deliveries.length >= (perTenant[client.tenant] ?? 0));
  while (!done() && Date.now() < deadline) await sleep(DRAIN_POLL_MS);
  return done();
}

serveParent(async (message) => {
  switch (message.type) {
    case 'connect': {
      const plans = message.plans as StreamPlan[];
      agent = new http.Agent({ keepAlive: false, maxSockets: plans.length + 1 });
      await connectAll(agent, plans, clients);
      return { type: 'connected', streams: clients.length };
    }
    case 'drain': {
      const drained = await drain(message.perTenant as number[], message.timeoutMs as number);
      const cpu = process.cpuUsage();
      return {
        type: 'deliveries',
        drained,
        cpuUs: cpu.user + cpu.system,
        clients: clients.map((client) => ({
          tenant: client.tenant,
          tenantId: client.tenantId,
          deliveries: client.deliveries.map((d) => [d.id, d.payloadTenant, d.at]),
        })),
      };
    }
    case 'stop':
      for (const client of clients) client.request.destroy();
      agent?.destroy();
      process.exit(0);
      return { type: 'stopped' };
    default:
      throw new Error(`unknown message ${message.type}`);
  }
});
