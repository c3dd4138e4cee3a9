import { performance } from 'node:perf_hooks';
import type pg from 'pg';

/** Calls of one kind of statement (its first words) and the time they took in all. */
export interface StatementTally {
  calls: number;
  /** Calls written while the same request's earlier statement was still unanswered. */
  pipelined: number;
  ms: number;
}

export interface RoundTrips {
  /** Since the last reset: calls that waited for the connection's previous answer. */
  total(): number;
  /** Since the last reset: every call, pipelined or not. */
  statements(): number;
  /** By statement kind, so the difference between the two sides can be read off. */
  byKind(): Map<string, StatementTally>;
  reset(): void;
  /** Counting costs the client CPU: it is on only while a phase counts, off while it measures. */
  enable(on: boolean): void;
}

/** A statement's first words, literals masked: enough to tell the statements apart. */
function kindOf(args: unknown[]): string {
  const first = args[0];
  const text =
    typeof first === 'string' ? first : String((first as { text?: unknown })?.text ?? '?');
  // The unit of work writes the tenant context, the session check its hash and instant, as
  // literals: one kind for every tenant and session.
  const literal = /'[^']*'/g;
  return text.replace(literal, "'…'").replace(/\s+/g, ' ').trim().slice(0, 72);
}

/**
 * Counts every query the pool's connections send from now on (attach before the pool's first
 * connection). A call is one statement batch (a multi-statement simple query is one); it is a
 * round trip of its own unless it was written while an earlier call on the connection was still
 * unanswered (pipelined, riding in the same round trip). A call after a COMMIT is never counted
 * as riding with it: that is the connection's next holder (the unit of work writes COMMIT ahead
 * of it). Each new connection's `query` is wrapped as the pool hands it out; nothing else changes.
 */
export function countRoundTrips(pool: pg.Pool): RoundTrips {
  const kinds = new Map<string, StatementTally>();
  let enabled = false;
  const record = (kind: string, start: number, pipelined: boolean) => {
    const tally = kinds.get(kind) ?? { calls: 0, pipelined: 0, ms: 0 };
    tally.calls++;
    if (pipelined) tally.pipelined++;
    tally.ms += performance.now() - start;
    kinds.set(kind, tally);
  };
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    /** Unanswered calls on this connection other than COMMIT. */
    let unanswered = 0;
    client.query = ((...args: unknown[]) => {
      if (!enabled) return query(...args);
      const start = performance.now();
      const kind = kindOf(args);
      const pipelined = unanswered > 0;
      const counts = kind !== 'COMMIT';
      if (counts) unanswered++;
      const answered = () => {
        if (counts) unanswered--;
        record(kind, start, pipelined);
      };
      const callback = args.at(-1);
      // pg.Pool#query passes a callback; everything else awaits the promise.
      if (typeof callback === 'function') {
        args[args.length - 1] = (...result: unknown[]) => {
          answered();
          return callback(...result);
        };
        return query(...args);
      }
      const result = query(...args);
      if (result instanceof Promise) result.then(answered, answered);
      return result;
    }) as typeof client.query;
  });
  return {
    total: () => [...kinds.values()].reduce((sum, t) => sum + t.calls - t.pipelined, 0),
    statements: () => [...kinds.values()].reduce((sum, tally) => sum + tally.calls, 0),
    byKind: () => new Map([...kinds].map(([kind, tally]) => [kind, { ...tally }])),
    reset: () => kinds.clear(),
    enable: (on) => {
      enabled = on;
    },
  };
}
