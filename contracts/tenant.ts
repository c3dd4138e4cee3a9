/** `/api/tenant/*` (spec §4.3). */
export const tenantContract = {} as const;
