import Type, { type Static } from 'typebox';

/** A Kubernetes quantity; YAML turns `cpu: 2` into a number, which Kubernetes accepts too. */
const Quantity = Type.Union([
  Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$' }),
  Type.Number({ minimum: 0 }),
]);

const Compute = Type.Object({ cpu: Quantity, memory: Quantity }, { additionalProperties: false });

/** A container's requests and limits, with the chart's defaults (system values). */
export function resources(requests: Static<typeof Compute>, limits: Static<typeof Compute>) {
  return Type.Object(
    { requests: Compute, limits: Compute },
    { additionalProperties: false, default: { requests, limits } },
  );
}
