import { Hono } from 'hono';
import type { ApiDeps } from '../app.ts';

/** `/api/tenant/*` (spec §4.3): customer_viewer, tenant from the identity, read-only. */
export function tenantRoutes(_api: ApiDeps): Hono {
  return new Hono();
}
