/**
 * The one spelling of a uuid. svc writes ids in the canonical lowercase form (labels, token
 * claims, chart values match `CANONICAL_UUID`); input from people and peers is read in either
 * case (`isUuid`).
 */
export const CANONICAL_UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

const ANY_CASE = new RegExp(`^${CANONICAL_UUID}$`, 'i');
const LOWERCASE = new RegExp(`^${CANONICAL_UUID}$`);

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && ANY_CASE.test(value);
}

export function isCanonicalUuid(value: unknown): value is string {
  return typeof value === 'string' && LOWERCASE.test(value);
}
