import { Hono } from 'hono';
import { msspConfigContract as contract } from '../../../contracts/mssp.ts';
import { MSSP_ROLES } from '../../auth/identity.ts';
import { ConfigInvalidError } from '../../domains/tenants/tenant-config.ts';
import {
  ConfigNotRecordedError,
  type ConfigView,
  ImmutableFieldError,
  RevisionConflictError,
  RevisionPendingError,
  type RevisionView,
  type TenantConfigService,
} from '../../domains/tenants/tenant-config-service.ts';
import { implement } from '../contract.ts';
import { DEFAULT_LIMIT } from '../cursor.ts';
import { requireRole, tenantOfRequest } from '../guards.ts';
import { ProblemError } from '../problem.ts';
import { tenantProblem } from './tenant-problems.ts';

function revisionJson(r: RevisionView) {
  return {
    revision: r.revision,
    outcome: r.outcome,
    error: r.error,
    actor: r.actor,
    requested_at: r.requestedAt.toISOString(),
    completed_at: r.completedAt?.toISOString() ?? null,
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

/** A revision change's refusals as problem+json (docs/errors.md); the rest as for tenants. */
function configProblem(error: unknown): never {
  if (error instanceof ImmutableFieldError)
    throw new ProblemError(422, 'immutable_field', error.message, { errors: error.errors });
  if (error instanceof ConfigInvalidError)
    throw new ProblemError(422, 'config_invalid', 'The configuration cannot be used', {
      errors: error.errors,
    });
  if (error instanceof RevisionConflictError)
    throw new ProblemError(409, 'revision_conflict', error.message, {
      expected_revision: error.expected,
      revision: error.applied,
    });
  if (error instanceof ConfigNotRecordedError)
    throw new ProblemError(404, 'config_not_found', error.message);
  if (error instanceof RevisionPendingError)
    throw new ProblemError(409, 'revision_pending', error.message, {
      pending_revision: error.pending,
    });
  return tenantProblem(error);
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

/** `/api/mssp/tenants/{tenant_id}/config` and its revisions (issue 15, spec §6.2). */
export function configRoutes(config: TenantConfigService): Hono {
  const app = new Hono();

  implement(app, contract.getConfig, [requireRole(...MSSP_ROLES)])(async (c, { params }) => {
    const tenantId = tenantOfRequest(c, params.tenant_id);
    return { status: 200, body: viewJson(await config.read(tenantId).catch(configProblem)) };
  });

  implement(app, contract.putConfig, [requireRole('platform_admin', 'mssp_admin')])(
    async (c, { params, body }) => {
      const tenantId = tenantOfRequest(c, params.tenant_id);
      const result = await config.update(c.get('identity'), tenantId, body).catch(configProblem);
      return result.changed
        ? { status: 202, body: viewJson(result.view) }
        : { status: 200, body: viewJson(result.view) };
    },
  );

  implement(app, contract.listConfigRevisions, [requireRole(...MSSP_ROLES)])(
    async (c, { params, query }) => {
      const tenantId = tenantOfRequest(c, params.tenant_id);
      const before = decodeCursor(query.cursor);
      const page = await config
        .revisions(tenantId, { before, limit: query.limit ?? DEFAULT_LIMIT })
        .catch(tenantProblem);
      return {
        status: 200,
        body: {
          items: page.items.map(revisionJson),
          next_cursor: page.next === null ? null : encodeCursor(page.next),
        },
      };
    },
  );

  return app;
}
