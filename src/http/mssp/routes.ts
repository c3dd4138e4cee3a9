import { Hono } from 'hono';
import type { ApiDeps } from '../app.ts';

/** `/api/mssp/*` (spec §4.2): platform_admin, mssp_admin, analyst. */
export function msspRoutes(_api: ApiDeps): Hono {
  return new Hono();
}
