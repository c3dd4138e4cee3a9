import { Hono } from 'hono';
import type { ApiDeps } from '../app.ts';

/** `/api/internal/*` (spec §4.4): adapter and worker tokens, tenant from the token. */
export function internalRoutes(_api: ApiDeps): { public: Hono; authenticated: Hono } {
  return { public: new Hono(), authenticated: new Hono() };
}
