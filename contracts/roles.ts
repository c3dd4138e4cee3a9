/** The user roles of spec §5.8; `Role` in auth.ts is the same list as a schema. */
export const ROLES = ['platform_admin', 'mssp_admin', 'analyst', 'customer_viewer'] as const;
export type Role = (typeof ROLES)[number];

/** MSSP staff: every role of the `/api/mssp/*` family (spec §4.2). */
export const MSSP_ROLES = [
  'platform_admin',
  'mssp_admin',
  'analyst',
] as const satisfies readonly Role[];

/** The MSSP roles that change tenants, their users and their policies (spec §5.8). */
export const MSSP_OPERATORS = ['platform_admin', 'mssp_admin'] as const satisfies readonly Role[];

/** Install-wide changes and the MSSP user lifecycle (spec §5.8). */
export const PLATFORM_ADMINS = ['platform_admin'] as const satisfies readonly Role[];

/** The customer portal's users: every role of the `/api/tenant/*` family (spec §4.3). */
export const CUSTOMER_ROLES = ['customer_viewer'] as const satisfies readonly Role[];
