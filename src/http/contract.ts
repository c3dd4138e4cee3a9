import type { Context, Hono, MiddlewareHandler } from 'hono';
import type { Static, StaticDecode, TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import Value from 'typebox/value';
import type { Route } from '../../contracts/route.ts';
import { readJson } from './body.ts';
import { requireRole } from './guards.ts';
import { impersonationGuard } from './impersonation.ts';
import { ProblemError } from './problem.ts';
import { refuseUnstorableText } from './storable-text.ts';

type StaticOf<S> = S extends TSchema ? Static<S> : undefined;

export interface RouteRequest<R extends Route> {
  params: StaticOf<Exclude<R['params'], undefined>>;
  query: StaticOf<Exclude<R['query'], undefined>>;
  body: StaticOf<Exclude<R['body'], undefined>>;
}

/**
 * A handler answers with one of the statuses its route declares, and that status's body in its
 * decoded form: a timestamp is a Date (contracts/timestamp.ts), turned into the contract's text
 * once, when the body is written (register below), never by hand in a router or a service.
 */
export type RouteResult<R extends Route> = {
  [S in keyof R['responses'] & number]: {
    status: S;
    body: R['responses'][S] extends TSchema ? StaticDecode<R['responses'][S]> : null;
  };
}[keyof R['responses'] & number];

/**
 * For routes whose answer is not a JSON body (a server-sent-event stream). A wrapper rather
 * than a bare Response, whose numeric `status` would widen every handler's literal statuses.
 */
export interface RawResponse {
  raw: Response;
}

const SEGMENT_PARAM = /\{([a-z_]+)\}/g;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A malformed percent-escape (`%`, `%ED%A0%80`) is the caller's error, not a 500. */
function decodeParam(name: string, raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new ProblemError(
      400,
      'invalid_characters',
      'Request contains characters svc cannot store',
      {
        errors: [{ path: `/params/${name}`, message: 'must be percent-encoded UTF-8' }],
      },
    );
  }
}

/**
 * Turns the spec's path notation into a Hono path plus a matcher for the parameters. A
 * parameter never matches `/` or `:`, so `/tenants/{id}` cannot swallow
 * `/tenants/<id>:decommission`, and a custom method is matched as a literal suffix.
 */
export function compilePath(path: string): {
  honoPath: string;
  /** The whole path as a pattern (parameters as `[^/:]+`), for matching without decoding. */
  pattern: RegExp;
  match: (pathname: string) => Record<string, string> | undefined;
} {
  let index = 0;
  const honoPath = path
    .split('/')
    .map((segment) => {
      if (!segment.includes('{')) return segment;
      const pattern = segment
        .split(SEGMENT_PARAM)
        .map((part, i) => (i % 2 === 1 ? '[^/:]+' : escapeRegExp(part)))
        .join('');
      return `:_p${index++}{${pattern}}`;
    })
    .join('/');
  const names: string[] = [];
  const full = new RegExp(
    `^${path
      .split(SEGMENT_PARAM)
      .map((part, i) => {
        if (i % 2 === 0) return escapeRegExp(part);
        names.push(part);
        return '([^/:]+)';
      })
      .join('')}$`,
  );
  return {
    honoPath,
    pattern: full,
    match: (pathname) => {
      const m = full.exec(pathname);
      if (!m) return undefined;
      const params: Record<string, string> = {};
      names.forEach((name, i) => {
        params[name] = decodeParam(name, m[i + 1] ?? '');
      });
      return params;
    },
  };
}

const checkers = new WeakMap<TSchema, ReturnType<typeof Compile>>();
function checker(schema: TSchema) {
  let c = checkers.get(schema);
  if (!c) {
    c = Compile(schema);
    checkers.set(schema, c);
  }
  return c;
}

/** Only the canonical decimal form: no `1.5`, `0x10`, `1e2`, `true`, `+1`, `01` or `-0`. */
const CANONICAL_INTEGER = /^(0|-?[1-9][0-9]*)$/;

/**
 * Parameters arrive as strings, and Value.Convert reads them as loosely as JavaScript does
 * (`1.5` → 1, `0x10` → 16, `true` → 1). Every integer parameter must instead be written
 * exactly as the number it means, within the safe-integer range.
 */
function looseIntegers(
  schema: TSchema,
  value: Record<string, string>,
  where: string,
): { path: string; message: string }[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties;
  return Object.entries(properties ?? {})
    .filter(([name, property]) => {
      const raw = value[name];
      if (property.type !== 'integer' || raw === undefined) return false;
      return !CANONICAL_INTEGER.test(raw) || !Number.isSafeInteger(Number(raw));
    })
    .map(([name]) => ({ path: `/${where}/${name}`, message: 'must be a decimal integer' }));
}

function validate(
  schema: TSchema,
  value: Record<string, string>,
  where: 'params' | 'query',
): unknown {
  refuseUnstorableText(value, `/${where}`);
  const loose = looseIntegers(schema, value, where);
  if (loose.length > 0) {
    throw new ProblemError(400, 'validation_failed', 'Request failed validation', {
      errors: loose,
    });
  }
  const converted = Value.Convert(schema, value);
  const check = checker(schema);
  if (check.Check(converted)) return converted;
  const errors = check.Errors(converted).map((e) => ({
    path: `/${where}${e.instancePath}`,
    message: e.message,
  }));
  throw new ProblemError(400, 'validation_failed', 'Request failed validation', { errors });
}

export type RouteHandler<R extends Route> = (
  c: Context,
  request: RouteRequest<R>,
) => Promise<RouteResult<R> | RawResponse>;

/**
 * Registers a contract route on the app: the route's declared impersonation rule and roles,
 * then the router's own guards, then parameter, query and body validation, then the typed
 * handler. Curried so the route fixes the types before the handler is checked against them
 * (TypeScript would otherwise widen the handler's literal statuses).
 */
export function implement<R extends Route>(
  app: Hono,
  r: R,
  guards: MiddlewareHandler[] = [],
  options: RouteOptions = {},
): (handler: RouteHandler<R>) => void {
  return (handler) => register(app, r, guards, handler, options);
}

export interface RouteOptions {
  /** Sees the parsed body before schema validation (readJson's `precheck`). */
  bodyPrecheck?: (value: unknown) => void;
}

function register<R extends Route>(
  app: Hono,
  r: R,
  guards: MiddlewareHandler[],
  handler: RouteHandler<R>,
  options: RouteOptions,
): void {
  const { honoPath, match } = compilePath(r.path);
  const final: MiddlewareHandler = async (c) => {
    const raw = match(c.req.path) ?? {};
    const params = r.params ? validate(r.params, raw, 'params') : undefined;
    const query = r.query ? validate(r.query, c.req.query(), 'query') : undefined;
    const body = r.body ? await readJson(c, r.body, options.bodyPrecheck) : undefined;
    const result = await handler(c, { params, query, body } as RouteRequest<R>);
    if ('raw' in result) return result.raw;
    const status = result.status as number;
    if (result.body === null) return c.body(null, status as 204);
    // JSON.stringify writes a Date as Date#toJSON, which is toISOString: the Timestamp codec's
    // encoding, so every timestamp of the body becomes the contract's text here, in one place.
    return c.json(result.body as object, status as 200);
  };
  const declared = [impersonationGuard(r, match), roleGuard(r)].filter((g) => g !== undefined);
  app.on(r.method, [honoPath], ...declared, ...guards, final);
}

/** The families whose every route is called by a user, so every route names its roles. */
const USER_FAMILIES = ['/api/mssp/', '/api/tenant/'];

/**
 * The roles the route declares (spec §5.8), checked right after the impersonation rule and
 * before the router's own guards, so a router cannot forget them. Throws at registration for a
 * route of a user family that declares none: deny by default, as for impersonation.
 */
function roleGuard(r: Route): MiddlewareHandler | undefined {
  if (r.roles !== undefined) return requireRole(...r.roles);
  if (USER_FAMILIES.some((prefix) => r.path.startsWith(prefix))) {
    throw new Error(`${r.method} ${r.path}: a route of a user family must declare its roles`);
  }
  return undefined;
}
