/** `/api/internal/*` (spec §4.4). */
export const internalContract = {} as const;
