import Type from 'typebox';
import Format from 'typebox/format';

/**
 * An RFC 3339 date-time that PostgreSQL's timestamptz can hold as given: a four-digit year
 * other than 0000 (PostgreSQL has no year zero), an offset within ±15:59 (its limit; RFC 3339
 * allows ±23:59), and no RFC 9557 `[zone]` suffix (PostgreSQL cannot parse one). Anything else
 * would pass the JSON Schema format and then fail in the database as a 500. No look-ahead in
 * the pattern: test-data generators that read the OpenAPI document handle it badly.
 */
const TIMESTAMP_PATTERN =
  '^([1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-](0[0-9]|1[0-5]):[0-5][0-9])$';

const storable = new RegExp(TIMESTAMP_PATTERN);

/** True for a date-time both RFC 3339 (real calendar day, valid clock) and storable as given. */
function isStorableTimestamp(value: string): boolean {
  return storable.test(value) && Format.IsDateTime(value);
}

// The rule is registered as the `date-time` format itself, so an inline
// `Type.String({ format: 'date-time' })` anywhere gets it too, not only `Timestamp` below.
// Compiled checkers look the format up when they are compiled, and contracts load first.
Format.Set('date-time', isStorableTimestamp);

/**
 * The one timestamp schema of the API; the pattern is in the OpenAPI document as well. A codec:
 * on the wire it is the text above, and a server handler answers it with a Date (a response
 * body's type is its schema's decoded form, src/http/contract.ts), which the response encodes
 * once as `Date#toISOString`: RFC 3339 in UTC with milliseconds (`2026-01-02T03:04:05.678Z`),
 * also what JSON.stringify writes for a Date. Requests still arrive as the text.
 */
export const Timestamp = Type.Codec(
  Type.String({ format: 'date-time', pattern: TIMESTAMP_PATTERN }),
)
  .Decode((text: string) => new Date(text))
  .Encode((instant: Date) => instant.toISOString());
