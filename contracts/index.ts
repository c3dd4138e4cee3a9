import { authContract } from './auth.ts';
import { type ClientOptions, createFamilyClient, createTransport } from './client.ts';
import { internalContract } from './internal.ts';
import { msspContract } from './mssp.ts';
import { publicContract } from './public.ts';
import { tenantContract } from './tenant.ts';

export { authContract, ChangePasswordBody, Identity, LoginBody, Role } from './auth.ts';
export {
  type ClientOptions,
  createFamilyClient,
  createTransport,
  type FamilyClient,
  fillPath,
  type Transport,
} from './client.ts';
export { internalContract } from './internal.ts';
export { msspContract } from './mssp.ts';
export { PublicBranding, publicContract } from './public.ts';
export {
  CUSTOMER_ROLES,
  MSSP_OPERATORS,
  MSSP_ROLES,
  PLATFORM_ADMINS,
  ROLES,
} from './roles.ts';
export * from './route.ts';
export { tenantContract } from './tenant.ts';

/** Every API family, by name; one endpoint belongs to exactly one family (spec §1 item 5). */
export const contract = {
  auth: authContract,
  mssp: msspContract,
  tenant: tenantContract,
  internal: internalContract,
  public: publicContract,
} as const;

/** The typed SDK: `const svc = createSvcClient({ baseUrl }); await svc.auth.login({ body })`. */
export function createSvcClient(options: ClientOptions) {
  const transport = createTransport(options);
  return {
    auth: createFamilyClient(contract.auth, transport),
    mssp: createFamilyClient(contract.mssp, transport),
    tenant: createFamilyClient(contract.tenant, transport),
    internal: createFamilyClient(contract.internal, transport),
    public: createFamilyClient(contract.public, transport),
  };
}

export type SvcClient = ReturnType<typeof createSvcClient>;
