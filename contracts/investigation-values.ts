import Type from 'typebox';

/**
 * An investigation's status and severity as both families filter by them: the customer's list
 * (contracts/tenant.ts) and the MSSP's cross-tenant list (contracts/mssp.ts). Their own file,
 * because tenant.ts already imports mssp.ts and the reverse import would be a cycle.
 */
export const InvestigationStatus = Type.Union([
  Type.Literal('open'),
  Type.Literal('triaging'),
  Type.Literal('awaiting_review'),
  Type.Literal('resolved'),
  Type.Literal('closed'),
]);

export const Severity = Type.Union([
  Type.Literal('info'),
  Type.Literal('low'),
  Type.Literal('medium'),
  Type.Literal('high'),
  Type.Literal('critical'),
]);
