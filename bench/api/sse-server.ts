/**
 * One `svc serve` replica of the SSE phase (bench/api/sse.ts) in a process of its own, so its
 * CPU and memory are its own and the client sockets do not share its event loop. It is the app
 * from the composition root (bench/api/servers.ts startApp), driven over the IPC channel:
 *   parent -> {type:'start', target}  child -> {type:'listening', url}
 *   parent -> {type:'sample'}  -> {type:'sample', rss, peakRss, cpuUs, loopP99Ms, hub, watch}
 *   parent -> {type:'memory'}  -> {type:'memory', rss, heapUsed, external}: after a full GC
 *   parent -> {type:'recheck'} -> {type:'rechecked', ms, cpuMs, leases}: one full credential-watch pass
 *   parent -> {type:'stop'}    -> exits
 */
import { readFile } from 'node:fs/promises';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { DatabaseTarget } from '../../src/db/target.ts';
import { serveParent } from './child.ts';
import { createClock, startApp } from './servers.ts';

const RSS_SAMPLE_MS = 100;

// A full collection before a memory sample, so per-stream heap figures are live objects only.
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

let app: Awaited<ReturnType<typeof startApp>> | undefined;
let peakRss = process.memoryUsage.rss();
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
}, RSS_SAMPLE_MS);
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

/** The kernel's high-water mark of this process's resident set (catches peaks between samples). */
async function kernelPeak(): Promise<number> {
  const status = await readFile('/proc/self/status', 'utf8');
  const kib = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
  return kib === undefined ? 0 : Number(kib) * 1024;
}

function running() {
  if (!app) throw new Error('not started');
  return app;
}

serveParent(async (message) => {
  switch (message.type) {
    case 'start':
      app = await startApp(message.target as DatabaseTarget, createClock());
      return { type: 'listening', url: app.url };
    case 'sample': {
      const { hub, watch } = { hub: running().events.status(), watch: running().watch.status() };
      const cpu = process.cpuUsage();
      const answer = {
        type: 'sample',
        rss: process.memoryUsage.rss(),
        peakRss: Math.max(peakRss, await kernelPeak()),
        cpuUs: cpu.user + cpu.system,
        loopP99Ms: loop.percentile(99) / 1e6,
        loopMaxMs: loop.max / 1e6,
        hub,
        watch,
      };
      loop.reset();
      return answer;
    }
    case 'memory': {
      collectGarbage();
      const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
      return { type: 'memory', rss, heapUsed, external: external + arrayBuffers };
    }
    case 'recheck': {
      const { watch } = running();
      const started = performance.now();
      const cpu = process.cpuUsage();
      watch.recheckAll();
      await watch.settled();
      const used = process.cpuUsage(cpu);
      return {
        type: 'rechecked',
        ms: performance.now() - started,
        cpuMs: (used.user + used.system) / 1000,
        leases: watch.status().watched,
      };
    }
    case 'stop':
      clearInterval(sampler);
      await app?.close();
      process.exit(0);
      return { type: 'stopped' };
    default:
      throw new Error(`unknown message ${message.type}`);
  }
});
