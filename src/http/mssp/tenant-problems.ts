import { ClusterUnavailableError } from '../../cluster/secrets.ts';
import { ConfigInvalidError } from '../../domains/tenants/tenant-config.ts';
import { IllegalTransitionError, TenantBusyError } from '../../domains/tenants/tenant-lifecycle.ts';
import {
  ChartVersionUnknownError,
  InvalidStateError,
  SlugTakenError,
  TenancyUnavailableError,
  TenantNotFoundError,
  UpgradeInProgressError,
  UpgradeRefusedError,
} from '../../domains/tenants/tenant-types.ts';
import { ProblemError } from '../problem.ts';

/** The refusals of the state machine and of a missing or contended tenant. */
function stateProblem(error: unknown): ProblemError | undefined {
  if (error instanceof TenantNotFoundError) {
    return new ProblemError(404, 'tenant_not_found', 'No such tenant');
  }
  if (error instanceof TenantBusyError) return new ProblemError(409, 'tenant_busy', error.message);
  if (error instanceof IllegalTransitionError) {
    return new ProblemError(409, 'invalid_state', error.message, {
      state: error.state ?? null,
      trigger: error.trigger,
    });
  }
  if (error instanceof InvalidStateError) {
    const extra = error.state === undefined ? {} : { state: error.state };
    return new ProblemError(409, 'invalid_state', error.message, extra);
  }
  return undefined;
}

/** The refusals of a creation or an upgrade request. */
function requestProblem(error: unknown): ProblemError | undefined {
  if (error instanceof SlugTakenError) return new ProblemError(409, 'slug_taken', error.message);
  if (error instanceof ConfigInvalidError) {
    return new ProblemError(400, 'validation_failed', 'Request body failed validation', {
      errors: error.errors,
    });
  }
  // Nothing was kept (the transaction rolled back): the same request can be sent again.
  if (error instanceof ClusterUnavailableError) {
    return new ProblemError(503, error.code, error.message);
  }
  if (error instanceof TenancyUnavailableError) {
    return new ProblemError(503, 'cluster_unavailable', error.message);
  }
  if (error instanceof ChartVersionUnknownError) {
    return new ProblemError(422, 'chart_version_unknown', error.message, {
      available: error.available,
    });
  }
  if (error instanceof UpgradeInProgressError) {
    return new ProblemError(409, 'upgrade_in_progress', error.message, {
      upgrade_target: error.upgradeTarget,
    });
  }
  if (error instanceof UpgradeRefusedError) {
    const code = error.verdict === 'blocked' ? 'upgrade_blocked' : 'upgrade_out_of_range';
    return new ProblemError(409, code, error.message, { ...error.facts });
  }
  return undefined;
}

/** Rethrows a tenants-domain error as its problem+json (contracts/mssp.ts); others unchanged. */
export function tenantProblem(error: unknown): never {
  throw stateProblem(error) ?? requestProblem(error) ?? error;
}
