import assert from 'node:assert/strict';
import { test } from 'node:test';
import { accessText, contract, ROLES, Role } from '../../contracts/index.ts';
import { MSSP_ROLES } from '../../src/auth/identity.ts';

test('§5.8 the Role schema, the typed role list and the server names one set of roles', () => {
  assert.deepEqual(
    Role.anyOf.map((literal) => literal.const),
    [...ROLES],
  );
  assert.deepEqual(
    [...MSSP_ROLES],
    ROLES.filter((r) => r !== 'customer_viewer'),
  );
});

test("§4 the reference page's access line is derived from the declared roles and impersonation rule", () => {
  assert.equal(
    accessText(contract.mssp.putConfig),
    'platform_admin, mssp_admin; not with an impersonation token',
  );
  assert.equal(
    accessText(contract.mssp.audit),
    'platform_admin, mssp_admin, analyst; an impersonation token: its own tenant only; export: platform_admin',
  );
  assert.equal(
    accessText(contract.tenant.overview),
    "customer_viewer; session or tenant token; always the caller's own tenant",
  );
  assert.equal(accessText(contract.internal.health), 'adapter token');
});
