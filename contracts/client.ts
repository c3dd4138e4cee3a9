import type { Family, Route, RouteInput, RouteResponse } from './route.ts';

export interface ClientOptions {
  baseUrl: string;
  /** Sent with every request, e.g. `origin` for CSRF or `authorization` for a token. */
  headers?: Record<string, string>;
  /** Keeps the svc_session cookie between calls, like a browser (default true). */
  cookies?: boolean;
  fetch?: typeof fetch;
}

export type FamilyClient<F extends Family> = {
  [K in keyof F]: (
    input?: RouteInput<F[K]> & { headers?: Record<string, string> },
  ) => Promise<RouteResponse<F[K]>>;
};

/** Fills `{name}` placeholders; values are URL-encoded, so a value cannot add a segment. */
export function fillPath(path: string, params: Record<string, unknown> | undefined): string {
  return path.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    const value = params?.[name];
    if (value === undefined) throw new TypeError(`missing path parameter ${name}`);
    return encodeURIComponent(String(value));
  });
}

function queryString(query: Record<string, unknown> | undefined): string {
  if (!query) return '';
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

export type Transport = (
  r: Route,
  input?: Record<string, unknown>,
) => Promise<{ status: number; body: unknown; headers: Headers }>;

/** One connection context: base URL, default headers, and a cookie jar shared by every family. */
export function createTransport(options: ClientOptions): Transport {
  const doFetch = options.fetch ?? fetch;
  let cookie: string | undefined;
  return async (r, input = {}) => {
    const path = fillPath(r.path, input.params as Record<string, unknown> | undefined);
    const url = `${options.baseUrl}${path}${queryString(input.query as Record<string, unknown> | undefined)}`;
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (cookie && options.cookies !== false) headers.cookie = cookie;
    if (input.body !== undefined) headers['content-type'] = 'application/json';
    Object.assign(headers, input.headers as Record<string, string> | undefined);
    const res = await doFetch(url, {
      method: r.method,
      headers,
      body: input.body === undefined ? null : JSON.stringify(input.body),
    });
    const set = res.headers.get('set-cookie');
    if (set && options.cookies !== false) {
      const pair = set.split(';')[0] ?? '';
      cookie = pair.endsWith('=') ? undefined : pair;
    }
    const text = await res.text();
    const isJson = /^application\/([a-z.+-]+\+)?json\b/.test(res.headers.get('content-type') ?? '');
    return {
      status: res.status,
      body: text && isJson ? (JSON.parse(text) as unknown) : text || undefined,
      headers: res.headers,
    };
  };
}

/** A typed client for one API family over a transport. */
export function createFamilyClient<F extends Family>(
  family: F,
  transport: Transport,
): FamilyClient<F> {
  const client: Record<string, unknown> = {};
  for (const [name, r] of Object.entries(family)) {
    client[name] = (input?: Record<string, unknown>) => transport(r, input);
  }
  return client as FamilyClient<F>;
}
