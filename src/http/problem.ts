import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

/** RFC 9457 body; `code` is the stable machine-readable identifier listed in docs/errors.md. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
  detail?: string;
  instance?: string;
  request_id?: string;
  [extension: string]: unknown;
}

export function problem(
  c: Context,
  status: ContentfulStatusCode,
  code: string,
  title: string,
  extra: Omit<Partial<Problem>, 'status' | 'code' | 'title'> = {},
): Response {
  const body: Problem = {
    type: `urn:svc:problem:${code}`,
    title,
    status,
    code,
    instance: new URL(c.req.url).pathname,
    ...extra,
  };
  const requestId = c.get('requestId');
  if (requestId) body.request_id = requestId;
  return c.body(JSON.stringify(body), status, { 'content-type': 'application/problem+json' });
}

/** Thrown anywhere in a handler; app.onError turns it into the problem response. */
// Plain fields rather than parameter properties, so the module also loads under Node's own
// type stripping (as everything the test runner's global setup imports must).
export class ProblemError extends Error {
  override name = 'ProblemError';
  readonly status: ContentfulStatusCode;
  readonly code: string;
  readonly title: string;
  readonly extra: Omit<Partial<Problem>, 'status' | 'code' | 'title'>;
  readonly headers: Record<string, string>;
  constructor(
    status: ContentfulStatusCode,
    code: string,
    title: string,
    extra: Omit<Partial<Problem>, 'status' | 'code' | 'title'> = {},
    headers: Record<string, string> = {},
  ) {
    super(`${status} ${code}: ${title}`);
    this.status = status;
    this.code = code;
    this.title = title;
    this.extra = extra;
    this.headers = headers;
  }
}
