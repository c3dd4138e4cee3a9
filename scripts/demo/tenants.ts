import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Static } from 'typebox';
import { createSvcClient, type SvcClient } from '../../contracts/index.ts';
import type { Branding, LlmSettings } from '../../contracts/tenant-config.ts';
import { loopbackFetch } from './loopback-fetch.ts';

/** One demo tenant: how it is created, and whom its portal is shown to. */
export interface DemoTenantSpec {
  readonly slug: string;
  readonly displayName: string;
  readonly branding: Static<typeof Branding>;
  readonly customerEmail: string;
}

export const DEMO_TENANTS: readonly DemoTenantSpec[] = [
  {
    slug: 'acme',
    displayName: 'Acme Corporation',
    branding: { app_name: 'Acme SOC', primary_color: '#0b5394', secondary_color: '#f1c232' },
    customerEmail: 'customer@acme.example',
  },
  {
    slug: 'globex',
    displayName: 'Globex Industries',
    branding: { app_name: 'Globex Security', primary_color: '#38761d', secondary_color: '#d9ead3' },
    customerEmail: 'customer@globex.example',
  },
];

/**
 * The triage policy the demo gives each tenant, so every path of the pipeline shows: quiet
 * alerts (PAM failures, level 5) close by policy, SQL injection always goes to a human, and
 * the rest reaches the model, whose answers close some and propose reviews for others.
 */
const DEMO_POLICY = { auto_close_below_level: 6, always_escalate_rule_groups: ['sql_injection'] };

export interface Credentials {
  readonly email: string;
  readonly password: string;
}

/** A password svc accepts (at least 12 characters), printed once by the demo. */
export function demoPassword(): string {
  return `demo-${randomBytes(9).toString('base64url')}`;
}

/** Signs in and, when svc asks for it (a first password), changes it to `password`. */
export async function signIn(
  baseUrl: string,
  email: string,
  initial: string,
  password: string,
): Promise<SvcClient> {
  const client = createSvcClient({ baseUrl, headers: { origin: baseUrl }, fetch: loopbackFetch });
  const login = await client.auth.login({ body: { email, password: initial } });
  if (login.status !== 200) throw new Error(`sign-in as ${email} answered ${login.status}`);
  if (login.body.must_change) {
    const changed = await client.auth.changePassword({
      body: { current_password: initial, new_password: password },
    });
    if (changed.status !== 200) throw new Error(`password change of ${email}: ${changed.status}`);
  }
  return client;
}

/** The LLM every demo tenant triages with: the stand-in, or one configured by the operator. */
export type DemoLlm = Static<typeof LlmSettings>;

/** Creates the tenant through the MSSP API (audit, lifecycle and Secrets are the real ones). */
export async function createDemoTenant(
  admin: SvcClient,
  spec: DemoTenantSpec,
  llm: DemoLlm,
): Promise<string> {
  const created = await admin.mssp.createTenant({
    body: { slug: spec.slug, display_name: spec.displayName, branding: spec.branding, llm },
  });
  if (created.status !== 201) {
    throw new Error(
      `creating tenant ${spec.slug}: ${created.status} ${JSON.stringify(created.body)}`,
    );
  }
  const id = created.body.tenant.id;
  const policy = await admin.mssp.putTriagePolicy({ params: { tenant_id: id }, body: DEMO_POLICY });
  if (policy.status !== 200) throw new Error(`triage policy of ${spec.slug}: ${policy.status}`);
  return id;
}

/** A customer_viewer of the tenant, signed in once at the portal to set a known password. */
export async function createCustomer(
  admin: SvcClient,
  tenantId: string,
  spec: DemoTenantSpec,
  portalUrl: string,
): Promise<Credentials> {
  const created = await admin.mssp.createTenantUser({
    params: { tenant_id: tenantId },
    body: { email: spec.customerEmail, display_name: `${spec.displayName} customer` },
  });
  if (created.status !== 201 || !created.body.initial_password) {
    throw new Error(`customer of ${spec.slug}: ${created.status}`);
  }
  const password = demoPassword();
  await signIn(portalUrl, spec.customerEmail, created.body.initial_password, password);
  return { email: spec.customerEmail, password };
}

/** Polls the MSSP API until the tenant is in `state`; a failed attempt ends the wait. */
export async function waitForTenantState(
  admin: SvcClient,
  tenantId: string,
  state: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const res = await admin.mssp.getTenant({ params: { tenant_id: tenantId } });
    if (res.status === 200) {
      const { tenant } = res.body;
      if (tenant.state === state) return;
      if (tenant.state === 'pending' && tenant.error_details) {
        throw new Error(`provisioning failed: ${JSON.stringify(tenant.error_details)}`);
      }
      last = tenant.state;
    }
    await sleep(1_000);
  }
  throw new Error(`tenant ${tenantId} not ${state} within ${timeoutMs / 1000} s (last: ${last})`);
}
