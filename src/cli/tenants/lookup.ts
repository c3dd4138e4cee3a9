import type { Static } from 'typebox';
import Value from 'typebox/value';
import type { TenantState } from '../../../contracts/mssp.ts';
import { TenantSlug } from '../../../contracts/tenant-config.ts';
import { isUuid } from '../../../contracts/uuid.ts';
import type { TenantJson } from './output.ts';
import { CliError, expectStatus, type Session } from './session.ts';

/** Finding tenants through the API: by id or slug, and one with its lifecycle. */

export type State = Static<typeof TenantState>;

export function checkSlug(slug: string): void {
  if (!Value.Check(TenantSlug, slug)) {
    throw new CliError(
      2,
      `invalid slug ${JSON.stringify(slug)}: 1-56 lower-case letters, digits and hyphens, starting and ending with a letter or digit (the namespace is tenant-<slug>)`,
    );
  }
}

export function checkRef(ref: string): void {
  if (!isUuid(ref)) checkSlug(ref);
}

export async function listAll(s: Session, state?: State): Promise<TenantJson[]> {
  const items: TenantJson[] = [];
  let cursor: string | undefined;
  do {
    const query = { limit: 200, ...(state ? { state } : {}), ...(cursor ? { cursor } : {}) };
    const page = expectStatus(await s.svc.mssp.listTenants({ query }), 200);
    items.push(...page.items);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return items;
}

export async function resolve(s: Session, ref: string): Promise<string> {
  if (isUuid(ref)) return ref;
  const match = (await listAll(s)).find((t) => t.slug === ref);
  if (!match) throw new CliError(1, `No tenant has the slug ${ref} (tenant_not_found)`);
  return match.id;
}

/** The tenant with its lifecycle in id order (numeric: ids are 64-bit integers as strings). */
export async function getTenant(s: Session, id: string) {
  const body = expectStatus(await s.svc.mssp.getTenant({ params: { tenant_id: id } }), 200);
  const order = (a: { id: string }, b: { id: string }) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1);
  return { ...body, lifecycle: body.lifecycle.toSorted(order) };
}

export async function lifecycleIds(s: Session, id: string): Promise<Set<string>> {
  return new Set((await getTenant(s, id)).lifecycle.map((e) => e.id));
}
