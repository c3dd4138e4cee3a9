import { DatabaseUnavailableError } from '../faults/unavailable.ts';

/** Socket-level failures: the server is gone, refuses, or the network between us is. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs that say "this connection or server is unavailable", not "this statement is
 * wrong": class 08 (connection exception), 57P01-57P03 (admin/crash shutdown, cannot connect
 * now: starting up or shutting down) and 53300 (too many connections).
 */
function isUnavailableSqlState(code: string): boolean {
  return code.startsWith('08') || /^57P0[1-3]$/.test(code) || code === '53300';
}

/** What node-postgres throws when a client's connection dropped under it or before it. */
const PG_CONNECTION_MESSAGES = [
  'Connection terminated',
  'is not queryable',
  'timeout exceeded when trying to connect',
];

/** True when the error means the database could not be reached, not that the work was refused. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error) || error instanceof DatabaseUnavailableError) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || isUnavailableSqlState(code)))
    return true;
  if (PG_CONNECTION_MESSAGES.some((m) => error.message.includes(m))) return true;
  // A refused connection to "localhost" fails on ::1 and 127.0.0.1 at once.
  if (error instanceof AggregateError) return error.errors.some(isDatabaseUnavailable);
  return false;
}

export function databaseUnavailable(cause: unknown): DatabaseUnavailableError {
  return new DatabaseUnavailableError('The database is unavailable. Try again shortly.', {
    cause,
  });
}

/** Runs fn; a lost database surfaces as databaseUnavailable, every other error unchanged. */
export async function mappingUnavailable<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw isDatabaseUnavailable(error) ? databaseUnavailable(error) : error;
  }
}
