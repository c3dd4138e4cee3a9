import assert from 'node:assert/strict';
import { test } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { contract } from '../../contracts/index.ts';
import { createApp } from '../../src/http/app.ts';
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
