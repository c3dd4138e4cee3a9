/**
 * How long does `svc serve` take to become healthy, and how much memory does it hold, when it
 * runs from its sources (tsx), as the bundle under Node and Deno, and as the single binary?
 *
 * Every variant runs `svc serve` with nothing configured (embedded PostgreSQL) on a free port:
 *   - fresh: a new, empty data directory (initdb, migrations, first admin; the binary also
 *     unpacks its payload under `<data>/runtime`);
 *   - warm: the same data directory started a second time.
 * Time is spawn → first 200 from /healthz. Memory is the peak RSS (VmHWM) of svc's own process
 * one second after it turned healthy: PostgreSQL runs as separate processes and is not counted.
 * Each variant is started directly (`node --import tsx src/cli/main.ts serve` for `npm start`,
 * without npm and web/ensure-built.ts in front), so the measured process is svc itself.
 * Variants take turns within each repetition, so load from elsewhere hits all of them.
 *
 * Verdicts (reported, never the exit code): binary warm / tsx warm ≤ 0.3, binary warm ≤ 1 s.
 *
 *   npm run bench:start                        # 3 repetitions
 *   npm run bench:start -- --repetitions 5     # or BENCH_REPETITIONS=5
 *   npm run bench:start -- --only binary,node  # a subset: tsx, node, binary, deno
 */
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort } from '../src/db/embedded.ts';
import { builtBinary, serveUntilHealthy } from '../test/packaging/artifacts.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

const { values } = parseArgs({
  options: {
    repetitions: { type: 'string', default: process.env.BENCH_REPETITIONS ?? '3' },
    only: { type: 'string', default: process.env.BENCH_ONLY ?? 'tsx,node,binary,deno' },
  },
});
const repetitions = Number(values.repetitions);
const only = new Set(values.only.split(','));

interface Variant {
  name: string;
  label: string;
  command: () => Promise<[string, string[]]>;
}

async function bundle(): Promise<string> {
  const file = path.join(ROOT, 'dist/svc.mjs');
  if (!existsSync(file)) {
    console.error('bench:start: no dist/svc.mjs, building it (npm run build)');
    const { buildBundle } = await import('../scripts/build.ts');
    await buildBundle({ out: path.join(ROOT, 'dist'), minify: true });
  }
  return file;
}

async function binary(): Promise<string> {
  const local = path.join(ROOT, 'dist/svc-linux-x64');
  if (existsSync(local)) return local;
  // The packaging tests' cache, keyed on the sources: built once, reused by every later run.
  console.error('bench:start: no dist/svc-linux-x64, using (or building) the tests’ cached one');
  return builtBinary();
}

const VARIANTS: Variant[] = (
  [
    {
      name: 'tsx',
      label: '`npm start` path (tsx)',
      command: async () => [process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve']],
    },
    {
      name: 'node',
      label: '`node dist/svc.mjs`',
      command: async () => [process.execPath, [await bundle(), 'serve']],
    },
    {
      name: 'binary',
      label: '`dist/svc-linux-x64`',
      command: async () => [await binary(), ['serve']],
    },
    {
      name: 'deno',
      label: '`deno run -A dist/svc.mjs`',
      command: async () => [
        path.join(ROOT, 'node_modules/deno/deno'),
        ['run', '-A', await bundle(), 'serve'],
      ],
    },
  ] satisfies Variant[]
).filter((v) => only.has(v.name));

async function peakRssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]);
  return kib / 1024;
}

interface Sample {
  ms: number;
  rss: number;
}

async function startOnce(program: string, args: string[], dataDir: string): Promise<Sample> {
  const port = await freePort();
  const served = await serveUntilHealthy(program, args, {
    cwd: ROOT,
    port,
    env: {
      ...process.env,
      SVC_DATA_DIR: dataDir,
      SVC_PORT: String(port),
      SVC_LOG_LEVEL: process.env.SVC_LOG_LEVEL ?? 'warn',
    },
  });
  try {
    await sleep(1000);
    const pid = served.child.pid;
    if (pid === undefined) throw new Error('no pid');
    return { ms: served.healthyAfterMs, rss: await peakRssMiB(pid) };
  } finally {
    await served.stop();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};

async function main() {
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  console.log(`bench:start: ${repetitions} repetitions, load average before: ${load()}`);
  const commands = new Map<string, [string, string[]]>();
  for (const v of VARIANTS) {
    const command = await v.command();
    commands.set(v.name, command);
    console.log(
      `  ${v.name.padEnd(6)} ${[command[0].startsWith(ROOT) ? path.relative(ROOT, command[0]) : command[0], ...command[1]].join(' ')}`,
    );
  }

  const results = new Map<string, { fresh: Sample[]; warm: Sample[] }>();
  for (const v of VARIANTS) results.set(v.name, { fresh: [], warm: [] });
  const work = await mkdtemp(path.join(tmpdir(), 'svc-bench-start-'));
  // As root the embedded PostgreSQL runs as `postgres`, which must reach the data directory.
  await chmod(work, 0o755);
  try {
    for (let rep = 1; rep <= repetitions; rep++) {
      for (const v of VARIANTS) {
        const [program, args] = commands.get(v.name) ?? ['', []];
        const dataDir = path.join(work, `${v.name}-${rep}`);
        const fresh = await startOnce(program, args, dataDir);
        const warm = await startOnce(program, args, dataDir);
        const r = results.get(v.name);
        r?.fresh.push(fresh);
        r?.warm.push(warm);
        console.log(
          `  ${rep}/${repetitions} ${v.name.padEnd(6)} fresh ${(fresh.ms / 1000).toFixed(2)} s ` +
            `${fresh.rss.toFixed(0)} MiB, warm ${(warm.ms / 1000).toFixed(2)} s ${warm.rss.toFixed(0)} MiB`,
        );
        await rm(dataDir, { recursive: true, force: true });
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }

  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const range = (xs: number[]) => `${s(Math.min(...xs))}–${s(Math.max(...xs))}`;
  console.log(
    `\nmedian of ${repetitions} (min–max); RSS = peak RSS of svc's process, PostgreSQL excluded\n`,
  );
  console.log('| variant | fresh data dir | warm | RSS fresh | RSS warm |');
  console.log('|---|---|---|---|---|');
  for (const v of VARIANTS) {
    const r = results.get(v.name);
    if (!r) continue;
    const fresh = r.fresh.map((x) => x.ms);
    const warm = r.warm.map((x) => x.ms);
    console.log(
      `| ${v.label} | ${s(median(fresh))} (${range(fresh)}) | ${s(median(warm))} (${range(warm)}) ` +
        `| ${median(r.fresh.map((x) => x.rss)).toFixed(0)} MiB | ${median(r.warm.map((x) => x.rss)).toFixed(0)} MiB |`,
    );
  }
  const warmOf = (name: string) => {
    const r = results.get(name);
    return r ? median(r.warm.map((x) => x.ms)) : undefined;
  };
  const bin = warmOf('binary');
  const tsx = warmOf('tsx');
  console.log('');
  if (bin !== undefined && tsx !== undefined) {
    const ratio = bin / tsx;
    console.log(
      `binary warm / tsx warm: ${ratio.toFixed(2)} (goal ≤ 0.30: ${ratio <= 0.3 ? 'met' : 'MISSED'})`,
    );
  }
  if (bin !== undefined)
    console.log(`binary warm: ${s(bin)} (goal ≤ 1 s: ${bin <= 1000 ? 'met' : 'MISSED'})`);
  console.log(`load average after: ${load()}`);
}

await main();
