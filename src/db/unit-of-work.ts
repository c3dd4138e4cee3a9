import { AsyncLocalStorage } from 'node:async_hooks';
import type { Writable } from 'node:stream';
import type pg from 'pg';
import { assertTenantId, inTransaction, type Transaction, withTenant } from './tenant-context.ts';

/**
 * One connection and one transaction for a whole request (DESIGN "HTTP"): every scope the
 * request's services open (`withTenant`, `withoutTenant`) joins it instead of taking a
 * connection of its own, and switches `app.current_tenant_id` only when it changes.
 *
 * The semantics stay those of separate transactions: a scope whose fn throws is undone (to a
 * savepoint when earlier scopes did work that must survive, else the whole transaction), and
 * the unit commits what every completed scope did, also when the request then fails. Scopes
 * that would interleave on the one connection never share it: a scope opened inside another
 * runs in a transaction of its own (as it always did), and concurrent scopes take turns.
 */
interface Unit {
  pool: pg.Pool;
  client?: pg.PoolClient;
  onError: (error: Error) => void;
  broken?: Error;
  /** BEGIN was sent and neither COMMIT nor a full ROLLBACK since. */
  open: boolean;
  /** The tenant context the connection holds now ('' for none); undefined when unknown. */
  context?: string | undefined;
  /** A completed scope did work a later failure must not undo. */
  keep: boolean;
  savepoints: number;
  ended: boolean;
  turn: Promise<void>;
  afterCommit: (() => void)[];
  guard?: Guard;
}

/**
 * A check the database must pass before the unit's statements count (the session of a read
 * whose identity the app already knows, see `guardUnit`). It travels with the unit's BEGIN in
 * front of the first statement; until its answer arrives no statement's result is handed out.
 */
interface Guard {
  statement: string;
  /** The tenant context the statement leaves set when it passes ('' for none). */
  context: string;
  /** What the unit throws when the statement fails (its database error as the argument). */
  refused: (error: unknown) => Error;
  /**
   * The rest of the transaction is READ ONLY (PostgreSQL refuses any write after the guard's
   * own): its COMMIT changes nothing the answer depends on, so the unit returns without
   * waiting for it.
   */
  readOnly: boolean;
  /** Set once the statement is on the wire: settles with its answer. */
  answer?: Promise<void>;
  failure?: Error;
}

interface Ambient {
  unit: Unit;
  /** Inside one of the unit's scopes: a further scope here is nested. */
  inScope: boolean;
}

const ambient = new AsyncLocalStorage<Ambient>();

export interface ScopeOptions<T = unknown> {
  /** Work a later failure may drop with it (the session's last-seen touch). */
  expendable?: boolean;
  /**
   * The scope's first statement has no parameters: when it opens the unit, it travels with the
   * BEGIN in one round trip (the session check of every request). Such a scope gets a
   * query-only transaction: it may call nothing but `query`.
   */
  opensUnit?: boolean;
  /**
   * The tenant context the scope's statements leave set (null: none; undefined: unknown), so
   * the next scope on that tenant needs no set_config round trip.
   */
  contextAfter?: (result: T) => string | null | undefined;
}

/** Runs fn as one unit of work: scopes opened inside it share one connection and transaction. */
export async function unitOfWork<T>(pool: pg.Pool, fn: () => Promise<T>): Promise<T> {
  const unit: Unit = {
    pool,
    open: false,
    keep: false,
    savepoints: 0,
    ended: false,
    turn: Promise.resolve(),
    afterCommit: [],
    onError: (error) => {
      unit.broken ??= error;
    },
  };
  let outcome: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await ambient.run({ unit, inScope: false }, fn) };
  } catch (error) {
    outcome = { ok: false, error };
  }
  // Scopes still queued (one started and not awaited) finish first; `ended` is set in the same
  // tick as the last check, so no scope can queue behind it and meet a released connection.
  let last: Promise<void>;
  do {
    last = unit.turn;
    await last;
  } while (unit.turn !== last);
  unit.ended = true;
  const committed = await finish(unit);
  if (unit.guard?.failure) throw unit.guard.failure;
  if (!outcome.ok) throw outcome.error;
  if (committed !== true) throw committed;
  for (const hook of unit.afterCommit) outsideUnit(hook);
  return outcome.value;
}

async function finish(unit: Unit): Promise<true | Error> {
  if (unit.guard && !unit.guard.answer && !unit.broken) return confirmAlone(unit, unit.guard);
  const client = unit.client;
  if (!client) return true;
  if (unit.guard?.answer) await unit.guard.answer.catch(() => undefined);
  if (unit.guard?.failure && unit.open) await undo(unit, client, undefined);
  if (unit.open && !unit.broken && client.pipeline) {
    const committed = commitAhead(unit, client);
    // A read-only unit (its guard made it so) wrote nothing its COMMIT could lose but the
    // expendable last-seen touch: the request does not wait for it.
    return unit.guard?.readOnly ? true : committed;
  }
  try {
    if (unit.open) await client.query('COMMIT');
    return true;
  } catch (error) {
    unit.broken ??= error as Error;
    return error as Error;
  } finally {
    client.off('error', unit.onError);
    client.release(unit.broken);
  }
}

/**
 * On a pipelined connection the COMMIT is written before the connection goes back to the pool,
 * so the next holder's statements travel right behind it: PostgreSQL runs them after the COMMIT
 * (one connection answers in order), with the tenant context gone, and the connection is not
 * held idle for the COMMIT's round trip. The request still waits for the COMMIT's answer before
 * it reports success (unless the unit was read-only). A COMMIT lost with its connection fails
 * the next holder's statements too, which release the broken connection themselves.
 */
async function commitAhead(unit: Unit, client: pg.PoolClient): Promise<true | Error> {
  // Not corked to travel with the next holder's first statements: that would hold the COMMIT
  // (and so the next statement) until this request's answer is built, and PostgreSQL, the
  // bottleneck on realistic data, would wait for it (docs/benchmarks.md, API).
  const committed = client.query('COMMIT').then(
    () => true as const,
    (error: Error) => error,
  );
  client.off('error', unit.onError);
  client.release();
  return committed;
}

/**
 * A unit whose guard no statement carried (the request read nothing): the guard, BEGIN and
 * COMMIT in one simple query, so a request that only echoes its identity is still confirmed.
 */
async function confirmAlone(unit: Unit, guard: Guard): Promise<true | Error> {
  let client: pg.PoolClient | undefined;
  try {
    client = await connection(unit);
    guard.answer = Promise.resolve();
    await client.query(`BEGIN; ${guardText(guard)}; COMMIT`);
    return true;
  } catch (error) {
    if (!client || unit.broken) return error as Error;
    guard.failure = guard.refused(error);
    await client.query('ROLLBACK').catch((lost: Error) => {
      unit.broken ??= lost;
    });
    return true;
  } finally {
    client?.off('error', unit.onError);
    client?.release(unit.broken);
  }
}

/**
 * Makes `statement` the unit's guard (see Guard): the caller goes on as if it had passed; the
 * unit's first statement (or its end, when it has none) carries it, and its failure replaces
 * whatever the unit would have returned or thrown. Refused (false) outside a unit of work on
 * `pool`, once the unit has begun, or when it already has a guard: the caller checks itself.
 */
export function guardUnit(
  pool: pg.Pool,
  statement: string,
  context: string | null,
  refused: (error: unknown) => Error,
  readOnly = false,
): boolean {
  const current = ambient.getStore();
  if (!current || current.inScope || current.unit.pool !== pool) return false;
  const unit = current.unit;
  if (unit.ended || unit.open || unit.client || unit.guard) return false;
  if (context !== null) assertTenantId(context);
  unit.guard = { statement, context: context ?? '', refused, readOnly };
  return true;
}

/**
 * Waits for the unit's guard to pass; when no statement has carried it yet, it goes alone on the
 * unit's connection, in the unit's turn (a scope that joins the unit sends it itself).
 */
async function guardPassed(unit: Unit): Promise<void> {
  const guard = unit.guard;
  if (!guard) return;
  if (!guard.answer) {
    const previous = unit.turn;
    let done!: () => void;
    unit.turn = new Promise((resolve) => {
      done = resolve;
    });
    await previous;
    try {
      if (!guard.answer) {
        const client = await connection(unit);
        guard.answer = sendPrefix(client, `BEGIN; ${guardText(guard)}`, guard);
        unit.open = true;
        unit.context = guard.context;
      }
    } finally {
      done();
    }
  }
  await guard.answer;
}

function guardText(guard: Guard): string {
  return guard.readOnly ? `${guard.statement}; SET TRANSACTION READ ONLY` : guard.statement;
}

function sendPrefix(client: pg.PoolClient, text: string, guard: Guard | undefined): Promise<void> {
  return client.query(text).then(
    () => undefined,
    (error: unknown) => {
      if (!guard) throw error;
      guard.failure ??= guard.refused(error);
      throw guard.failure;
    },
  );
}

/**
 * Runs fn detached from the current unit of work: background work started from a request (a
 * loop woken by it, a timer) must never join the request's transaction.
 */
export function outsideUnit<T>(fn: () => T): T {
  return ambient.exit(fn);
}

/**
 * Runs fn once the current unit of work (if any) has committed: waking another process to
 * read what this request wrote must not beat the commit. Outside a unit it runs at once.
 */
export function afterCommit(hook: () => void): void {
  const current = ambient.getStore();
  if (current && !current.unit.ended) current.unit.afterCommit.push(hook);
  else outsideUnit(hook);
}

/**
 * A scope with tenant context tenantId (null: none) on the ambient unit's connection, or in a
 * transaction of its own when there is no unit, the unit has ended, or this scope is nested.
 */
export async function inScope<T>(
  pool: pg.Pool,
  tenantId: string | null,
  fn: (tx: Transaction) => Promise<T>,
  options: ScopeOptions<T> = {},
): Promise<T> {
  if (tenantId !== null) assertTenantId(tenantId);
  const current = ambient.getStore();
  if (!current || current.inScope || current.unit.ended || current.unit.pool !== pool) {
    // Work outside the unit's transaction waits for its guard: it must not act for a session
    // the database has not confirmed.
    if (current) await guardPassed(current.unit);
    return tenantId === null ? inTransaction(pool, fn) : withTenant(pool, tenantId, fn);
  }
  const unit = current.unit;
  const previous = unit.turn;
  let done!: () => void;
  unit.turn = new Promise((resolve) => {
    done = resolve;
  });
  await previous;
  try {
    return await ambient.run({ unit, inScope: true }, () =>
      joined(unit, tenantId ?? '', fn, options),
    );
  } finally {
    done();
  }
}

async function joined<T>(
  unit: Unit,
  context: string,
  fn: (tx: Transaction) => Promise<T>,
  options: ScopeOptions<T>,
): Promise<T> {
  const client = await connection(unit);
  const opening = !unit.open;
  const guard = unit.guard && !unit.guard.answer ? unit.guard : undefined;
  // A fresh transaction has no tenant context, a guard leaves its own: set_config only when the
  // scope needs another one.
  const known = guard ? guard.context : opening ? '' : unit.context;
  // One round trip at most: BEGIN, the guard, the savepoint and the context travel as one
  // simple query. The context is a checked uuid or '', so writing it as a literal is safe.
  const statements: string[] = [];
  if (opening) statements.push('BEGIN');
  if (guard) statements.push(guardText(guard));
  const savepoint = !opening && unit.keep ? `svc_scope_${++unit.savepoints}` : undefined;
  if (savepoint) statements.push(`SAVEPOINT ${savepoint}`);
  if (known !== context) {
    statements.push(`SELECT set_config('app.current_tenant_id', '${context}', true)`);
  }
  const deferred = options.opensUnit && statements.length === 1 && opening;
  let tx: Transaction = client;
  let ahead = unit.guard?.answer;
  if (deferred) tx = prefixingFirstQuery(client, 'BEGIN');
  else if (statements.length > 0) {
    if (client.pipeline) holdWrites(client);
    ahead = sendPrefix(client, statements.join('; '), guard);
    if (guard) guard.answer = ahead;
    ahead.catch(() => undefined);
  }
  unit.open = true;
  unit.context = context;
  // Pipelined, the scope's first statement follows its prefix on the wire without waiting for
  // it; no answer is handed out before the prefix's (and the guard's) has come.
  if (ahead && client.pipeline) tx = behind(client, ahead);
  else if (ahead) await ahead;
  try {
    const result = await fn(tx);
    if (options.contextAfter) {
      const after = options.contextAfter(result);
      unit.context = after === undefined ? undefined : (after ?? '');
    }
    if (!options.expendable) unit.keep = true;
    return result;
  } catch (error) {
    await undo(unit, client, savepoint);
    throw error;
  }
}

/**
 * Holds the connection's socket writes until the current run of promise callbacks is over, so a
 * prefix and the statement the scope issues right after it leave in one write (one system call
 * and one wake-up of the backend instead of two). Writes are only delayed, never reordered.
 * Returns the socket it holds. pg has no public handle on its socket: this reads pg's internal
 * `client.connection.stream`, and test/db/pg-internals.test.ts fails when a pg upgrade moves it
 * (without it, each unit's BEGIN would quietly cost one more write, not a wrong answer).
 */
export function holdWrites(client: pg.PoolClient): Writable | undefined {
  const stream = (client as unknown as { connection?: { stream?: Partial<Writable> } }).connection
    ?.stream;
  if (typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function') return undefined;
  stream.cork();
  process.nextTick(() => stream.uncork?.());
  return stream as Writable;
}

/** The client's queries, each sent at once but answered only after `first` has succeeded. */
function behind(client: pg.PoolClient, first: Promise<void>): Transaction {
  const send = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
  const query = async (...args: unknown[]): Promise<unknown> => {
    const result = send(...args);
    try {
      await first;
    } catch (error) {
      result.catch(() => undefined);
      throw error;
    }
    return result;
  };
  return { query } as unknown as Transaction;
}

/**
 * A query-only view of the client for a scope that opens the unit (`opensUnit`: it only
 * queries): `prefix` travels with its first query when that query has no parameters (a simple
 * query may carry several statements), otherwise on its own first. The pooled client itself is
 * never modified.
 */
function prefixingFirstQuery(client: pg.PoolClient, prefix: string): Transaction {
  const send = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
  let pending = true;
  const query = async (...args: unknown[]): Promise<unknown> => {
    if (!pending) return send(...args);
    pending = false;
    const [text, values] = args;
    const bare = values === undefined || (Array.isArray(values) && values.length === 0);
    if (typeof text === 'string' && bare) {
      const results = (await send(`${prefix}; ${text}`)) as pg.QueryResult[];
      return results[results.length - 1];
    }
    await send(prefix);
    return send(...args);
  };
  return { query } as unknown as Transaction;
}

async function undo(unit: Unit, client: pg.PoolClient, savepoint: string | undefined) {
  unit.context = undefined;
  try {
    if (savepoint) {
      await client.query(`ROLLBACK TO SAVEPOINT ${savepoint}`);
      return;
    }
    await client.query('ROLLBACK');
    unit.open = false;
    unit.keep = false;
  } catch (error) {
    unit.broken ??= error as Error;
  }
}

async function connection(unit: Unit): Promise<pg.PoolClient> {
  if (unit.broken) throw unit.broken;
  if (unit.client) return unit.client;
  const client = await unit.pool.connect();
  // See inTransaction: a connection that dies while checked out must not crash the process.
  client.on('error', unit.onError);
  unit.client = client;
  return client;
}
