import Type from 'typebox';

/**
 * What an adapter says about itself in each heartbeat: a flat, bounded component → value map
 * (e.g. `{ "ingest": "running", "lag_seconds": 3 }`, docs/adapter.md). Its own module because
 * both the internal family (the heartbeat body) and the MSSP family (the tenant detail) use it.
 */
export const AdapterStatus = Type.Record(
  Type.String({ pattern: '^[a-z][a-z0-9_.-]{0,63}$' }),
  Type.Union([Type.String({ maxLength: 256 }), Type.Number(), Type.Boolean(), Type.Null()]),
  { maxProperties: 64, additionalProperties: false },
);
