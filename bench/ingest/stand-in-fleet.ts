/**
 * Stand-in Wazuh indexers for the fleet run (bench:ingest --adapters N): one child process
 * holding one stand-in per tenant (testcluster/stand-ins/indexer.ts: the subset of OpenSearch's
 * `_search` API the adapter uses, stamping `svc_ingested_at` on every append as the tenant
 * chart's ingest pipeline does), each on its own loopback port, plus a control port the bench
 * appends alerts through. One real OpenSearch node answering 100 adapters' polls would take
 * both cores by itself (docs/benchmarks.md: 0.78 core for 50 idle adapters), and in production
 * every tenant has its own indexer on its own cores.
 *
 * The stand-in scans every document of its tenant per search, so the flooded tenant gets a
 * child process of its own: its slow searches must not queue the other tenants' searches.
 *
 *   node --import tsx bench/ingest/stand-in-fleet.ts <count>   # child side
 */
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startIndexerStandIn } from '../../testcluster/stand-ins/indexer.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface StandInFleet {
  pid: number;
  /** The SVC_INDEXER_URL of the fleet's k-th stand-in. */
  urls: string[];
  /** Appends alerts to stand-in k per entry; resolves once all are searchable. */
  append(batches: Map<number, Record<string, unknown>[]>): Promise<void>;
  /** Searches answered so far, all stand-ins. */
  searches(): Promise<number>;
  stop(): Promise<void>;
}

async function child(count: number): Promise<void> {
  const standIns = await Promise.all(Array.from({ length: count }, () => startIndexerStandIn({})));
  let searches = 0;
  // The stand-in keeps every request for tests to inspect; here only their number matters.
  setInterval(() => {
    for (const s of standIns) {
      searches += s.requests.length;
      s.requests.length = 0;
    }
  }, 200).unref();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/searches') {
        const pending = standIns.reduce((a, s) => a + s.requests.length, 0);
        res.end(String(searches + pending));
        return;
      }
      const batches = JSON.parse(Buffer.concat(chunks).toString('utf8')) as [
        number,
        Record<string, unknown>[],
      ][];
      for (const [k, alerts] of batches) standIns[k]?.append(...alerts);
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  process.stdout.write(
    `${JSON.stringify({ control: `http://127.0.0.1:${port}`, urls: standIns.map((s) => s.url) })}\n`,
  );
  process.on('SIGTERM', () => process.exit(0));
}

/** Starts `count` stand-ins in one child process (node itself with tsx, as the adapters run). */
export async function startStandInFleet(count: number): Promise<StandInFleet> {
  const proc: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(import.meta.url), String(count)],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const first = await new Promise<string>((resolve, reject) => {
    let text = '';
    proc.stdout?.on('data', (d: Buffer) => {
      text += d.toString('utf8');
      const nl = text.indexOf('\n');
      if (nl >= 0) resolve(text.slice(0, nl));
    });
    proc.once('exit', (code) => reject(new Error(`stand-in fleet exited (${code}) before ready`)));
  });
  const { control, urls } = JSON.parse(first) as { control: string; urls: string[] };
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return {
    pid: proc.pid ?? 0,
    urls,
    async append(batches) {
      const body = JSON.stringify([...batches.entries()]);
      const answer = await fetch(`${control}/append`, { method: 'POST', body });
      if (answer.status !== 204) throw new Error(`stand-in fleet append: ${answer.status}`);
    },
    async searches() {
      return Number(await (await fetch(`${control}/searches`)).text());
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await child(Number(process.argv[2]));
