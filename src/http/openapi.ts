import { accessText, type Family, type Route } from '../../contracts/route.ts';

type Json = Record<string, unknown>;

/** TypeBox schemas are JSON Schema with symbol-keyed metadata; JSON drops the symbols. */
function plain(schema: unknown): Json {
  return JSON.parse(JSON.stringify(schema)) as Json;
}

const TAGS: Record<string, string> = {
  auth: 'Internal-mode sign-in, sessions and password change (spec §4.1)',
  mssp: 'MSSP side: platform_admin, mssp_admin, analyst (spec §4.2)',
  tenant: 'Tenant side: customer_viewer, read-only (spec §4.3)',
  internal: 'Service to service: adapter and worker tokens (spec §4.4)',
  public: 'Before sign-in: the branding of the portal the host names (spec §5.9 item 1)',
};

function parameters(r: Route): Json[] {
  const out: Json[] = [];
  const params = r.params ? plain(r.params) : undefined;
  for (const [name, schema] of Object.entries((params?.properties as Json | undefined) ?? {})) {
    out.push({ name, in: 'path', required: true, schema });
  }
  const query = r.query ? plain(r.query) : undefined;
  const required = new Set((query?.required as string[] | undefined) ?? []);
  for (const [name, schema] of Object.entries((query?.properties as Json | undefined) ?? {})) {
    out.push({ name, in: 'query', required: required.has(name), schema });
  }
  return out;
}

/**
 * Problem answers a route gives by what it is, whatever it lists itself: the shared layers in
 * front of every handler (validation, body limit, authentication and CSRF, the database)
 * answer them, so they are derived here rather than repeated in every contract.
 */
const SHARED_PROBLEMS: Record<number, string> = {
  400: 'Invalid input: `validation_failed` (a path parameter, query parameter or body field; `errors` lists them), `invalid_characters`, `malformed_json`',
  401: 'No valid credential: `unauthenticated`, `session_expired`, `invalid_token`',
  403: 'Refused: `forbidden` or `wrong_family` (role), `csrf_rejected` (state-changing request from a foreign origin), `password_change_required`, `outside_impersonated_tenant`',
  413: "`payload_too_large`: request bodies are limited to 1 MiB, 4 MiB for the adapter's alert batches (refused while streaming); `batch_too_large`: more than 500 alerts in one batch",
  415: '`unsupported_media_type`: request bodies must be application/json',
  503: '`database_unavailable` (retry after `Retry-After`); `auth_busy` where a password is hashed',
};

function sharedProblems(r: Route): number[] {
  const out = [503];
  if (r.params || r.query || r.body) out.push(400);
  if (r.body) out.push(413, 415);
  if (!r.anonymous) out.push(401, 403);
  // The CSRF check (app.ts) guards every state-changing route outside the service family.
  else if (r.method !== 'GET' && !r.path.startsWith('/api/internal/')) out.push(403);
  return out;
}

function problemResponse(status: number): Json {
  return {
    description: `${SHARED_PROBLEMS[status] ?? 'Problem details'} (RFC 9457; codes in docs/errors.md)`,
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  };
}

function responses(r: Route): Json {
  const out: Json = {};
  for (const [status, schema] of Object.entries(r.responses)) {
    const code = Number(status);
    if (code >= 400) {
      out[status] = problemResponse(code);
    } else if (schema === null) {
      out[status] = { description: 'Success' };
    } else {
      const alternatives = Object.fromEntries(
        Object.entries(r.alternativeMedia ?? {}).map(([type, s]) => [type, { schema: plain(s) }]),
      );
      const type = r.stream ?? 'application/json';
      out[status] = {
        description: 'Success',
        content: { [type]: { schema: plain(schema) }, ...alternatives },
      };
    }
  }
  for (const code of sharedProblems(r)) out[String(code)] ??= problemResponse(code);
  return out;
}

/**
 * How each operation authenticates: anonymous routes none, `/api/auth/*` the session cookie,
 * `/api/internal/*` a service bearer token, the user families a session or a bearer token.
 * (Proxy mode's identity headers are the proxy's business and not a client credential.)
 */
function security(family: string, r: Route): Json[] {
  if (r.anonymous) return [];
  if (family === 'auth') return [{ session: [] }];
  if (family === 'internal') return [{ bearer: [] }];
  return [{ session: [] }, { bearer: [] }];
}

/** OpenAPI 3.1 generated from the same contract objects the server and client use. */
export function openApiDocument(
  families: Record<string, Family>,
  problem: unknown,
  version: string,
): Json {
  const paths: Record<string, Json> = {};
  for (const [family, routes] of Object.entries(families)) {
    for (const [name, r] of Object.entries(routes)) {
      const operation: Json = {
        operationId: `${family}.${name}`,
        tags: [family],
        summary: r.summary,
        description: `Access: ${accessText(r)}`,
        parameters: parameters(r),
        responses: responses(r),
        security: security(family, r),
      };
      if (r.body) {
        operation.requestBody = {
          required: true,
          content: { 'application/json': { schema: plain(r.body) } },
        };
      }
      paths[r.path] = { ...(paths[r.path] ?? {}), [r.method.toLowerCase()]: operation };
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc API',
      version,
      description:
        'Multi-tenant security-operations control plane. Errors are application/problem+json.',
    },
    tags: Object.keys(families).map((name) => ({ name, description: TAGS[name] ?? name })),
    paths,
    components: {
      schemas: { Problem: plain(problem) },
      securitySchemes: {
        session: { type: 'apiKey', in: 'cookie', name: 'svc_session' },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      },
    },
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/**
 * A self-contained reference page (no scripts from elsewhere: consoles may run air-gapped):
 * every operation with its access rule, inputs and responses, schemas shown as JSON.
 */
export function referencePage(doc: Json): string {
  const sections: string[] = [];
  for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    for (const [method, op] of Object.entries(methods)) {
      const body = (op.requestBody as Json | undefined)?.content as Json | undefined;
      sections.push(`<section id="${escapeHtml(String(op.operationId))}">
<h2><code>${method.toUpperCase()} ${escapeHtml(path)}</code></h2>
<p>${escapeHtml(String(op.summary))}. <em>${escapeHtml(String(op.description))}</em></p>
${(op.parameters as Json[]).length ? `<h3>Parameters</h3><pre>${escapeHtml(JSON.stringify(op.parameters, null, 2))}</pre>` : ''}
${body ? `<h3>Request body</h3><pre>${escapeHtml(JSON.stringify(body, null, 2))}</pre>` : ''}
<h3>Responses</h3><pre>${escapeHtml(JSON.stringify(op.responses, null, 2))}</pre>
</section>`);
    }
  }
  const info = doc.info as Json;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(String(info.title))} reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}
pre{background:#f4f4f4;padding:.75rem;overflow:auto;font-size:13px}h2{border-top:1px solid #ddd;padding-top:1rem}</style>
</head><body><h1>${escapeHtml(String(info.title))} ${escapeHtml(String(info.version))}</h1>
<p>Machine-readable: <a href="/api/openapi.json">/api/openapi.json</a> (OpenAPI 3.1).</p>
${sections.join('\n')}
</body></html>`;
}
