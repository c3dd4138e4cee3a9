import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Hono } from 'hono';
import Type from 'typebox';
import { fillPath, route, Uuid } from '../../contracts/index.ts';
import { compilePath, implement } from '../../src/http/contract.ts';
import { ProblemError, problem } from '../../src/http/problem.ts';

const params = Type.Object({ tenant_id: Uuid }, { additionalProperties: false });
const get = route({
  method: 'POST',
  path: '/api/x/tenants/{tenant_id}',
  summary: 'plain',
  access: 'test',
  params,
  responses: { 200: Type.Object({ hit: Type.String(), id: Type.String() }) },
});
const decommission = route({
  method: 'POST',
  path: '/api/x/tenants/{tenant_id}:decommission',
  summary: 'custom method',
  access: 'test',
  params,
  responses: { 200: Type.Object({ hit: Type.String(), id: Type.String() }) },
});

function app() {
  const a = new Hono();
  implement(
    a,
    get,
    [],
  )(async (_c, { params: p }) => ({ status: 200, body: { hit: 'plain', id: p.tenant_id } }));
  implement(
    a,
    decommission,
    [],
  )(async (_c, { params: p }) => ({ status: 200, body: { hit: 'decommission', id: p.tenant_id } }));
  a.notFound((c) => problem(c, 404, 'not_found', 'Not Found'));
  a.onError((e, c) =>
    e instanceof ProblemError
      ? problem(c, e.status, e.code, e.title, e.extra)
      : problem(c, 500, 'internal', 'x'),
  );
  return a;
}

const ID = '3f1c2a8e-1111-4111-8111-111111111111';

test('§4.2 a custom method path captures only the uuid and never reaches the plain {id} handler', async () => {
  const a = app();
  const custom = await a.request(`/api/x/tenants/${ID}:decommission`, { method: 'POST' });
  assert.deepEqual(await custom.json(), { hit: 'decommission', id: ID });
  const plain = await a.request(`/api/x/tenants/${ID}`, { method: 'POST' });
  assert.deepEqual(await plain.json(), { hit: 'plain', id: ID });
  for (const path of [
    `/api/x/tenants/${ID}:upgrade`,
    `/api/x/tenants/${ID}:decommission/extra`,
    `/api/x/tenants/${ID}::decommission`,
  ]) {
    const res = await a.request(path, { method: 'POST' });
    assert.equal(res.status, 404, path);
  }
});

test('§4 a malformed path parameter is a 400 validation problem naming the parameter', async () => {
  const res = await app().request('/api/x/tenants/not-a-uuid:decommission', { method: 'POST' });
  assert.equal(res.status, 400);
  const body = (await res.json()) as { code: string; errors: { path: string }[] };
  assert.equal(body.code, 'validation_failed');
  assert.deepEqual(
    body.errors.map((e) => e.path),
    ['/params/tenant_id'],
  );
});

test('§4 paths fill and compile symmetrically; values cannot add segments', () => {
  assert.equal(
    fillPath('/api/x/tenants/{tenant_id}:decommission', { tenant_id: ID }),
    `/api/x/tenants/${ID}:decommission`,
  );
  assert.equal(fillPath('/api/x/{a}', { a: '../b/c' }), '/api/x/..%2Fb%2Fc');
  assert.throws(() => fillPath('/api/x/{a}', {}), /missing path parameter a/);
  const { match } = compilePath('/api/x/tenants/{tenant_id}:decommission');
  assert.deepEqual(match(`/api/x/tenants/${ID}:decommission`), { tenant_id: ID });
  assert.equal(match(`/api/x/tenants/${ID}`), undefined);
});
