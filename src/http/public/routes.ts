import { Hono } from 'hono';
import { publicContract } from '../../../contracts/public.ts';
import type { BrandingService } from '../../domains/branding/branding-service.ts';
import { implement } from '../contract.ts';
import type { HostPolicy } from '../hosts.ts';

/** `/api/public/*`: what a page may show before sign-in; no session, no identity. */
export function publicRoutes(deps: { branding: BrandingService; hosts: HostPolicy }): Hono {
  const app = new Hono();
  implement(
    app,
    publicContract.branding,
    [],
  )(async (c) => {
    // The answer depends on the host; a shared cache must keep one copy per host, and a
    // branding change shows on the next page load.
    c.header('Vary', 'Host');
    c.header('Cache-Control', 'no-cache');
    const slug = deps.hosts.customerSlug(c.req.header('host'));
    return { status: 200, body: await deps.branding.readPublic(slug) };
  });
  return app;
}
