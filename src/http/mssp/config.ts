import { Hono } from 'hono';
import { msspConfigContract as contract } from '../../../contracts/mssp.ts';
import type {
  ConfigView,
  RevisionView,
  TenantConfigService,
} from '../../domains/tenants/tenant-config-service.ts';
import { implement } from '../contract.ts';
import { DEFAULT_LIMIT } from '../cursor.ts';
import { tenantOfRequest } from '../guards.ts';
import { ProblemError } from '../problem.ts';

function revisionJson(r: RevisionView) {
  return {
    revision: r.revision,
    outcome: r.outcome,
    error: r.error,
    actor: r.actor,
    requested_at: r.requestedAt,
    completed_at: r.completedAt,
    config: r.config as never,
  };
}

function viewJson(v: ConfigView) {
  return {
    tenant_id: v.tenantId,
    revision: v.revision,
    config: v.config as never,
    pending: v.pending ? revisionJson(v.pending) : null,
  };
}

/**
 * The revisions cursor: the last revision number of the page, for this list only. Only the
 * exact bytes this API issues are accepted.
 */
const LIST = 'config-revisions';
const encodeCursor = (revision: number) =>
  Buffer.from(JSON.stringify([LIST, revision])).toString('base64url');

function decodeCursor(cursor: string | undefined): number | null {
  if (cursor === undefined) return null;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  const revision = Array.isArray(value) && value[0] === LIST ? value[1] : undefined;
  if (
    typeof revision !== 'number' ||
    !Number.isInteger(revision) ||
    revision < 1 ||
    revision > 2_147_483_647 ||
    encodeCursor(revision) !== cursor
  )
    throw new ProblemError(400, 'invalid_cursor', 'The cursor is not one this API issued');
  return revision;
}

/** `/api/mssp/tenants/{tenant_id}/config` and its revisions (spec §6.2, docs/operations.md
 * "Configuration revisions"). */
export function configRoutes(config: TenantConfigService): Hono {
  const app = new Hono();

  implement(
    app,
    contract.getConfig,
  )(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    return { status: 200, body: viewJson(await config.read(tenantId)) };
  });

  implement(
    app,
    contract.putConfig,
  )(async (c, { params, body }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const result = await config.update(c.get('identity'), tenantId, body);
    return result.changed
      ? { status: 202, body: viewJson(result.view) }
      : { status: 200, body: viewJson(result.view) };
  });

  implement(
    app,
    contract.listConfigRevisions,
  )(async (c, { params, query }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    const before = decodeCursor(query.cursor);
    const page = await config.revisions(tenantId, {
      before,
      limit: query.limit ?? DEFAULT_LIMIT,
    });
    return {
      status: 200,
      body: {
        items: page.items.map(revisionJson),
        next_cursor: page.next === null ? null : encodeCursor(page.next),
      },
    };
  });

  return app;
}
