import { Hono } from 'hono';
import { msspTenantContract } from '../../../contracts/mssp.ts';
import { MSSP_ROLES } from '../../auth/identity.ts';
import { ClusterUnavailableError } from '../../cluster/secrets.ts';
import { canUpgrade } from '../../db/compat.ts';
import type { Transaction } from '../../db/tenant-context.ts';
import { writeAudit } from '../../domains/audit/audit-repository.ts';
import { streamTenantEvents } from '../../domains/events/index.ts';
import { ConfigInvalidError } from '../../domains/tenants/tenant-config.ts';
import { createTenant, SlugTakenError } from '../../domains/tenants/tenant-creation.ts';
import {
  IllegalTransitionError,
  lockTenantOrBusy,
  TenantBusyError,
  transition,
  transitionFor,
} from '../../domains/tenants/tenant-lifecycle.ts';
import { STRICT_OUTBOUND } from '../../net/outbound-url.ts';
import { DEFAULT_EDGE_PORT_BASE, DEFAULT_TIMING } from '../../orchestrator/context.ts';
import { edgePorts } from '../../orchestrator/provision.ts';
import type { Drift } from '../../orchestrator/reconcile.ts';
import { recordStep } from '../../orchestrator/steps.ts';
import type { ApiDeps } from '../app.ts';
import { requireRole, tenantOfRequest } from '../authenticate.ts';
import { implement } from '../contract.ts';
import { DEFAULT_LIMIT, decodeCursor, SORT_KEY_FORMAT, toPage } from '../cursor.ts';
import { ProblemError } from '../problem.ts';
import { auditExport, queryAudit } from './audit.ts';

interface TenantRow {
  id: string;
  slug: string;
  display_name: string;
  state: 'pending' | 'provisioning' | 'active' | 'decommissioning' | 'soft-deleted';
  error_details: Record<string, unknown> | null;
  config_revision: number;
  chart_version: string | null;
  upgrade_target: string | null;
  edge_port_pair: number | null;
  drift: Drift | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

const TENANT_COLUMNS = `id, slug, display_name, state, error_details, config_revision, chart_version,
  upgrade_target, edge_port_pair, drift, created_at, updated_at, deleted_at`;

function tenantJson({ edge_port_pair, ...t }: TenantRow, edgePortBase: number) {
  return {
    ...t,
    edge_ports: edge_port_pair === null ? null : edgePorts(edgePortBase, edge_port_pair),
    created_at: t.created_at.toISOString(),
    updated_at: t.updated_at.toISOString(),
    deleted_at: t.deleted_at?.toISOString() ?? null,
  };
}

async function findTenant(tx: Transaction, id: string): Promise<TenantRow> {
  const { rows } = await tx.query<TenantRow>(
    `SELECT ${TENANT_COLUMNS} FROM tenants WHERE id = $1`,
    [id],
  );
  const row = rows[0];
  if (!row) throw new ProblemError(404, 'tenant_not_found', 'No such tenant');
  return row;
}

const anyMssp = requireRole(...MSSP_ROLES);
const operators = requireRole('platform_admin', 'mssp_admin');

/** The state machine's refusals, as the HTTP answers every illegal or contended transition gets. */
function illegal(error: unknown): never {
  if (error instanceof TenantBusyError) {
    throw new ProblemError(409, 'tenant_busy', error.message);
  }
  if (error instanceof IllegalTransitionError) {
    throw new ProblemError(409, 'invalid_state', error.message, {
      state: error.state ?? null,
      trigger: error.trigger,
    });
  }
  throw error;
}

/** `/api/mssp/*` tenant operations, cross-tenant views and impersonation (spec §4.2). */
export function msspRoutes(api: ApiDeps): Hono {
  const app = new Hono();
  const graceMs = api.tenancy?.decommissionGraceMs ?? DEFAULT_TIMING.decommissionGraceMs;
  const toJson = (t: TenantRow) =>
    tenantJson(t, api.tenancy?.edgePortBase ?? DEFAULT_EDGE_PORT_BASE);

  implement(app, msspTenantContract.createTenant, [requireRole('platform_admin', 'mssp_admin')])(
    async (c, { body }) => {
      const secrets = api.secrets;
      if (!secrets) {
        throw new ProblemError(
          503,
          'cluster_unavailable',
          'svc has no cluster access configured (KUBECONFIG or in-cluster)',
        );
      }
      let created: { id: string };
      const checks = {
        outbound: api.outbound ?? STRICT_OUTBOUND,
        preview: api.tenancy?.previewValues,
      };
      try {
        created = await createTenant({ db: api.db, secrets, checks }, body, c.get('identity'));
      } catch (error) {
        if (error instanceof SlugTakenError) {
          throw new ProblemError(409, 'slug_taken', `The slug ${body.slug} is already in use`);
        }
        if (error instanceof ConfigInvalidError) {
          throw new ProblemError(400, 'validation_failed', 'Request body failed validation', {
            errors: error.errors,
          });
        }
        if (error instanceof ClusterUnavailableError) {
          // Nothing was kept (the transaction rolled back): the same request can be sent again.
          throw new ProblemError(503, error.code, error.message);
        }
        throw error;
      }
      api.tenancy?.kick();
      const tenant = await api.db.withoutTenant((tx) => findTenant(tx, created.id));
      return { status: 201, body: { tenant: toJson(tenant) } };
    },
  );

  implement(app, msspTenantContract.listTenants, [anyMssp])(async (_c, { query }) => {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = decodeCursor('tenants', query.cursor);
    const rows = await api.db.withoutTenant(async (tx) => {
      const { rows } = await tx.query<TenantRow & { sort_key: string }>(
        `SELECT ${TENANT_COLUMNS},
                  to_char(created_at AT TIME ZONE 'UTC', '${SORT_KEY_FORMAT}') AS sort_key
             FROM tenants
            WHERE ($1::text IS NULL OR state = $1)
              AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3::uuid))
            ORDER BY created_at DESC, id DESC
            LIMIT $4`,
        [query.state ?? null, after?.at ?? null, after?.id ?? null, limit + 1],
      );
      return rows;
    });
    const result = toPage('tenants', rows, limit);
    return {
      status: 200,
      body: {
        items: result.rows.map(({ sort_key: _, ...t }) => toJson(t)),
        next_cursor: result.next_cursor,
      },
    };
  });

  implement(app, msspTenantContract.getTenant, [anyMssp])(async (c, { params }) => {
    const id = tenantOfRequest(c, params.tenant_id);
    const tenant = await api.db.withoutTenant((tx) => findTenant(tx, id));
    const lifecycle = await api.db.withTenant(id, async (tx) => {
      const { rows } = await tx.query<{
        id: string;
        kind: string;
        from_state: string | null;
        to_state: string | null;
        step: string | null;
        details: Record<string, unknown>;
        actor: string;
        occurred_at: Date;
      }>(
        `SELECT id::text, kind, from_state, to_state, step, details, actor, occurred_at
           FROM tenant_lifecycle_events ORDER BY tenant_lifecycle_events.id`,
      );
      return rows.map((r) => ({ ...r, occurred_at: r.occurred_at.toISOString() }));
    });
    return { status: 200, body: { tenant: toJson(tenant), lifecycle } };
  });

  implement(app, msspTenantContract.decommission, [requireRole('platform_admin', 'mssp_admin')])(
    async (c, { params }) => {
      const identity = c.get('identity');
      const id = tenantOfRequest(c, params.tenant_id);
      const tenant = await api.db.withTenant(id, async (tx) => {
        // What no state allows is refused at once; a transition that may happen is made under
        // the tenant's lock, from the state read there (issue 18 item 5).
        const seen = await findTenant(tx, id);
        if (!transitionFor('decommission', seen.state)) {
          illegal(new IllegalTransitionError(id, seen.state, 'decommission'));
        }
        await lockTenantOrBusy(tx, id).catch(illegal);
        const before = await findTenant(tx, id);
        // A tenant that never became active holds no customer data: no grace period.
        const neverActive = before.state === 'pending' || before.state === 'provisioning';
        const grace = neverActive ? 0 : graceMs;
        const moved = await transition(tx, {
          tenantId: id,
          trigger: 'decommission',
          from: before.state,
          actor: `user:${identity.user_id}`,
          details: {
            grace_period_seconds: grace / 1000,
            ...(before.upgrade_target === null ? {} : { abandoned_upgrade: before.upgrade_target }),
          },
        }).catch(illegal);
        const graceEndsAt = new Date(moved.stateChangedAt.getTime() + grace);
        await tx.query(
          'UPDATE tenants SET decommission_at = $2, upgrade_target = NULL WHERE id = $1',
          [id, graceEndsAt],
        );
        const after = await findTenant(tx, id);
        await writeAudit(tx, {
          tenantId: id,
          actorPrincipal: 'User',
          actorId: identity.user_id,
          action: 'tenant.decommission',
          details: { grace_period_ends_at: graceEndsAt.toISOString(), never_active: neverActive },
          resourceType: 'tenant',
          resourceId: id,
          before: { state: before.state },
          after: { state: after.state },
          actingAs: identity.current_tenant,
        });
        return after;
      });
      api.tenancy?.kick();
      return { status: 200, body: { tenant: toJson(tenant) } };
    },
  );

  implement(app, msspTenantContract.retry, [operators])(async (c, { params }) => {
    const identity = c.get('identity');
    const id = params.tenant_id;
    const tenant = await api.db.withTenant(id, async (tx) => {
      const seen = await findTenant(tx, id);
      // Not failed (still in progress, or past pending): refused without waiting for the lock.
      if (seen.state === 'pending' && seen.error_details !== null) {
        await lockTenantOrBusy(tx, id).catch(illegal);
      }
      const before = await findTenant(tx, id);
      const { rows } = await tx.query<TenantRow>(
        `UPDATE tenants SET error_details = NULL, updated_at = now()
            WHERE id = $1 AND state = 'pending' AND error_details IS NOT NULL
            RETURNING ${TENANT_COLUMNS}`,
        [id],
      );
      const after = rows[0];
      if (!after) {
        throw new ProblemError(
          409,
          'invalid_state',
          before.state === 'pending'
            ? 'Provisioning has not failed; it is still in progress'
            : `Only a pending tenant whose provisioning failed can be retried; this one is ${before.state}`,
          { state: before.state },
        );
      }
      await recordStep(tx, id, 'retry_requested', `user:${identity.user_id}`, {
        previous_error: before.error_details,
      });
      await writeAudit(tx, {
        tenantId: id,
        actorPrincipal: 'User',
        actorId: identity.user_id,
        action: 'tenant.provision.retry',
        resourceType: 'tenant',
        resourceId: id,
        before: { state: before.state, error_details: before.error_details },
        after: { state: after.state, error_details: null },
      });
      return after;
    });
    api.tenancy?.kick();
    return { status: 202, body: { tenant: toJson(tenant) } };
  });

  implement(app, msspTenantContract.upgrade, [operators])(async (c, { params, body }) => {
    const tenancy = api.tenancy;
    if (!tenancy) {
      throw new ProblemError(503, 'cluster_unavailable', 'svc runs without its orchestrator');
    }
    const identity = c.get('identity');
    const id = params.tenant_id;
    const target = body.tenant_chart_version;
    if (!tenancy.catalog.get(target)) {
      throw new ProblemError(
        422,
        'chart_version_unknown',
        `Tenant package ${target} is not available to this install`,
        {
          available: tenancy.catalog.versions(),
        },
      );
    }
    const result = await api.db.withTenant(id, async (tx) => {
      const seen = await findTenant(tx, id);
      // Only an active tenant without a running upgrade is worth the lock; the checks below
      // refuse the rest from the state read under it.
      if (seen.state === 'active' && seen.upgrade_target === null) {
        await lockTenantOrBusy(tx, id).catch(illegal);
      }
      const before = await findTenant(tx, id);
      if (before.state !== 'active') {
        throw new ProblemError(
          409,
          'invalid_state',
          `Only an active tenant can be upgraded; this one is ${before.state}`,
          { state: before.state },
        );
      }
      if (before.upgrade_target !== null) {
        throw new ProblemError(
          409,
          'upgrade_in_progress',
          `An upgrade to ${before.upgrade_target} is still running`,
          { upgrade_target: before.upgrade_target },
        );
      }
      const verdict = await canUpgrade(tx, tenancy.systemVersion, target);
      const facts = {
        system_version: tenancy.systemVersion,
        tenant_chart_version: target,
        from: before.chart_version,
        compatibility: verdict,
      };
      if (verdict === 'blocked' || verdict === 'out-of-range') {
        await writeAudit(tx, {
          tenantId: id,
          actorPrincipal: 'User',
          actorId: identity.user_id,
          action: 'tenant.upgrade.refuse',
          resourceType: 'tenant',
          resourceId: id,
          details: facts,
        });
        return { refused: verdict, facts } as const;
      }
      const warnings =
        verdict === 'deprecated'
          ? [
              `svc ${tenancy.systemVersion} with tenant package ${target} is deprecated; plan a move to a supported version`,
            ]
          : [];
      const { rows } = await tx.query<TenantRow>(
        `UPDATE tenants SET upgrade_target = $2, updated_at = now()
            WHERE id = $1 AND state = 'active' AND upgrade_target IS NULL RETURNING ${TENANT_COLUMNS}`,
        [id, target],
      );
      const after = rows[0];
      if (!after) throw new ProblemError(409, 'invalid_state', 'The tenant changed meanwhile');
      await recordStep(tx, id, 'upgrade_requested', `user:${identity.user_id}`, {
        ...facts,
        warnings,
      });
      await writeAudit(tx, {
        tenantId: id,
        actorPrincipal: 'User',
        actorId: identity.user_id,
        action: 'tenant.upgrade',
        resourceType: 'tenant',
        resourceId: id,
        before: { chart_version: before.chart_version },
        after: { upgrade_target: target },
        details: { ...facts, warnings },
      });
      return { tenant: after, verdict, warnings } as const;
    });
    if ('refused' in result) {
      // The refusal's audit row is committed; the answer is the problem.
      throw new ProblemError(
        409,
        result.refused === 'blocked' ? 'upgrade_blocked' : 'upgrade_out_of_range',
        result.refused === 'blocked'
          ? `The compatibility matrix blocks tenant package ${target} with svc ${tenancy.systemVersion}`
          : `Tenant package ${target} is outside the range svc ${tenancy.systemVersion} supports`,
        result.facts,
      );
    }
    tenancy.kick();
    return {
      status: 202,
      body: {
        tenant: toJson(result.tenant),
        compatibility: result.verdict,
        warnings: [...result.warnings],
      },
    };
  });

  implement(app, msspTenantContract.impersonate, [anyMssp])(async (c, { params, body }) => {
    const identity = c.get('identity');
    const tenantId = params.tenant_id;
    const tenant = await api.db.withoutTenant((tx) => findTenant(tx, tenantId));
    if (tenant.state === 'soft-deleted') {
      throw new ProblemError(409, 'invalid_state', 'A deleted tenant cannot be entered', {
        state: tenant.state,
      });
    }
    const minted = await api.tokens.mintImpersonation({
      userId: identity.user_id,
      role: identity.role,
      tenantId,
      ...(body.ttl_seconds === undefined ? {} : { ttlSeconds: body.ttl_seconds }),
    });
    const expiresAt = new Date(minted.claims.exp * 1000).toISOString();
    // Written in the tenant's context with acting_as, so the tenant's customers see it (§9.5.5).
    await api.db.withTenant(tenantId, (tx) =>
      writeAudit(tx, {
        tenantId,
        actorPrincipal: 'User',
        actorId: identity.user_id,
        action: 'user.impersonate',
        resourceType: 'tenant',
        resourceId: tenantId,
        actingAs: tenantId,
        details: {
          reason: body.reason,
          jti: minted.claims.jti,
          expires_at: expiresAt,
          role: identity.role,
        },
      }),
    );
    c.header('Cache-Control', 'no-store');
    return {
      status: 200,
      body: { token: minted.token, tenant_id: tenantId, expires_at: expiresAt },
    };
  });

  implement(app, msspTenantContract.audit, [anyMssp])(async (c, { query }) => {
    const identity = c.get('identity');
    // An impersonation token sees only its tenant, and only through RLS.
    const tenantId =
      identity.current_tenant === null
        ? query.tenant_id
        : tenantOfRequest(c, query.tenant_id ?? identity.current_tenant);
    const filters = { ...query, tenant_id: tenantId };
    if (query.format === 'jsonl' || query.format === 'csv') {
      if (identity.role !== 'platform_admin') {
        throw new ProblemError(403, 'forbidden', 'Only platform_admin may export the audit log');
      }
      return { raw: await auditExport(api, identity, filters, query.format) };
    }
    const result = await queryAudit(api, identity, filters);
    return { status: 200, body: result };
  });

  implement(app, msspTenantContract.fleetSummary, [anyMssp])(async () => {
    const summary = await api.system.withSystem('fleet.summary', async (tx) => {
      const states = await tx.query<{ state: string; n: number }>(
        'SELECT state, count(*)::int AS n FROM tenants GROUP BY state',
      );
      const tenants = await tx.query<{
        tenant_id: string;
        slug: string;
        state: TenantRow['state'];
        open_incidents: number;
        pending_reviews: number;
        last_event_at: Date | null;
      }>(
        `SELECT t.id AS tenant_id, t.slug, t.state,
                (SELECT count(*)::int FROM investigations i
                  WHERE i.tenant_id = t.id AND i.status IN ('open', 'triaging', 'awaiting_review')) AS open_incidents,
                (SELECT count(*)::int FROM pending_reviews r
                  WHERE r.tenant_id = t.id AND r.decision IS NULL) AS pending_reviews,
                (SELECT max(e.occurred_at) FROM events e WHERE e.tenant_id = t.id) AS last_event_at
           FROM tenants t
          WHERE t.state <> 'soft-deleted'
          ORDER BY t.slug`,
      );
      return {
        tenants_by_state: Object.fromEntries(states.rows.map((r) => [r.state, r.n])),
        tenants: tenants.rows.map((r) => ({
          ...r,
          last_event_at: r.last_event_at?.toISOString() ?? null,
        })),
      };
    });
    return { status: 200, body: summary };
  });

  implement(app, msspTenantContract.tenantEvents, [anyMssp])(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    await api.db.withoutTenant((tx) => findTenant(tx, tenantId));
    return { raw: await streamTenantEvents(c, api, tenantId) };
  });

  return app;
}
