/**
 * Keyset pagination, SQL side: lists ordered newest first by (timestamp column, id), resumed
 * after the last row a client saw. src/http/cursor.ts turns positions into cursor strings.
 *
 *   const k = keyset('opened_at', page, 3);       // $3, $4, $5 follow the list's own $1, $2
 *   const { rows } = await tx.query<Row & SortKey>(
 *     `SELECT id, title, ${k.sortKey} FROM investigations
 *       WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR severity = $2)
 *         AND ${k.after}
 *       ${k.orderLimit}`,
 *     [status, severity, ...k.params],
 *   );
 *   return toKeysetPage(rows, page.limit);       // { rows (without sort_key), next }
 */

/**
 * A keyset position: the last row's sort timestamp, exactly as Postgres renders it with
 * microseconds (a JavaScript Date would round to milliseconds and skip or repeat rows that
 * share a millisecond), and its id as the tie-breaker.
 */
export interface KeysetPosition {
  at: string;
  id: string;
}

/** Which page to read: after `after` (undefined for the first page), at most `limit` rows. */
export interface KeysetRequest {
  after: KeysetPosition | undefined;
  limit: number;
}

export interface KeysetPage<T> {
  rows: T[];
  /** Where the next page starts, or null when this one is the last. */
  next: KeysetPosition | null;
}

/** The column a keyset query adds to each row, read back by toKeysetPage. */
export interface SortKey {
  sort_key: string;
}

/** The SQL rendering of a sort timestamp that `KeysetPosition.at` holds. */
export const SORT_KEY_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"';

/**
 * The pieces of a keyset query over `column` (quote it if it is a keyword: '"timestamp"'):
 * the select item `sort_key`, the `after` condition, `ORDER BY ... LIMIT` fetching one row more
 * than the page so the last page is known without a count, and their params, numbered from
 * `firstParam` and appended after the query's own.
 */
export function keyset(
  column: string,
  page: KeysetRequest,
  firstParam: number,
  id = 'id',
  /** `asc` for a queue read oldest first (the review queues); newest first otherwise. */
  order: 'desc' | 'asc' = 'desc',
) {
  const [at, atId, limit] = [firstParam, firstParam + 1, firstParam + 2];
  const [beyond, direction] = order === 'desc' ? ['<', 'DESC'] : ['>', 'ASC'];
  return {
    sortKey: `to_char(${column} AT TIME ZONE 'UTC', '${SORT_KEY_FORMAT}') AS sort_key`,
    after: `($${at}::timestamptz IS NULL OR (${column}, ${id}) ${beyond} ($${at}, $${atId}::uuid))`,
    orderLimit: `ORDER BY ${column} ${direction}, ${id} ${direction} LIMIT $${limit}`,
    params: [page.after?.at ?? null, page.after?.id ?? null, page.limit + 1],
  };
}

/** Splits a keyset fetch (`limit + 1` rows) into the page and where the next one starts. */
export function toKeysetPage<T extends SortKey & { id: string }>(
  rows: T[],
  limit: number,
): KeysetPage<Omit<T, 'sort_key'>> {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    rows: page.map(({ sort_key: _, ...row }) => row),
    next: rows.length > limit && last !== undefined ? { at: last.sort_key, id: last.id } : null,
  };
}
