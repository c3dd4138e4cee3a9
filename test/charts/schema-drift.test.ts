import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CHART_SCHEMAS, readChartSchema, renderSchema } from '../../src/charts/schemas.ts';

for (const { chart, schema } of CHART_SCHEMAS) {
  test(`§2.9 charts/${chart}/values.schema.json is generated from contracts/ (npm run charts:schema)`, async () => {
    assert.equal(
      await readChartSchema(chart),
      renderSchema(schema),
      `charts/${chart}/values.schema.json differs from its TypeBox source: run npm run charts:schema`,
    );
  });
}

test('§2.9 both packages have a generated schema', () => {
  assert.deepEqual(CHART_SCHEMAS.map((c) => c.chart).sort(), ['svc-system', 'svc-tenant']);
});
