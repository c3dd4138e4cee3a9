import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseQuantity, QuantityError } from '../../src/domains/tenants/quantity.ts';

test('issue 18 item 1: quantities parse exactly per resource kind (millicores, bytes)', () => {
  assert.equal(parseQuantity('cpu', '2'), 2000n);
  assert.equal(parseQuantity('cpu', '1.5'), 1500n);
  assert.equal(parseQuantity('cpu', '250m'), 250n);
  assert.equal(parseQuantity('memory', '1.5Gi'), 1610612736n);
  assert.equal(parseQuantity('memory', '768Mi'), 805306368n);
  assert.equal(parseQuantity('storage', '20G'), 20_000_000_000n);
  assert.equal(parseQuantity('memory', '9223372036854775807'), 2n ** 63n - 1n);
});

test('issue 18 item 1: quantities of the wrong kind, sub-unit precision or beyond int64 are refused', () => {
  for (const [kind, text] of [
    ['cpu', '1Gi'],
    ['cpu', '0.0001'],
    ['cpu', '1k'],
    ['memory', '500m'],
    ['memory', '0.5'],
    ['memory', '1.0000000001k'],
    ['memory', '99999999999999999999Gi'],
    ['memory', '9999999999999999999Ei'],
    ['storage', '9223372036854775808'],
    ['cpu', ''],
    ['memory', '-1Gi'],
    ['memory', '1e3'],
  ] as const) {
    assert.throws(() => parseQuantity(kind, text), QuantityError, `${kind} ${text}`);
  }
});
