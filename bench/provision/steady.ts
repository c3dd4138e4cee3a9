/**
 * bench:provision's second part: every tenant active, a real `svc orchestrator` OS process
 * (src/cli/orchestrator.ts, as the system chart's orchestrator Deployment runs it) reconciles
 * them. What it reports comes from outside that process: its log line per pass
 * (`reconciliation pass done`), its /metrics (`svc_kube_requests_total`), a helm wrapper that
 * counts spawns, /proc for its memory, pg_stat_activity for its connections.
 */
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException, type CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type pg from 'pg';
import { releaseRecord } from '../../src/cluster/snapshot.ts';
import { freePort } from '../../src/db/embedded.ts';
import type { DatabaseTarget } from '../../src/db/target.ts';
import { externalDatabaseEnv } from '../../test/support/database.ts';
import { type SvcProcess, startSvcProcess } from '../../test/support/svc-process.ts';
import { mib, processMemory, sampleRss, sampleSockets } from './samplers.ts';

export interface SteadyContext {
  dir: string;
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  binDir: string;
  target: DatabaseTarget;
  mssp: pg.Pool;
  /** PostgreSQL's port, and the pooler's when there is one: the connections counted. */
  ports: Record<string, number>;
  env: Record<string, string>;
  /** The tenants (all active); the drift probe deletes one's namespace. */
  tenants: { id: string; slug: string }[];
  phase(name: string): void;
}

interface PassLine {
  selected: number;
  done: number;
  busy: number;
  failed: number;
  ms: number;
  /** When the pass ended (the log line's time), epoch ms. */
  endedAt: number;
}

export interface PassFigures {
  pass: PassLine;
  requests: Map<string, number>;
  helmSpawns: number;
}

export interface SteadyReport {
  passes: PassFigures[];
  rssPeak: number;
  rssAfter: number;
  /** The process's own connections at their peak, by where they go. */
  sockets: Record<string, number>;
  /** V8 heap right after pass 1. */
  heap: { used: number; total: number };
  capped?: PooledFigures & { capMiB: number };
  drift?: DriftFigures;
  pooled?: PooledFigures;
}

export interface PooledFigures {
  pass: PassLine;
  rssPeak: number;
  sockets: Record<string, number>;
}

export interface DriftFigures {
  slug: string;
  deletedAfterMs: number;
  /** Passes that ended between the namespace being gone and the repair being recorded. */
  passesStartedAfterGone: number;
  foundAfterMs?: number;
  findings?: unknown;
  namespaceBack: boolean;
  releaseDeployed: boolean;
  terminatingSeen: boolean;
}

/** One orchestrator process and what it says. */
class Orchestrator {
  private constructor(
    readonly svc: SvcProcess,
    readonly metricsUrl: string,
    readonly spawnLog: string,
  ) {}

  static async start(
    ctx: SteadyContext,
    name: string,
    extra: Record<string, string>,
  ): Promise<Orchestrator> {
    const dir = await mkdtemp(join(ctx.dir, `${name}-`));
    const spawnLog = join(dir, 'helm-spawns');
    const helm = join(dir, 'helm');
    await writeFile(spawnLog, '');
    // Counts every helm process the orchestrator starts, then is helm.
    await writeFile(
      helm,
      `#!/bin/sh\necho "$1" >> '${spawnLog}'\nexec '${join(ctx.binDir, 'helm')}' "$@"\n`,
    );
    await chmod(helm, 0o755);
    const metricsPort = await freePort();
    const svc = await startSvcProcess({
      name,
      command: 'orchestrator',
      ready: (l) => l.msg === 'orchestrator running',
      timeoutMs: 120_000,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        SVC_DATA_DIR: dir,
        SVC_LOG_LEVEL: 'info',
        ...externalDatabaseEnv(ctx.target),
        ...(ctx.target.pooler
          ? {
              SVC_DATABASE_POOLER_HOST: ctx.target.pooler.host,
              SVC_DATABASE_POOLER_PORT: String(ctx.target.pooler.port),
            }
          : {}),
        KUBECONFIG: ctx.kubeconfigPath,
        SVC_METRICS_PORT: String(metricsPort),
        SVC_HELM_BIN: helm,
        ...ctx.env,
        ...extra,
      },
    });
    return new Orchestrator(svc, `http://127.0.0.1:${metricsPort}/metrics`, spawnLog);
  }

  passLines(): PassLine[] {
    return this.svc.logs
      .filter((l) => l.msg === 'reconciliation pass done')
      .map((l) => ({ ...(l as unknown as PassLine), endedAt: Date.parse(String(l.time)) }));
  }

  /** Waits for pass number `n` (1-based) to end; stamps when it was seen. */
  async pass(n: number, timeoutMs: number): Promise<PassLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.passLines()[n - 1];
      if (line) return line;
      if (this.svc.child.exitCode !== null)
        throw new Error(`${this.svc.name} exited: ${this.svc.stderr()}`);
      if (Date.now() > deadline)
        throw new Error(`${this.svc.name}: no pass ${n} in ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  async requests(): Promise<Map<string, number>> {
    const text = await (await fetch(this.metricsUrl)).text();
    const out = new Map<string, number>();
    for (const m of text.matchAll(
      /^svc_kube_requests_total\{verb="([^"]+)",resource="([^"]+)"\} (\d+)/gm,
    ))
      out.set(`${m[1]} ${m[2]}`, Number(m[3]));
    return out;
  }

  /** V8's heap (used, total) from the process's own metrics (prom-client's defaults). */
  async heap(): Promise<{ used: number; total: number }> {
    const text = await (await fetch(this.metricsUrl)).text();
    const read = (name: string) =>
      Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN);
    return {
      used: read('svc_nodejs_heap_size_used_bytes'),
      total: read('svc_nodejs_heap_size_total_bytes'),
    };
  }

  async helmSpawns(): Promise<number> {
    return (await readFile(this.spawnLog, 'utf8')).split('\n').filter(Boolean).length;
  }

  async stop(): Promise<void> {
    const { child } = this.svc;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const gone = await Promise.race([this.svc.exited.then(() => true), sleep(30_000, false)]);
      if (!gone) await this.svc.kill();
    }
  }
}

const minus = (after: Map<string, number>, before: Map<string, number>) =>
  new Map(
    [...after]
      .map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const)
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1]),
  );

/**
 * Pass 1 (the one every orchestrator runs on start) over all tenants; then one tenant's
 * namespace deleted by hand and the passes after it watched until the repair is recorded.
 */
export async function measureSteady(
  ctx: SteadyContext,
  o: { passTimeoutMs: number; intervalS: number; drift: boolean },
): Promise<SteadyReport> {
  ctx.phase('reconcile pass 1 (direct)');
  const orch = await Orchestrator.start(ctx, 'orchestrator', {
    SVC_RECONCILE_INTERVAL: `${o.intervalS}s`,
  });
  const rss = sampleRss(orch.svc.child.pid ?? 0);
  const sockets = sampleSockets(orch.svc.child.pid ?? 0, ctx.ports);
  try {
    const passes: PassFigures[] = [];
    const first = await orch.pass(1, o.passTimeoutMs);
    const afterFirst = await orch.requests();
    const heap = await orch.heap();
    passes.push({ pass: first, requests: afterFirst, helmSpawns: await orch.helmSpawns() });
    console.log(
      `  pass 1: ${first.done}/${first.selected} tenants in ${(first.ms / 1000).toFixed(1)} s`,
    );
    let drift: DriftFigures | undefined;
    if (o.drift) {
      ctx.phase('drift: namespace deleted, passes until repaired');
      drift = await driftProbe(ctx, orch, afterFirst, passes, o.passTimeoutMs);
    }
    const rssPeak = await rss.stop();
    const rssAfter = (await processMemory(orch.svc.child.pid ?? 0))?.rss ?? 0;
    return {
      passes,
      rssPeak,
      rssAfter,
      heap,
      sockets: await sockets.stop(),
      ...(drift ? { drift } : {}),
    };
  } finally {
    await rss.stop();
    await sockets.stop();
    await orch.stop();
  }
}

async function driftProbe(
  ctx: SteadyContext,
  orch: Orchestrator,
  before: Map<string, number>,
  passes: PassFigures[],
  passTimeoutMs: number,
): Promise<DriftFigures> {
  const victim = ctx.tenants[Math.floor(ctx.tenants.length / 2)];
  if (!victim) throw new Error('no tenant to delete');
  const namespace = `tenant-${victim.slug}`;
  const deletedAt = performance.now();
  await ctx.core.deleteNamespace({ name: namespace });
  // Gone: 404 (the namespace controller has emptied and removed it).
  for (;;) {
    try {
      await ctx.core.readNamespace({ name: namespace });
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) break;
      throw error;
    }
    if (performance.now() - deletedAt > 600_000) throw new Error(`${namespace} not gone in 10 min`);
    await sleep(200);
  }
  const goneAt = performance.now();
  const goneWall = Date.now();
  console.log(
    `  drift: ${namespace} deleted by hand, gone after ${((goneAt - deletedAt) / 1000).toFixed(1)} s; waiting for the next passes`,
  );
  // Passes that ended while the namespace was going are skipped (the one running now is not).
  let seen = orch.passLines().length;
  let previous = seen > passes.length ? await orch.requests() : before;
  let spawnsBefore = await orch.helmSpawns();
  let startedAfterGone = 0;
  const figures: DriftFigures = {
    slug: victim.slug,
    deletedAfterMs: goneAt - deletedAt,
    passesStartedAfterGone: 0,
    namespaceBack: false,
    releaseDeployed: false,
    terminatingSeen: false,
  };
  for (;;) {
    const line = await orch.pass(seen + 1, passTimeoutMs);
    seen++;
    const now = await orch.requests();
    const spawns = await orch.helmSpawns();
    passes.push({ pass: line, requests: minus(now, previous), helmSpawns: spawns - spawnsBefore });
    previous = now;
    spawnsBefore = spawns;
    if (line.endedAt - line.ms >= goneWall) startedAfterGone++;
    const { rows } = await ctx.mssp.query<{
      details: { findings?: { object: string; problem: string; repair: string }[] };
      at: Date;
    }>(
      `SELECT details, occurred_at AS at FROM tenant_lifecycle_events
        WHERE tenant_id = $1 AND kind = 'drift' AND occurred_at >= $2 ORDER BY id`,
      [victim.id, new Date(goneWall - 5_000)],
    );
    if (rows.some((r) => r.details.findings?.some((f) => f.problem === 'terminating')))
      figures.terminatingSeen = true;
    const repaired = rows.find((r) =>
      r.details.findings?.some((f) => f.object === 'namespace' && f.problem === 'missing'),
    );
    console.log(
      `  pass ${seen}: ${(line.ms / 1000).toFixed(1)} s, drift events for ${victim.slug}: ${rows.length}`,
    );
    // A pass running while the deletion completed may find it too (0 passes started after).
    if (repaired) {
      figures.passesStartedAfterGone = startedAfterGone;
      figures.foundAfterMs = repaired.at.getTime() - goneWall;
      figures.findings = repaired.details.findings;
      break;
    }
    if (startedAfterGone >= 3) {
      figures.passesStartedAfterGone = startedAfterGone;
      break;
    }
  }
  figures.namespaceBack = await ctx.core
    .readNamespace({ name: namespace })
    .then(() => true)
    .catch(() => false);
  figures.releaseDeployed =
    (await releaseRecord(ctx.kubeConfig, namespace, 'svc-tenant').catch(() => undefined))
      ?.status === 'deployed';
  return figures;
}

/** One pass on start of an orchestrator whose pools go through the pooler in `target`. */
export async function measurePooledPass(
  ctx: SteadyContext,
  passTimeoutMs: number,
  o: { name: string; phase: string; env?: Record<string, string> } = {
    name: 'orchestrator-pooled',
    phase: 'reconcile pass (through PgBouncer)',
  },
): Promise<PooledFigures> {
  ctx.phase(o.phase);
  const orch = await Orchestrator.start(ctx, o.name, {
    SVC_RECONCILE_INTERVAL: '1h',
    ...o.env,
  });
  const rss = sampleRss(orch.svc.child.pid ?? 0);
  const sockets = sampleSockets(orch.svc.child.pid ?? 0, ctx.ports);
  try {
    const pass = await orch.pass(1, passTimeoutMs);
    return { pass, rssPeak: await rss.stop(), sockets: await sockets.stop() };
  } finally {
    await rss.stop();
    await sockets.stop();
    await orch.stop();
  }
}

export function printSteady(report: SteadyReport, tenants: number, goalRss: number): void {
  console.log(
    `\nReconciliation by a real \`svc orchestrator\` process (${tenants} active tenants):`,
  );
  for (const [i, p] of report.passes.entries()) {
    const total = [...p.requests.values()].reduce((a, b) => a + b, 0);
    const detail = [...p.requests].map(([k, v]) => `${k} ${v}`).join(', ');
    console.log(
      `  pass ${i + 1}: ${(p.pass.ms / 1000).toFixed(1)} s over ${p.pass.selected} tenants` +
        ` (${p.pass.done} done, ${p.pass.busy} busy, ${p.pass.failed} failed),` +
        ` ${(p.pass.ms / Math.max(1, p.pass.selected)).toFixed(0)} ms per tenant;` +
        ` ${total} apiserver requests (${(total / Math.max(1, p.pass.selected)).toFixed(1)} per tenant)` +
        `, ${p.helmSpawns} helm spawns${i === 0 ? ' [pass 1 includes the process start]' : ''}`,
    );
    console.log(`      ${detail}`);
  }
  console.log(
    `  orchestrator RSS: peak ${mib(report.rssPeak)}, after the passes ${mib(report.rssAfter)}` +
      `  (goal < ${mib(goalRss)}): ${report.rssPeak < goalRss ? 'PASS' : 'FAIL'}` +
      ' — the whole `svc orchestrator` process (Node, tsx, its pools, its clients), nothing else',
  );
  const d = report.drift;
  if (d) {
    console.log(
      `  drift: tenant-${d.slug} deleted by hand (gone after ${(d.deletedAfterMs / 1000).toFixed(1)} s);` +
        (d.foundAfterMs === undefined
          ? ` NOT repaired within ${d.passesStartedAfterGone} passes: FAIL`
          : ` found and repaired by ${d.passesStartedAfterGone === 0 ? 'the pass running when it went' : `the ${ordinal(d.passesStartedAfterGone)} pass that started after it was gone`},` +
            ` recorded ${(d.foundAfterMs / 1000).toFixed(1)} s after it was gone` +
            ` (goal: within one pass): ${d.passesStartedAfterGone <= 1 ? 'PASS' : 'FAIL'}`),
    );
    console.log(
      `      findings ${JSON.stringify(d.findings ?? null)}; namespace back: ${d.namespaceBack}, release deployed: ${d.releaseDeployed}` +
        (d.terminatingSeen ? '; a pass during the deletion reported it terminating' : ''),
    );
  }
  const socketText = (s: Record<string, number>) =>
    Object.entries(s)
      .map(([k, v]) => `${v} to ${k}`)
      .join(', ');
  console.log(
    `  V8 heap right after pass 1: ${mib(report.heap.used)} used of ${mib(report.heap.total)}` +
      `; the orchestrator's own connections at their peak (direct): ${socketText(report.sockets)}`,
  );
  if (report.capped)
    console.log(
      `  the same process with node --max-old-space-size=${report.capped.capMiB} (a new process, its start pass): ` +
        `${(report.capped.pass.ms / 1000).toFixed(1)} s over ${report.capped.pass.selected} tenants (${report.capped.pass.failed} failed), RSS peak ${mib(report.capped.rssPeak)}` +
        ` (goal < 512 MiB): ${report.capped.rssPeak < goalRss ? 'PASS' : 'FAIL'}`,
    );
  if (report.pooled)
    console.log(
      `  through PgBouncer (a new process, its start pass): ${(report.pooled.pass.ms / 1000).toFixed(1)} s over ${report.pooled.pass.selected} tenants, RSS peak ${mib(report.pooled.rssPeak)};` +
        ` its connections at their peak: ${socketText(report.pooled.sockets)}`,
    );
}

const ordinal = (n: number) => (n === 1 ? 'first' : n === 2 ? 'second' : `${n}th`);
