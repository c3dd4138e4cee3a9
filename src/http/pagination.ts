import { ProblemError } from './problem.ts';

/**
 * Opaque keyset cursors: base64url of `[sortKey, id]` from the last row of a page. Keyset,
 * not offset, so pages stay stable while rows are added and cost the same at any depth.
 */
export interface CursorKey {
  at: string;
  id: string;
}

export function encodeCursor(key: CursorKey): string {
  return Buffer.from(JSON.stringify([key.at, key.id])).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): CursorKey | undefined {
  if (cursor === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'string' &&
      !Number.isNaN(Date.parse(value[0])) &&
      typeof value[1] === 'string' &&
      /^[0-9a-f-]{1,64}$/i.test(value[1])
    ) {
      return { at: value[0], id: value[1] };
    }
  } catch {
    // fall through to the problem below
  }
  throw new ProblemError(400, 'invalid_cursor', 'The cursor is not one this API issued');
}

/** Splits a `limit + 1` fetch into the page and the cursor of the next one. */
export function page<T>(
  rows: T[],
  limit: number,
  key: (row: T) => CursorKey,
): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, next_cursor: rows.length > limit && last ? encodeCursor(key(last)) : null };
}
