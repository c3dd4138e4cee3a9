/**
 * A lost database, as the database layer reports it: the HTTP edge answers it with 503
 * `database_unavailable` and Retry-After (src/http/server/app.ts), so a request cut by a restart (or
 * started during one) is retryable instead of a 500. The driver's error is kept as `cause`.
 */
export class DatabaseUnavailableError extends Error {
  override name = 'DatabaseUnavailableError';
  readonly code = 'database_unavailable';
}
