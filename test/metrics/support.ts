import assert from 'node:assert/strict';
import { createLogger } from '../../src/log/index.ts';
import type { MetricsRegistry } from '../../src/metrics/registry.ts';
import { listenMetrics, type MetricsListener } from '../../src/metrics/server.ts';

/** One sample line of the Prometheus text format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A parsed scrape: its samples and each family's declared type (`# TYPE`). */
export interface Scrape {
  samples: Sample[];
  types: Map<string, string>;
  /** The sum of the samples named `name` whose labels include `labels` (0 when none). */
  value(name: string, labels?: Record<string, string>): number;
  /** Samples named `name` (a gauge left out of a scrape has a TYPE line and none). */
  named(name: string): Sample[];
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * A sample's value as Prometheus reads it: a Go float, so `NaN` and `±Inf` in any case (prom-client
 * writes `Nan`, e.g. an event-loop lag mean before its first sample).
 */
function sampleValue(text: string): number | undefined {
  if (/^nan$/i.test(text)) return Number.NaN;
  const infinite = /^([+-]?)inf$/i.exec(text);
  if (infinite) return infinite[1] === '-' ? -Infinity : Infinity;
  const value = Number(text);
  return text.trim() === '' || Number.isNaN(value) ? undefined : value;
}

/** The text exposition format 0.0.4, strictly: a line that is not a sample or comment fails. */
export function parseExposition(text: string): Scrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ')) continue;
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      types.set(type[1] ?? '', type[2] ?? '');
      continue;
    }
    const match = LINE.exec(line);
    assert.ok(match, `not a sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) {
      labels[key ?? ''] = (value ?? '').replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    const value = sampleValue(match[3] ?? '');
    assert.ok(value !== undefined, `not a value: ${line}`);
    samples.push({ name: match[1] ?? '', labels, value });
  }
  const matching = (name: string, labels: Record<string, string>) =>
    samples.filter(
      (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
    );
  return {
    samples,
    types,
    value: (name, labels = {}) => matching(name, labels).reduce((sum, s) => sum + s.value, 0),
    named: (name) => samples.filter((s) => s.name === name),
  };
}

/** A scrape through the real listener, as Prometheus does it. */
export async function scrape(listener: MetricsListener): Promise<Scrape> {
  const res = await fetch(`http://127.0.0.1:${listener.port}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

/** The process's registry behind its own listener on a free loopback port. */
export async function metricsListener(metrics: MetricsRegistry): Promise<MetricsListener> {
  const listener = await listenMetrics({
    host: '127.0.0.1',
    port: 0,
    metrics,
    logger: createLogger('silent'),
  });
  assert.ok(listener);
  return listener;
}

/** How much `name{labels}` moved while `act` ran, scraped before and after. */
export async function delta(
  listener: MetricsListener,
  name: string,
  labels: Record<string, string>,
  act: () => Promise<unknown>,
): Promise<number> {
  const before = (await scrape(listener)).value(name, labels);
  await act();
  return (await scrape(listener)).value(name, labels) - before;
}
