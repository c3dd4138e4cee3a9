import assert from 'node:assert/strict';
import { test } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { contract } from '../../contracts/index.ts';
import { createApp } from '../../src/http/server/app.ts';
import { createLogger } from '../../src/log/index.ts';

const app = createApp({
  authMode: 'internal',
  trustedProxyCidrs: [],
  logger: createLogger('silent'),
  databaseReady: async () => true,
});

test('§4 the served OpenAPI document validates as OpenAPI 3.1', async () => {
  const res = await app.request('/api/openapi.json');
  assert.equal(res.status, 200);
  const doc = (await res.json()) as Record<string, unknown>;
  assert.equal(doc.openapi, '3.1.0');
  // swagger-parser validates against the official OpenAPI 3.1 schema and checks $refs.
  await SwaggerParser.validate(structuredClone(doc) as never);
  const broken = structuredClone(doc) as { paths: Record<string, unknown> };
  broken.paths['/api/broken'] = { get: { responses: 'none' } };
  await assert.rejects(SwaggerParser.validate(broken as never), /validation failed/);
});

test("§4 the OpenAPI document lists every contract route, in the spec's path notation", async () => {
  const doc = (await (await app.request('/api/openapi.json')).json()) as {
    paths: Record<string, Record<string, { operationId: string }>>;
  };
  const listed = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => `${method.toUpperCase()} ${path} ${op.operationId}`),
  );
  const expected = Object.entries(contract).flatMap(([family, routes]) =>
    Object.entries(routes).map(([name, r]) => `${r.method} ${r.path} ${family}.${name}`),
  );
  assert.deepEqual(listed.sort(), expected.sort());
  assert.ok(listed.some((l) => l.includes('/api/mssp/users/{id}/password/reset')));
});

test('§4 the reference page is served and self-contained', async () => {
  const res = await app.request('/api/docs');
  assert.equal(res.status, 200);
  const html = await res.text();
  assert.match(html, /POST \/api\/auth\/login/);
  assert.doesNotMatch(html, /<script/);
});

type Operation = {
  operationId: string;
  requestBody?: { content: Record<string, { schema: Record<string, unknown> }> };
  responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>;
};

async function operations(): Promise<Map<string, Operation>> {
  const doc = (await (await app.request('/api/openapi.json')).json()) as {
    paths: Record<string, Record<string, Operation>>;
  };
  return new Map(
    Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => [op.operationId, op])),
  );
}

test('issue 10 item 8: every operation declares the problems its shared layers answer, as problem+json', async () => {
  const ops = await operations();
  for (const [family, routes] of Object.entries(contract)) {
    for (const [name, r] of Object.entries(routes)) {
      const op = ops.get(`${family}.${name}`);
      assert.ok(op, `${family}.${name}`);
      const expected = ['503'];
      if (r.params || r.query || r.body) expected.push('400');
      if (r.body) expected.push('413', '415');
      if (!r.anonymous) expected.push('401', '403');
      for (const status of expected) {
        const response: Operation['responses'][string] | undefined = op.responses[status];
        assert.ok(response, `${family}.${name} declares ${status}`);
        assert.deepEqual(
          Object.keys(response.content ?? {}),
          ['application/problem+json'],
          `${family}.${name} ${status}`,
        );
        assert.deepEqual(response.content?.['application/problem+json']?.schema, {
          $ref: '#/components/schemas/Problem',
        });
      }
    }
  }
  // Anonymous routes are not offered 401/403 by the shared layers; sign-in is rate limited.
  const login = ops.get('auth.login');
  assert.ok(login?.responses['429'] && login.responses['403'], 'login: 429 and CSRF 403');
  assert.ok(ops.get('auth.changePassword')?.responses['429'], 'password change hashes too');
  // The exchange's own 403 (issue 15): `tenant_suspended`, to a valid credential's holder only.
  assert.ok(ops.get('internal.bootstrap')?.responses['403'], 'bootstrap: tenant_suspended');
});

test('issue 10 item 8: the audit view declares its CSV and NDJSON exports', async () => {
  const audit = (await operations()).get('mssp.audit');
  assert.deepEqual(Object.keys(audit?.responses['200']?.content ?? {}).sort(), [
    'application/json',
    'application/x-ndjson',
    'text/csv',
  ]);
});

test('issue 10 item 8: a new password declares the 12-character minimum; sign-in accepts older ones', async () => {
  const ops = await operations();
  const schema = (id: string) =>
    ops.get(id)?.requestBody?.content['application/json']?.schema as {
      properties: Record<string, { minLength?: number; maxLength?: number }>;
    };
  const change = schema('auth.changePassword').properties;
  assert.deepEqual([change.new_password?.minLength, change.new_password?.maxLength], [12, 1024]);
  assert.equal(change.current_password?.minLength, 1);
  assert.equal(schema('auth.login').properties.password?.minLength, 1);
});

test('issue 10 item 8: every operation declares how it authenticates', async () => {
  const doc = (await (await app.request('/api/openapi.json')).json()) as {
    paths: Record<string, Record<string, { security?: Record<string, string[]>[] }>>;
  };
  const schemes = (path: string, method: string) =>
    doc.paths[path]?.[method]?.security?.map((s) => Object.keys(s).join('+'));
  assert.deepEqual(schemes('/api/auth/login', 'post'), []);
  assert.deepEqual(schemes('/api/internal/adapter/bootstrap', 'post'), []);
  assert.deepEqual(schemes('/api/auth/me', 'get'), ['session']);
  assert.deepEqual(schemes('/api/internal/adapter/health', 'post'), ['bearer']);
  assert.deepEqual(schemes('/api/mssp/tenants', 'get'), ['session', 'bearer']);
  assert.deepEqual(schemes('/api/tenant/overview', 'get'), ['session', 'bearer']);
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      assert.ok(Array.isArray(op.security), `${method} ${path} declares security`);
    }
  }
});
