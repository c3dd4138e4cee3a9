import Type from 'typebox';

/**
 * What an operator may write about svc's outbound calls (LLM providers, TheHive, Cortex), both
 * as svc's environment (src/config) and as system chart values (system-values.ts): one
 * definition for both, so the chart never accepts what svc would refuse at start.
 */

/** A host name or `*.domain` pattern svc may call although it resolves to an internal address. */
export const OUTBOUND_HOST_PATTERN = '(\\*\\.)?[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?';

/** USD per million tokens by model name (`SVC_LLM_PRICES`, docs/llm.md "Prices"). */
export const LlmPrices = Type.Record(
  Type.String({ minLength: 1, maxLength: 200 }),
  Type.Object(
    {
      input_per_mtok: Type.Number({ minimum: 0, maximum: 1_000_000 }),
      output_per_mtok: Type.Number({ minimum: 0, maximum: 1_000_000 }),
    },
    { additionalProperties: false },
  ),
  { default: {} },
);
