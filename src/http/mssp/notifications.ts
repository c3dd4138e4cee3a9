import type { Context } from 'hono';
import { Hono } from 'hono';
import { msspNotificationsContract as contract } from '../../../contracts/mssp/notifications.ts';
import type { NotificationService } from '../../domains/notifications/notification-service.ts';
import type { ActorRef, WebhookScope } from '../../domains/notifications/notification-types.ts';
import { implement } from '../contract.ts';
import { tenantOfRequest } from '../guards.ts';

const INSTALL: WebhookScope = { kind: 'install' };

function actorOf(c: Context): ActorRef {
  const identity = c.get('identity');
  return { userId: identity.user_id, actingAs: identity.current_tenant };
}

function tenantScope(c: Context, tenantId: string): WebhookScope {
  return { kind: 'tenant', tenantId: tenantOfRequest(c, tenantId) };
}

/** Install and tenant webhooks, their delivery logs and test sends (docs/notifications.md). */
export function notificationRoutes(notifications: NotificationService): Hono {
  const app = new Hono();

  implement(
    app,
    contract.listInstallWebhooks,
  )(async () => ({
    status: 200,
    body: { items: await notifications.list(INSTALL) },
  }));
  implement(
    app,
    contract.createInstallWebhook,
  )(async (c, { body }) => ({
    status: 201,
    body: await notifications.create(INSTALL, body, actorOf(c)),
  }));
  implement(
    app,
    contract.getInstallWebhook,
  )(async (_c, { params }) => ({
    status: 200,
    body: await notifications.get(INSTALL, params.webhook_id),
  }));
  implement(
    app,
    contract.updateInstallWebhook,
  )(async (c, { params, body }) => ({
    status: 200,
    body: await notifications.update(INSTALL, params.webhook_id, body, actorOf(c)),
  }));
  implement(
    app,
    contract.deleteInstallWebhook,
  )(async (c, { params }) => {
    await notifications.remove(INSTALL, params.webhook_id, actorOf(c));
    return { status: 204, body: null };
  });
  implement(
    app,
    contract.installWebhookDeliveries,
  )(async (_c, { params }) => ({
    status: 200,
    body: { items: await notifications.deliveries(INSTALL, params.webhook_id) },
  }));
  implement(
    app,
    contract.testInstallWebhook,
  )(async (c, { params }) => ({
    status: 200,
    body: await notifications.test(INSTALL, params.webhook_id, actorOf(c)),
  }));

  implement(
    app,
    contract.listTenantWebhooks,
  )(async (c, { params }) => ({
    status: 200,
    body: { items: await notifications.list(tenantScope(c, params.tenant_id)) },
  }));
  implement(
    app,
    contract.createTenantWebhook,
  )(async (c, { params, body }) => ({
    status: 201,
    body: await notifications.create(tenantScope(c, params.tenant_id), body, actorOf(c)),
  }));
  implement(
    app,
    contract.getTenantWebhook,
  )(async (c, { params }) => ({
    status: 200,
    body: await notifications.get(tenantScope(c, params.tenant_id), params.webhook_id),
  }));
  implement(
    app,
    contract.updateTenantWebhook,
  )(async (c, { params, body }) => ({
    status: 200,
    body: await notifications.update(
      tenantScope(c, params.tenant_id),
      params.webhook_id,
      body,
      actorOf(c),
    ),
  }));
  implement(
    app,
    contract.deleteTenantWebhook,
  )(async (c, { params }) => {
    await notifications.remove(tenantScope(c, params.tenant_id), params.webhook_id, actorOf(c));
    return { status: 204, body: null };
  });
  implement(
    app,
    contract.tenantWebhookDeliveries,
  )(async (c, { params }) => ({
    status: 200,
    body: {
      items: await notifications.deliveries(tenantScope(c, params.tenant_id), params.webhook_id),
    },
  }));
  implement(
    app,
    contract.testTenantWebhook,
  )(async (c, { params }) => ({
    status: 200,
    body: await notifications.test(tenantScope(c, params.tenant_id), params.webhook_id, actorOf(c)),
  }));

  return app;
}
