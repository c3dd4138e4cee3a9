import { isUuid } from '../../contracts/uuid.ts';
import { ProblemError } from './problem.ts';

/**
 * Cursor strings, the presentation side of keyset pagination: a cursor is a position (see
 * src/db/keyset.ts, which repositories use to read a page) encoded for one list.
 *
 *   const after = decodeCursor('audit', query.cursor);
 *   const page = await audit.listForTenant(tenantId, filters, { after, limit });
 *   return { items: page.rows.map(toJson), next_cursor: nextCursor('audit', page.next) };
 */

/** The lists that page with a cursor; a cursor of one list is refused by another. */
export type CursorList =
  | 'incidents'
  | 'audit'
  | 'tenants'
  | 'mssp-audit'
  | 'mssp-incidents'
  | 'fleet-incidents'
  | 'reports'
  | 'reviews'
  | 'fleet-reviews'
  | 'incident-alerts';

/** A keyset position (db/keyset.ts KeysetPosition, which this layer may not import). */
export interface Position {
  at: string;
  id: string;
}

/** Page size when the client names none (the contract caps it at 200). */
export const DEFAULT_LIMIT = 50;

const SORT_KEY = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

function encodeCursor(list: CursorList, position: Position): string {
  return Buffer.from(JSON.stringify([list, position.at, position.id])).toString('base64url');
}

/** A real calendar instant Postgres accepts (no 30 February, no year 0), to the microsecond. */
function isSortKey(value: unknown): value is string {
  if (typeof value !== 'string' || !SORT_KEY.test(value)) return false;
  const millis = `${value.slice(0, 23)}Z`;
  const date = new Date(millis);
  return (
    !Number.isNaN(date.getTime()) && date.getUTCFullYear() >= 1 && date.toISOString() === millis
  );
}

function parse(list: CursorList, cursor: string): Position | undefined {
  if (!BASE64URL.test(cursor)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 3 || value[0] !== list) return undefined;
  const [, at, id] = value as unknown[];
  if (!isSortKey(at) || typeof id !== 'string' || !isUuid(id)) return undefined;
  const position = { at, id };
  // Only the exact bytes this API issues are accepted, so an edited cursor cannot slip through
  // as an equivalent spelling.
  return encodeCursor(list, position) === cursor ? position : undefined;
}

/**
 * The position a client sent back, or undefined for the first page. Cursors carry no
 * authority: every read runs under the caller's tenant context, so a crafted position can only
 * move within the caller's own rows.
 */
export function decodeCursor(list: CursorList, cursor: string | undefined): Position | undefined {
  if (cursor === undefined) return undefined;
  const position = parse(list, cursor);
  if (!position)
    throw new ProblemError(400, 'invalid_cursor', 'The cursor is not one this API issued');
  return position;
}

/** The cursor of the page starting at `next`, or null after the last page. */
export function nextCursor(list: CursorList, next: Position | null): string | null {
  return next === null ? null : encodeCursor(list, next);
}
